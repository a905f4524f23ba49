import { describe, expect, it } from 'vitest';
import { ID_PREFIX } from '@payhooks/contract';
import { newId } from '../../src/ids.ts';

describe('newId (identifiers from a pooled CSPRNG draw)', () => {
  it('gives the kind prefix and 24 base62 characters, never twice, across many pool refills', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 20_000; i++) {
      const id = newId('deliveryAttempt');
      expect(id.startsWith(ID_PREFIX.deliveryAttempt)).toBe(true);
      expect(id.slice(ID_PREFIX.deliveryAttempt.length)).toMatch(/^[0-9A-Za-z]{24}$/);
      seen.add(id);
    }
    expect(seen.size).toBe(20_000);
  });

  it('uses every base62 character about equally (no modulo bias: bytes >= 248 are dropped)', () => {
    const counts = new Map<string, number>();
    const n = 20_000;
    for (let i = 0; i < n; i++) for (const c of newId('event').slice(ID_PREFIX.event.length)) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect(counts.size).toBe(62);
    const expected = (n * 24) / 62;
    for (const [c, k] of counts) expect(Math.abs(k - expected) / expected, c).toBeLessThan(0.08);
  });
});

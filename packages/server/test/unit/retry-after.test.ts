import { describe, expect, it } from 'vitest';
import { RETRY_AFTER_MAX_MS, retryAfterMs } from '../../src/delivery/retry-after.ts';

const NOW = Date.UTC(2026, 10, 28, 12, 0, 0);

describe('Retry-After as a pause', () => {
  it('reads whole seconds and IMF-fixdates, relative to now', () => {
    expect(retryAfterMs('120', NOW)).toBe(120_000);
    expect(retryAfterMs(' 7 ', NOW)).toBe(7_000);
    expect(retryAfterMs('Sat, 28 Nov 2026 12:00:30 GMT', NOW)).toBe(30_000);
  });

  it('caps both forms at the maximum', () => {
    expect(retryAfterMs('86400', NOW)).toBe(RETRY_AFTER_MAX_MS);
    expect(retryAfterMs('9999999999', NOW)).toBe(RETRY_AFTER_MAX_MS);
    expect(retryAfterMs('Sun, 29 Nov 2026 12:00:00 GMT', NOW)).toBe(RETRY_AFTER_MAX_MS);
  });

  it('ignores garbage, zero, the past and the obsolete date forms', () => {
    for (const v of [
      undefined,
      null,
      '',
      'soon',
      '-5',
      '1.5',
      '1e3',
      '0',
      '0x10',
      'Sat, 28 Nov 2026 11:59:00 GMT',
      'Sat, 28 Nov 2026 12:00:00 GMT',
      'Saturday, 28-Nov-26 12:00:30 GMT',
      'Sat Nov 28 12:00:30 2026',
      'Sat, 28 Nov 2026 12:00:30 +0000',
      'Xyz, 28 Nov 2026 12:00:30 GMT',
    ])
      expect(retryAfterMs(v, NOW), String(v)).toBeNull();
  });
});

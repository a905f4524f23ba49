import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DISPLAY_PREFIX_LENGTH, KEY_PREFIX, environmentOfKey, generateApiKey, hashApiKey } from '../../src/security/api-keys.ts';

describe('API keys', () => {
  it('sk_live_ / sk_test_ + 32 base62 characters, different every time', () => {
    const live = generateApiKey('live');
    const sandbox = generateApiKey('sandbox');
    expect(live).toMatch(/^sk_live_[0-9A-Za-z]{32}$/);
    expect(sandbox).toMatch(/^sk_test_[0-9A-Za-z]{32}$/);
    expect(new Set(Array.from({ length: 50 }, () => generateApiKey('live'))).size).toBe(50);
    expect(KEY_PREFIX).toEqual({ live: 'sk_live_', sandbox: 'sk_test_' });
  });

  it('the display prefix is the key type and 4 characters: enough to recognise, far from enough to use', () => {
    expect(DISPLAY_PREFIX_LENGTH).toBe(12);
    expect(generateApiKey('live').slice(0, DISPLAY_PREFIX_LENGTH)).toMatch(/^sk_live_[0-9A-Za-z]{4}$/);
  });

  it('stores the SHA-256 of the key, hex', () => {
    const key = 'sk_test_0123456789abcdefghijABCDEFGHIJ01';
    expect(hashApiKey(key)).toBe(createHash('sha256').update(key).digest('hex'));
    expect(hashApiKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hashApiKey(key)).not.toBe(hashApiKey(`${key}x`));
  });

  it.each([
    ['sk_live_abc', 'live'],
    ['sk_test_abc', 'sandbox'],
    ['sk_live_', 'live'],
    ['pk_live_abc', null],
    ['sk_tes_abc', null],
    ['SK_LIVE_abc', null],
    ['', null],
    ['x sk_live_abc', null],
  ])('environmentOfKey(%j) = %j', (key, env) => {
    expect(environmentOfKey(key)).toBe(env);
  });
});

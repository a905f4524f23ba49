import { createHash } from 'node:crypto';
import { randomBase62 } from '../ids.ts';
import type { Environment } from '../db/schema.ts';

export const KEY_PREFIX: Record<Environment, string> = { live: 'sk_live_', sandbox: 'sk_test_' };

/** Characters of a key kept in clear to recognise it (`sk_live_AbCd`). */
export const DISPLAY_PREFIX_LENGTH = 12;

/** A new API key: `sk_live_` or `sk_test_` + 32 base62 characters (~190 bits). */
export function generateApiKey(environment: Environment): string {
  return KEY_PREFIX[environment] + randomBase62(32);
}

/**
 * Keys are high-entropy random strings, so a single SHA-256 is enough (no password stretching
 * needed) and lets authentication look the key up by hash in one indexed query; the lookup
 * compares hashes inside the database, so no secret byte is compared in JavaScript.
 */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export function environmentOfKey(key: string): Environment | null {
  if (key.startsWith(KEY_PREFIX.live)) return 'live';
  if (key.startsWith(KEY_PREFIX.sandbox)) return 'sandbox';
  return null;
}

import { randomBytes } from 'node:crypto';
import { ID_PREFIX, SECRET_PREFIX } from '@payhooks/contract';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `length` characters of base62, unbiased (rejection sampling over random bytes). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += ALPHABET[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export type IdKind = keyof typeof ID_PREFIX;

/** A new identifier such as `we_3kTMd…` (24 base62 characters, ~143 bits). */
export function newId(kind: IdKind): string {
  return ID_PREFIX[kind] + randomBase62(24);
}

/** A signing secret: `whsec_` + 32 random bytes, base64url (spec 2.3). */
export function newSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64url');
}

import { randomBytes, randomFillSync } from 'node:crypto';
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

/**
 * Random bytes for identifiers, drawn 4 KiB at a time: a worker makes an id per attempt, and a
 * `randomBytes` call per id (a trip into OpenSSL for 48 bytes) was 5 % of its CPU. The bytes
 * are the same CSPRNG's; only identifiers use this pool, never a secret (API keys, passwords and
 * signing secrets call `randomBytes` themselves), so no secret's bytes sit in it.
 */
const ID_POOL = Buffer.allocUnsafe(4096);
let idPoolAt = ID_POOL.length;

function idByte(): number {
  if (idPoolAt === ID_POOL.length) {
    randomFillSync(ID_POOL);
    idPoolAt = 0;
  }
  return ID_POOL[idPoolAt++]!;
}

export type IdKind = keyof typeof ID_PREFIX;

/** A new identifier such as `we_3kTMd…` (24 base62 characters, ~143 bits), unbiased like randomBase62. */
export function newId(kind: IdKind): string {
  let out = ID_PREFIX[kind];
  for (let n = 0; n < 24; ) {
    const byte = idByte();
    if (byte < 248) {
      out += ALPHABET[byte % 62];
      n++;
    }
  }
  return out;
}

/** A signing secret: `whsec_` + 32 random bytes, base64url (spec 2.3). */
export function newSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64url');
}

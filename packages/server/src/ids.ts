import { randomBytes, randomFillSync } from 'node:crypto';
import { ID_PREFIX, SECRET_PREFIX } from '@payhooks/contract';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `length` characters of base62 from `nextByte`, unbiased: bytes of 248 and over are skipped. */
function base62(length: number, nextByte: () => number): string {
  let out = '';
  while (out.length < length) {
    const byte = nextByte();
    if (byte < 248) out += ALPHABET[byte % 62];
  }
  return out;
}

/** `length` characters of base62 from fresh CSPRNG bytes (secrets and passwords use this). */
export function randomBase62(length: number): string {
  const bytes = randomBytes(length * 2);
  let at = 0;
  return base62(length, () => (at < bytes.length ? bytes[at++]! : (randomBytes(1)[0] as number)));
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

/** Prefixes of the server's own objects, which no receiver sees (the contract's are above them). */
const SERVER_ID_PREFIX = {
  auditEvent: 'aud_',
  healthNotice: 'hn_',
  portalUser: 'usr_',
} as const;

const PREFIXES = { ...ID_PREFIX, ...SERVER_ID_PREFIX };

export type IdKind = keyof typeof PREFIXES;

/** A new identifier such as `we_3kTMd…` (24 base62 characters, ~143 bits), unbiased like randomBase62. */
export function newId(kind: IdKind): string {
  return PREFIXES[kind] + base62(24, idByte);
}

/**
 * A signing secret (spec 2.3): `whsec_` + 44 characters drawn uniformly from A–Z a–z 0–9 (about
 * 262 bits). Such a string is canonical base64 in both alphabets, of 33 bytes with no padding,
 * so the Standard Webhooks libraries (which base64-decode what follows `whsec_` to get their key)
 * all accept it and agree on the key; the contract's HMAC keys the whole string as before.
 * Secrets made before Standard Webhooks support were `whsec_` + base64url of 32 bytes, which
 * those libraries refuse (docs/decisions/standard-webhooks-headers.md).
 */
export function newSigningSecret(): string {
  return SECRET_PREFIX + randomBase62(44);
}

import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { AppError } from '../errors.ts';
import { randomBase62 } from '../ids.ts';

/**
 * Portal passwords hashed with scrypt (node:crypto), stored as `scrypt$N$r$p$salt$hash`
 * (base64url). The parameters travel with the hash, so they can be raised later without
 * invalidating existing passwords. N=2^15, r=8, p=1 is OWASP's scrypt recommendation.
 */
export interface ScryptCost {
  N: number;
  r: number;
  p: number;
}
/**
 * What every payhooks process hashes with. No setting lowers it; only code that builds its own
 * service context can pass another cost (the test suite, which creates a portal user for every
 * Platform it makes and would otherwise spend a minute of CPU on scrypt alone).
 */
export const PASSWORD_COST: Readonly<ScryptCost> = { N: 1 << 15, r: 8, p: 1 };
const KEY_LENGTH = 32;

function derive(password: string, salt: Buffer, params: ScryptCost): Promise<Buffer> {
  const options: ScryptOptions = { ...params, maxmem: 128 * params.N * params.r * 2 };
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFC'), salt, KEY_LENGTH, options, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

export async function hashPassword(password: string, cost: ScryptCost = PASSWORD_COST): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, cost);
  return `scrypt$${cost.N}$${cost.r}$${cost.p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/** Constant-time comparison of the derived key; a malformed stored hash never verifies. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const m = /^scrypt\$(\d+)\$(\d+)\$(\d+)\$([\w-]+)\$([\w-]+)$/.exec(stored);
  if (!m) return false;
  const expected = Buffer.from(m[5]!, 'base64url');
  const key = await derive(password, Buffer.from(m[4]!, 'base64url'), { N: Number(m[1]), r: Number(m[2]), p: Number(m[3]) });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/**
 * A stored hash of a random password at `cost`: unknown emails are checked against it, so they
 * cost the same time as the users' own hashes.
 */
const decoys = new Map<string, Promise<string>>();
export function decoyHash(cost: ScryptCost = PASSWORD_COST): Promise<string> {
  const key = `${cost.N}$${cost.r}$${cost.p}`;
  let decoy = decoys.get(key);
  if (!decoy) {
    decoy = hashPassword(randomBase62(24), cost);
    decoys.set(key, decoy);
  }
  return decoy;
}

/** A generated password: 20 base62 characters (~119 bits), shown once. */
export function generatePassword(): string {
  return randomBase62(20);
}

/** Shortest password a user may choose (NIST SP 800-63B asks for at least 8; we ask for 12). */
export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 200;

/** A password a user chose (invitation, change, reset): long enough, not the email. */
export function checkNewPassword(password: string, email: string, param = 'password'): void {
  const length = [...password.normalize('NFC')].length;
  if (length < MIN_PASSWORD_LENGTH || length > MAX_PASSWORD_LENGTH) {
    throw new AppError(
      'invalid_request',
      'password_too_short',
      `Choose a password of ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters (a few words make a good one).`,
      { param },
    );
  }
  if (password.trim().toLowerCase() === email.trim().toLowerCase()) {
    throw new AppError('invalid_request', 'password_is_email', 'Choose a password other than your email address.', { param });
  }
}

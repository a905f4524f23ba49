import { createHash, randomInt, timingSafeEqual } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';

/**
 * Time-based one-time passwords (RFC 6238) through the `otpauth` library: 6 digits, 30-second
 * steps, HMAC-SHA1, the parameters every authenticator app takes from an `otpauth://` URI.
 * A code is accepted one step either side of now (clock drift) and only once: the step it
 * matched is stored, and a code for that step or an earlier one is refused, so a code read over
 * the shoulder can't be replayed within its window.
 */
export const TOTP_DIGITS = 6;
export const TOTP_PERIOD_S = 30;
const TOTP_WINDOW = 1;
const ISSUER = 'payhooks';

function totp(secretBase32: string, label = ''): TOTP {
  return new TOTP({
    issuer: ISSUER,
    label,
    algorithm: 'SHA1',
    digits: TOTP_DIGITS,
    period: TOTP_PERIOD_S,
    secret: Secret.fromBase32(secretBase32),
  });
}

/** The additional data a sealed TOTP secret is bound to: its user (a ciphertext moved to another user won't open). */
export const totpAad = (userId: string) => `totp:${userId}`;

/** A new shared secret: 20 random bytes (RFC 4226's recommended size), base32 as apps show it. */
export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32;
}

/** The `otpauth://totp/…` URI an authenticator app scans (as a QR code) or takes pasted. */
export function totpUri(secretBase32: string, account: string): string {
  return totp(secretBase32, account).toString();
}

/** The code for `at` (tests and the enrolment check of the page's own examples). */
export function totpCode(secretBase32: string, at: Date): string {
  return totp(secretBase32).generate({ timestamp: at.getTime() });
}

/**
 * The step `code` matches at `now` (within one step either side), or null when it matches none
 * or matches a step at or before `lastStep` (already used).
 */
export function verifyTotp(secretBase32: string, code: string, now: Date, lastStep: number | null): number | null {
  const token = code.replace(/\s+/g, '');
  if (!/^\d{6}$/.test(token)) return null;
  const delta = totp(secretBase32).validate({ token, timestamp: now.getTime(), window: TOTP_WINDOW });
  if (delta === null) return null;
  const step = Math.floor(now.getTime() / 1000 / TOTP_PERIOD_S) + delta;
  if (lastStep !== null && step <= lastStep) return null;
  return step;
}

/** Recovery codes issued at enrolment: each signs in once in place of a TOTP code. */
export const RECOVERY_CODE_COUNT = 10;
const RECOVERY_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789'; // no 0/o, 1/l/i: read off paper

/** Ten codes of 10 characters (about 49 bits each), shown as `xxxxx-xxxxx`, once. */
export function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODE_COUNT }, () => {
    const chars = Array.from({ length: 10 }, () => RECOVERY_ALPHABET[randomInt(RECOVERY_ALPHABET.length)]).join('');
    return `${chars.slice(0, 5)}-${chars.slice(5)}`;
  });
}

/** What is stored of a recovery code: the SHA-256 of its letters (a slow hash adds nothing at this entropy). */
export function hashRecoveryCode(code: string): string {
  const normalised = code.toLowerCase().replace(/[^a-z0-9]/g, '');
  return createHash('sha256').update(`payhooks recovery code\0${normalised}`).digest('hex');
}

/** Looks like a recovery code rather than a TOTP code (letters present, or the dash form). */
export function isRecoveryCode(code: string): boolean {
  return /[a-z]/i.test(code) || code.replace(/\s+/g, '').length > TOTP_DIGITS;
}

/** Constant-time equality of two hex digests of the same length. */
export function sameDigest(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && timingSafeEqual(x, y);
}

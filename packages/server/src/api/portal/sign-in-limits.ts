import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../errors.ts';
import type { SecretBox } from '../../security/encryption.ts';
import { counterKey, type WindowCounters } from '../window-counters.ts';
import { cookieOptions } from './security.ts';

/**
 * Limits on portal sign-in that keep guessing slow without letting a stranger lock a user out
 * (OWASP's device cookies; docs/decisions/portal-sign-in-limits.md).
 *
 * A browser where a user signed in before holds a device cookie for that user's email: its
 * attempts for that email are counted per device only, so an attacker elsewhere who exhausts
 * the email's allowance does not lock it out. Attempts without a valid device cookie are
 * counted per address, per (email, address), and per email: the last bounds how many guesses
 * for one account are checked a minute, however many addresses an attacker has.
 *
 * Each limit is a one-minute window. Every attempt counts, whether its password is right or not.
 * The counters are shared by every API process (window-counters.ts).
 */
export const SIGN_IN_LIMITS = {
  /** A browser that signed in as this email before. */
  perDevice: 10,
  /** Every attempt from one client address without a device cookie for the email it tries. */
  perAddress: 30,
  /** One email from one address. */
  perEmailAndAddress: 10,
  /** One email from every address together: about 20 guesses checked a minute at most. */
  perEmail: 20,
} as const;

export const SIGN_IN_WINDOW_MS = 60_000;

/** The device cookie: sent only to the sign-in route, for half a year. */
export const DEVICE_COOKIE = 'payhooks_device';
const DEVICE_COOKIE_PATH = '/portal/api/session';
const DEVICE_COOKIE_MAX_AGE_S = 180 * 86_400;
const DEVICE_TAG = 'portal device cookie';

export class SignInLimiter {
  constructor(
    private readonly counters: WindowCounters,
    private readonly secrets: SecretBox,
  ) {}

  /** The device id the request's cookie proves for `email`, or null. */
  device(req: FastifyRequest, email: string): string | null {
    const raw = req.cookies[DEVICE_COOKIE];
    if (typeof raw !== 'string') return null;
    const [nonce, tag, ...rest] = raw.split('.');
    if (!nonce || !tag || rest.length || nonce.length !== 22) return null;
    return this.secrets.verifyTag(DEVICE_TAG, `${email}\0${nonce}`, tag) ? nonce : null;
  }

  /**
   * Counts this attempt at a password or a code for `email` (sign-in, its two-factor step, a
   * password change, turning two-factor off); throws a 429 with Retry-After when one of its
   * limits is spent.
   */
  async check(req: FastifyRequest, email: string): Promise<void> {
    const device = this.device(req, email);
    await this.spend(
      device
        ? [[counterKey('sign-in-device', device), SIGN_IN_LIMITS.perDevice]]
        : [
            [counterKey('sign-in-address', req.ip), SIGN_IN_LIMITS.perAddress],
            [counterKey('sign-in-email-address', email, req.ip), SIGN_IN_LIMITS.perEmailAndAddress],
            [counterKey('sign-in-email', email), SIGN_IN_LIMITS.perEmail],
          ],
    );
  }

  /**
   * Counts a use of a single-use link's form (invitation, password reset, the payment service's
   * link) against the client's address, with the same allowance as sign-in: the tokens can't be
   * guessed (256 bits), but the forms get the same protection as the password form.
   */
  async checkAddress(req: FastifyRequest): Promise<void> {
    await this.spend([[counterKey('token-form-address', req.ip), SIGN_IN_LIMITS.perAddress]]);
  }

  private async spend(limits: Array<[string, number]>): Promise<void> {
    // In order, stopping at the first spent limit: a blocked address no longer spends the
    // email's shared allowance.
    for (const [key, max] of limits) {
      const { count, resetInMs } = await this.counters.hit(key, SIGN_IN_WINDOW_MS);
      if (count > max) {
        const wait = Math.max(1, Math.ceil(resetInMs / 1000));
        throw new AppError('rate_limited', 'rate_limited', `Too many sign-in attempts; retry after ${wait} s.`, {
          headers: { 'retry-after': String(wait) },
        });
      }
    }
  }

  /** After a successful sign-in: this browser is now a known device for `email`. */
  remember(req: FastifyRequest, reply: FastifyReply, email: string): void {
    const nonce = this.device(req, email) ?? randomBytes(16).toString('base64url');
    const value = `${nonce}.${this.secrets.tag(DEVICE_TAG, `${email}\0${nonce}`)}`;
    void reply.setCookie(DEVICE_COOKIE, value, {
      ...cookieOptions(req),
      path: DEVICE_COOKIE_PATH,
      sameSite: 'strict',
      maxAge: DEVICE_COOKIE_MAX_AGE_S,
    });
  }
}

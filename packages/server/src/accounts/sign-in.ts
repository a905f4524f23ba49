import { and, eq, isNull } from 'drizzle-orm';
import type { Environment } from '../db/schema.ts';
import { platforms, portalRecoveryCodes, portalUsers } from '../db/schema.ts';
import { AppError } from '../errors.ts';
import type { RequestOrigin } from '../scope.ts';
import { type AccountDeps, requirePasswordSignIn, sessionSubject } from './deps.ts';
import { decoyHash, verifyPassword } from './passwords.ts';
import type { PortalSession } from './sessions.ts';
import { countAttempt, issueToken, peekToken, useToken } from './tokens.ts';
import { hashRecoveryCode, isRecoveryCode, totpAad, verifyTotp } from './two-factor.ts';
import { findUserById, findUsersByEmail } from './users.ts';

/** A two-factor challenge lasts five minutes and allows five wrong codes. */
export const TWO_FACTOR_CHALLENGE_TTL_MS = 5 * 60_000;
export const TWO_FACTOR_MAX_ATTEMPTS = 5;

export type SignInResult =
  | { kind: 'session'; token: string; session: PortalSession }
  | { kind: 'two_factor'; challenge: string; expiresAt: Date; email: string };

const invalidCredentials = () => new AppError('authentication', 'invalid_credentials', 'Incorrect email or password.');

/**
 * Password sign-in, its second step when the user has two-factor sign-in on, signing out and
 * switching environment. Every attempt on a known account is in its Platform's audit trail,
 * refused ones included; limits on guessing are the HTTP layer's (api/portal/sign-in-limits.ts).
 */
export class SignIn {
  constructor(private readonly deps: AccountDeps) {}

  async password(email: string, password: string, origin: RequestOrigin): Promise<SignInResult> {
    requirePasswordSignIn(this.deps);
    const { db, clock, audit, passwordCost } = this.deps;
    // One account per Platform the email is on (migration 0032); the password says which. Every
    // one is checked, so the time doesn't say which matched; an unknown email costs the same
    // scrypt as a wrong password, and gets the same answer. Passwords differ between an email's
    // accounts (users.ts checkPasswordNotReused); were two alike, the oldest wins.
    const accounts = await findUsersByEmail(db, email);
    let user: (typeof accounts)[number] | undefined;
    if (accounts.length === 0) await verifyPassword(password, await decoyHash(passwordCost));
    for (const account of accounts) if ((await verifyPassword(password, account.passwordHash)) && !user) user = account;
    if (!user) {
      for (const account of accounts)
        await audit.record(
          db,
          {
            platformId: account.platformId,
            environment: null,
            actor: { type: 'user' as const, id: account.id, email: account.email, name: account.name },
            origin,
          },
          {
            action: 'session.create',
            resourceType: 'portal_session',
            resourceId: null,
            outcome: 'failed',
            errorCode: 'invalid_credentials',
            changes: { method: 'password' },
          },
        );
      throw invalidCredentials();
    }
    if (user.totpEnabledAt) {
      const { token, row } = await issueToken(db, {
        purpose: 'two_factor',
        platformId: user.platformId,
        userId: user.id,
        now: clock.now(),
        ttlMs: TWO_FACTOR_CHALLENGE_TTL_MS,
      });
      return { kind: 'two_factor', challenge: token, expiresAt: row.expiresAt, email: user.email };
    }
    return this.start(user.id, user.platformId, origin, 'password');
  }

  /** The user's email behind an open challenge (the limits count per email), or null. */
  async challengeEmail(challenge: string): Promise<string | null> {
    const row = await peekToken(this.deps.db, 'two_factor', challenge, this.deps.clock.now());
    if (!row?.userId) return null;
    return (await findUserById(this.deps.db, row.userId))?.email ?? null;
  }

  /** The second step: a TOTP code (each accepted once) or an unused recovery code. */
  async twoFactor(challenge: string, code: string, origin: RequestOrigin): Promise<SignInResult> {
    requirePasswordSignIn(this.deps);
    const { db, clock, audit, secrets } = this.deps;
    const now = clock.now();
    const expired = () =>
      new AppError(
        'authentication',
        'two_factor_challenge_expired',
        'Sign in again: the time to enter a code ran out, or too many were wrong.',
      );
    const open = await peekToken(db, 'two_factor', challenge, now);
    const user = open?.userId ? await findUserById(db, open.userId) : undefined;
    if (!open || !user?.totpSecretCiphertext || !user.totpEnabledAt) throw expired();
    const subject = {
      platformId: user.platformId,
      environment: null,
      actor: { type: 'user' as const, id: user.id, email: user.email, name: user.name },
      origin,
    };
    let method: 'totp' | 'recovery_code' | null = null;
    await db.transaction(async (tx) => {
      if (isRecoveryCode(code)) {
        const used = await tx
          .update(portalRecoveryCodes)
          .set({ usedAt: now })
          .where(
            and(
              eq(portalRecoveryCodes.userId, user.id),
              eq(portalRecoveryCodes.codeHash, hashRecoveryCode(code)),
              isNull(portalRecoveryCodes.usedAt),
            ),
          )
          .returning({ userId: portalRecoveryCodes.userId });
        if (used.length) method = 'recovery_code';
      } else {
        const step = verifyTotp(secrets.decrypt(user.totpSecretCiphertext!, totpAad(user.id)), code, now, user.totpLastStep);
        if (step !== null) {
          // Conditional on the step stored, so two concurrent uses of one code can't both pass.
          const moved = await tx
            .update(portalUsers)
            .set({ totpLastStep: step })
            .where(
              and(
                eq(portalUsers.id, user.id),
                user.totpLastStep === null ? isNull(portalUsers.totpLastStep) : eq(portalUsers.totpLastStep, user.totpLastStep),
              ),
            )
            .returning({ id: portalUsers.id });
          if (moved.length) method = 'totp';
        }
      }
      if (method && !(await useToken(tx, 'two_factor', challenge, now))) method = null;
    });
    if (!method) {
      const attempts = await countAttempt(db, challenge, TWO_FACTOR_MAX_ATTEMPTS, now);
      await audit.record(db, subject, {
        action: 'session.create',
        resourceType: 'portal_session',
        resourceId: null,
        outcome: 'failed',
        errorCode: 'invalid_two_factor_code',
        changes: { method: 'password+two_factor' },
      });
      if (attempts >= TWO_FACTOR_MAX_ATTEMPTS) throw expired();
      throw new AppError(
        'authentication',
        'invalid_two_factor_code',
        `That code is not right (or was used already). ${TWO_FACTOR_MAX_ATTEMPTS - attempts} tries left.`,
        { param: 'code' },
      );
    }
    return this.start(user.id, user.platformId, origin, `password+${method}`);
  }

  private async start(userId: string, platformId: string, origin: RequestOrigin, method: string): Promise<SignInResult> {
    const { db, audit, sessions } = this.deps;
    return db.transaction(async (tx) => {
      const [platform] = await tx.select({ required: platforms.requireTwoFactor }).from(platforms).where(eq(platforms.id, platformId));
      const [user] = await tx.select({ enabled: portalUsers.totpEnabledAt }).from(portalUsers).where(eq(portalUsers.id, userId));
      const needsTwoFactorSetup = platform?.required === true && !user?.enabled;
      const { token, session } = await sessions.create({ kind: 'password', userId, platformId, needsTwoFactorSetup }, tx);
      await audit.record(tx, sessionSubject(session, origin), {
        action: 'session.create',
        resourceType: 'portal_session',
        resourceId: null,
        changes: { method, ...(needsTwoFactorSetup ? { two_factor_setup_required: true } : {}) },
      });
      return { kind: 'session' as const, token, session };
    });
  }

  async signOut(session: PortalSession, origin: RequestOrigin): Promise<void> {
    await this.deps.db.transaction(async (tx) => {
      await this.deps.sessions.destroy(session, tx);
      const environment = session.kind === 'embedded' ? session.environment : null;
      await this.deps.audit.record(tx, sessionSubject(session, origin, environment), {
        action: 'session.delete',
        resourceType: 'portal_session',
        resourceId: null,
      });
    });
  }

  /** Password sessions switch between sandbox and live; an embedded one is the environment its link named. */
  async switchEnvironment(session: PortalSession, environment: Environment, origin: RequestOrigin): Promise<void> {
    if (session.kind === 'embedded' && environment !== session.environment)
      throw new AppError(
        'forbidden',
        'environment_locked',
        `This session was opened for ${session.environment}: open Webhooks in ${environment} from your dashboard.`,
        { param: 'environment' },
      );
    await this.deps.db.transaction(async (tx) => {
      await this.deps.sessions.setEnvironment(session, environment, tx);
      await this.deps.audit.record(tx, sessionSubject(session, origin, environment), {
        action: 'session.switch_environment',
        resourceType: 'portal_session',
        resourceId: null,
        changes: { environment },
      });
    });
  }
}

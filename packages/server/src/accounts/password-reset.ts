import { eq } from 'drizzle-orm';
import type { AuditSubject } from '../audit/trail.ts';
import { portalUsers } from '../db/schema.ts';
import { AppError } from '../errors.ts';
import type { RequestOrigin } from '../scope.ts';
import { type AccountDeps, portalLink, requirePasswordSignIn } from './deps.ts';
import { clearTwoFactor } from './own-account.ts';
import { checkNewPassword, hashPassword } from './passwords.ts';
import { endOpenTokens, issueToken, peekToken, useToken } from './tokens.ts';
import { checkPasswordNotReused, findUserById, userByEmail } from './users.ts';

/** A reset link works once, for an hour. */
export const PASSWORD_RESET_TTL_MS = 3_600_000;

/**
 * An operator resets a user's password from the CLI (`payhooks admin reset-password`): a
 * single-use link, printed (and mailed when SMTP is set), where the user chooses a new password.
 * Completing it ends every session of the user and every other open reset link of theirs (so do
 * a newer link and a password change under Account); two-factor sign-in, if on, stays on (the
 * operator resets it separately, `payhooks admin reset-two-factor`, for a lost device).
 */
export class PasswordResets {
  constructor(private readonly deps: AccountDeps) {}

  async issue(
    email: string,
    by: Omit<AuditSubject, 'platformId' | 'environment'>,
    platformId?: string,
  ): Promise<{ url: string; expires_at: string; emailed: boolean; user_id: string }> {
    requirePasswordSignIn(this.deps);
    const user = await userByEmail(this.deps.db, email, platformId);
    const { token, row } = await this.deps.db.transaction(async (tx) => {
      // A newer link ends the older ones: only the last one handed out works.
      await endOpenTokens(tx, 'password_reset', user.id, this.deps.clock.now());
      const issued = await issueToken(tx, {
        purpose: 'password_reset',
        platformId: user.platformId,
        userId: user.id,
        email: user.email,
        now: this.deps.clock.now(),
        ttlMs: PASSWORD_RESET_TTL_MS,
      });
      await this.deps.audit.record(
        tx,
        { ...by, platformId: user.platformId, environment: null },
        { action: 'portal_user.password_reset_issue', resourceType: 'portal_user', resourceId: user.id, changes: { email: user.email } },
      );
      return issued;
    });
    const url = portalLink(this.deps, 'reset-password', token);
    const emailed = this.deps.mailer
      ? await this.deps.mailer
          .send({
            to: user.email,
            subject: 'Choose a new payhooks portal password',
            text: `Your operator started a password reset for ${user.email}.\n\nChoose a new password here (the link works once, until ${row.expiresAt.toISOString()}):\n${url}\n`,
          })
          .then(
            () => true,
            () => false,
          )
      : false;
    return { url, expires_at: row.expiresAt.toISOString(), emailed, user_id: user.id };
  }

  async inspect(token: string): Promise<{ email: string; expires_at: string }> {
    requirePasswordSignIn(this.deps);
    const row = await peekToken(this.deps.db, 'password_reset', token, this.deps.clock.now());
    if (!row) throw resetInvalid();
    return { email: row.email!, expires_at: row.expiresAt.toISOString() };
  }

  async complete(token: string, password: string, origin: RequestOrigin): Promise<{ email: string }> {
    requirePasswordSignIn(this.deps);
    const { db, clock, audit, sessions, passwordCost } = this.deps;
    const open = await peekToken(db, 'password_reset', token, clock.now());
    const user = open?.userId ? await findUserById(db, open.userId) : undefined;
    if (!open || !user) throw resetInvalid();
    checkNewPassword(password, user.email);
    await checkPasswordNotReused(db, user.email, password, user.id, passwordCost);
    const hash = await hashPassword(password, passwordCost);
    await db.transaction(async (tx) => {
      if (!(await useToken(tx, 'password_reset', token, clock.now()))) throw resetInvalid();
      await endOpenTokens(tx, 'password_reset', user.id, clock.now());
      await tx.update(portalUsers).set({ passwordHash: hash, passwordChangedAt: clock.now() }).where(eq(portalUsers.id, user.id));
      await sessions.destroyForUser(user.id, tx);
      await audit.record(
        tx,
        {
          platformId: user.platformId,
          environment: null,
          actor: { type: 'user', id: user.id, email: user.email, name: user.name },
          origin,
        },
        { action: 'portal_user.password_reset', resourceType: 'portal_user', resourceId: user.id, changes: { sessions_ended: true } },
      );
    });
    return { email: user.email };
  }

  /** `payhooks admin reset-two-factor`: for a user who lost both their device and their recovery codes. */
  async resetTwoFactor(
    email: string,
    by: Omit<AuditSubject, 'platformId' | 'environment'>,
    platformId?: string,
  ): Promise<{ user_id: string }> {
    const user = await userByEmail(this.deps.db, email, platformId);
    await this.deps.db.transaction(async (tx) => {
      await clearTwoFactor(tx, user.id);
      await this.deps.sessions.destroyForUser(user.id, tx);
      await this.deps.audit.record(
        tx,
        { ...by, platformId: user.platformId, environment: null },
        { action: 'portal_user.two_factor_reset', resourceType: 'portal_user', resourceId: user.id, changes: { email: user.email } },
      );
    });
    return { user_id: user.id };
  }
}

const resetInvalid = () =>
  new AppError(
    'authentication',
    'password_reset_invalid',
    'This reset link has been used or has expired: ask your operator for a new one.',
  );

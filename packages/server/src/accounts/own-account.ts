import { and, count, eq, isNull } from 'drizzle-orm';
import type { Tx } from '../db/client.ts';
import { platforms, portalRecoveryCodes, portalUsers, type PortalUserRow } from '../db/schema.ts';
import { AppError } from '../errors.ts';
import type { RequestOrigin } from '../scope.ts';
import { type AccountDeps, requirePasswordSession, sessionSubject } from './deps.ts';
import { checkNewPassword, hashPassword, verifyPassword } from './passwords.ts';
import type { PortalSession } from './sessions.ts';
import { endOpenTokens } from './tokens.ts';
import { hashRecoveryCode, newRecoveryCodes, newTotpSecret, totpAad, totpUri, verifyTotp } from './two-factor.ts';
import { checkPasswordNotReused, findUserById } from './users.ts';

export interface AccountView {
  object: 'account';
  id: string;
  email: string;
  name: string | null;
  role: PortalUserRow['role'];
  two_factor: { enabled: boolean; required: boolean; recovery_codes_left: number };
  password_changed_at: string | null;
  /** Mail about the Platform's endpoint health (developers and admins; alerts/health-mail.ts). */
  health_mail: boolean;
}

/**
 * What a signed-in portal user does to their own account: change their password (their other
 * sessions end), and turn two-factor sign-in on (TOTP, RFC 6238, with ten recovery codes shown
 * once) or off. Turning it off and new recovery codes ask for the password again.
 */
export class OwnAccount {
  constructor(private readonly deps: AccountDeps) {}

  private async user(session: PortalSession): Promise<PortalUserRow> {
    requirePasswordSession(session);
    const user = await findUserById(this.deps.db, session.userId);
    if (!user) throw new AppError('authentication', 'not_signed_in', 'Sign in to the portal first (your session may have ended).');
    return user;
  }

  private async checkPassword(user: PortalUserRow, password: string, param = 'password'): Promise<void> {
    if (!(await verifyPassword(password, user.passwordHash)))
      throw new AppError('authentication', 'invalid_password', 'That is not your current password.', { param });
  }

  async view(session: PortalSession): Promise<AccountView> {
    const user = await this.user(session);
    const [left] = await this.deps.db
      .select({ n: count() })
      .from(portalRecoveryCodes)
      .where(and(eq(portalRecoveryCodes.userId, user.id), isNull(portalRecoveryCodes.usedAt)));
    const [platform] = await this.deps.db
      .select({ required: platforms.requireTwoFactor })
      .from(platforms)
      .where(eq(platforms.id, user.platformId));
    return {
      object: 'account',
      id: user.id,
      email: user.email,
      name: user.name,
      role: user.role,
      two_factor: {
        enabled: user.totpEnabledAt !== null,
        required: platform?.required === true,
        recovery_codes_left: Number(left?.n ?? 0),
      },
      password_changed_at: user.passwordChangedAt?.toISOString() ?? null,
      health_mail: user.healthMail,
    };
  }

  /** Mail about the Platform's endpoint health to this user (developers and admins get it; on by default). */
  async setHealthMail(session: PortalSession, on: boolean, origin: RequestOrigin): Promise<void> {
    const user = await this.user(session);
    await this.deps.db.transaction(async (tx) => {
      await tx.update(portalUsers).set({ healthMail: on }).where(eq(portalUsers.id, user.id));
      await this.deps.audit.record(tx, sessionSubject(session, origin), {
        action: 'portal_user.health_mail',
        resourceType: 'portal_user',
        resourceId: user.id,
        changes: { health_mail: on },
      });
    });
  }

  async changePassword(session: PortalSession, current: string, next: string, origin: RequestOrigin): Promise<void> {
    const user = await this.user(session);
    await this.checkPassword(user, current, 'current_password');
    checkNewPassword(next, user.email, 'new_password');
    await checkPasswordNotReused(this.deps.db, user.email, next, user.id, this.deps.passwordCost, 'new_password');
    const hash = await hashPassword(next, this.deps.passwordCost);
    await this.deps.db.transaction(async (tx) => {
      await tx.update(portalUsers).set({ passwordHash: hash, passwordChangedAt: this.deps.clock.now() }).where(eq(portalUsers.id, user.id));
      // Anyone else signed in with the old password is signed out; this session goes on. A reset
      // link issued before the change would undo it: it ends too.
      await this.deps.sessions.destroyForUser(user.id, tx, session);
      await endOpenTokens(tx, 'password_reset', user.id, this.deps.clock.now());
      await this.deps.audit.record(tx, sessionSubject(session, origin), {
        action: 'portal_user.password_change',
        resourceType: 'portal_user',
        resourceId: user.id,
        changes: { other_sessions_ended: true },
      });
    });
  }

  /** Starts enrolment: a new secret (not in use until a code from it is confirmed), as text and as an otpauth:// URI. */
  async beginTwoFactor(
    session: PortalSession,
    origin: RequestOrigin,
  ): Promise<{ object: 'two_factor_setup'; secret: string; otpauth_uri: string }> {
    const user = await this.user(session);
    if (user.totpEnabledAt) throw new AppError('invalid_state', 'two_factor_enabled', 'Two-factor sign-in is already on.');
    const secret = newTotpSecret();
    await this.deps.db.transaction(async (tx) => {
      await tx
        .update(portalUsers)
        .set({ totpSecretCiphertext: this.deps.secrets.encrypt(secret, totpAad(user.id)), totpLastStep: null })
        .where(eq(portalUsers.id, user.id));
      await this.deps.audit.record(tx, sessionSubject(session, origin), {
        action: 'portal_user.two_factor_setup',
        resourceType: 'portal_user',
        resourceId: user.id,
      });
    });
    return { object: 'two_factor_setup', secret, otpauth_uri: totpUri(secret, user.email) };
  }

  /** Confirms enrolment with a code from the app: two-factor sign-in is on, and the recovery codes are shown once. */
  async enableTwoFactor(
    session: PortalSession,
    code: string,
    origin: RequestOrigin,
  ): Promise<{ object: 'recovery_codes'; codes: string[] }> {
    const user = await this.user(session);
    if (user.totpEnabledAt) throw new AppError('invalid_state', 'two_factor_enabled', 'Two-factor sign-in is already on.');
    if (!user.totpSecretCiphertext)
      throw new AppError('invalid_state', 'two_factor_not_started', 'Start the set-up first: it shows the secret to add to your app.');
    const now = this.deps.clock.now();
    const step = verifyTotp(this.deps.secrets.decrypt(user.totpSecretCiphertext, totpAad(user.id)), code, now, user.totpLastStep);
    if (step === null)
      throw new AppError('invalid_request', 'invalid_two_factor_code', 'That code is not right: enter the 6 digits your app shows now.', {
        param: 'code',
      });
    const codes = newRecoveryCodes();
    await this.deps.db.transaction(async (tx) => {
      await tx.update(portalUsers).set({ totpEnabledAt: now, totpLastStep: step }).where(eq(portalUsers.id, user.id));
      await this.replaceRecoveryCodes(tx, user.id, codes);
      await this.deps.sessions.completeTwoFactorSetup(session, tx);
      await this.deps.audit.record(tx, sessionSubject(session, origin), {
        action: 'portal_user.two_factor_enable',
        resourceType: 'portal_user',
        resourceId: user.id,
      });
    });
    return { object: 'recovery_codes', codes };
  }

  async disableTwoFactor(session: PortalSession, password: string, origin: RequestOrigin): Promise<void> {
    const user = await this.user(session);
    await this.checkPassword(user, password);
    const [platform] = await this.deps.db
      .select({ required: platforms.requireTwoFactor })
      .from(platforms)
      .where(eq(platforms.id, user.platformId));
    if (platform?.required)
      throw new AppError('invalid_state', 'two_factor_required', 'Your team requires two-factor sign-in, so it stays on.');
    if (!user.totpEnabledAt) throw new AppError('invalid_state', 'two_factor_disabled', 'Two-factor sign-in is already off.');
    await this.deps.db.transaction(async (tx) => {
      await clearTwoFactor(tx, user.id);
      await this.deps.audit.record(tx, sessionSubject(session, origin), {
        action: 'portal_user.two_factor_disable',
        resourceType: 'portal_user',
        resourceId: user.id,
      });
    });
  }

  async regenerateRecoveryCodes(
    session: PortalSession,
    password: string,
    origin: RequestOrigin,
  ): Promise<{ object: 'recovery_codes'; codes: string[] }> {
    const user = await this.user(session);
    await this.checkPassword(user, password);
    if (!user.totpEnabledAt) throw new AppError('invalid_state', 'two_factor_disabled', 'Turn two-factor sign-in on first.');
    const codes = newRecoveryCodes();
    await this.deps.db.transaction(async (tx) => {
      await this.replaceRecoveryCodes(tx, user.id, codes);
      await this.deps.audit.record(tx, sessionSubject(session, origin), {
        action: 'portal_user.recovery_codes_regenerate',
        resourceType: 'portal_user',
        resourceId: user.id,
      });
    });
    return { object: 'recovery_codes', codes };
  }

  private async replaceRecoveryCodes(tx: Tx, userId: string, codes: string[]): Promise<void> {
    await tx.delete(portalRecoveryCodes).where(eq(portalRecoveryCodes.userId, userId));
    await tx.insert(portalRecoveryCodes).values(codes.map((c) => ({ userId, codeHash: hashRecoveryCode(c) })));
  }
}

/** Two-factor sign-in off: the secret and the recovery codes go (the user's own choice, or an operator's reset). */
export async function clearTwoFactor(tx: Tx, userId: string): Promise<void> {
  await tx
    .update(portalUsers)
    .set({ totpSecretCiphertext: null, totpEnabledAt: null, totpLastStep: null })
    .where(eq(portalUsers.id, userId));
  await tx.delete(portalRecoveryCodes).where(eq(portalRecoveryCodes.userId, userId));
}

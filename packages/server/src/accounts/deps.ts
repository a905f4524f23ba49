import type { AuditTrail, PlatformSubject } from '../audit/trail.ts';
import type { Clock } from '../clock.ts';
import type { Db } from '../db/client.ts';
import type { Environment } from '../db/schema.ts';
import { AppError } from '../errors.ts';
import type { RequestOrigin } from '../scope.ts';
import type { SecretBox } from '../security/encryption.ts';
import type { Mailer } from './mailer.ts';
import type { ScryptCost } from './passwords.ts';
import { actorOf, type PortalSession, type SessionStore } from './sessions.ts';

/** What the account services share (built once in context.ts). */
export interface AccountDeps {
  db: Db;
  clock: Clock;
  audit: AuditTrail;
  secrets: SecretBox;
  passwordCost: ScryptCost;
  sessions: SessionStore;
  /** null: no SMTP server configured; links are shown and printed only. */
  mailer: Mailer | null;
  /** PAYHOOKS_PORTAL_PASSWORD_SIGN_IN. */
  passwordSignIn: boolean;
  /** Base URL of the links we hand out (PAYHOOKS_PUBLIC_URL, else where the server listens). */
  publicUrl: () => string;
}

/** The audit subject of what a session does; `environment` null for Platform-wide changes (team, settings). */
export function sessionSubject(
  session: PortalSession,
  origin: RequestOrigin | undefined,
  environment: Environment | null = null,
): PlatformSubject {
  return { platformId: session.platformId, environment, actor: actorOf(session), origin };
}

/** The password forms need password sign-in: a deployment that only embeds has none. */
export function requirePasswordSignIn(deps: AccountDeps): void {
  if (!deps.passwordSignIn)
    throw new AppError(
      'forbidden',
      'password_sign_in_disabled',
      "Password sign-in is turned off here: open Webhooks from your payment service's dashboard.",
    );
}

/** Routes of one's own account (password, two-factor) are for our portal users, not the payment service's. */
export function requirePasswordSession(session: PortalSession): void {
  if (session.kind !== 'password')
    throw new AppError(
      'forbidden',
      'not_a_portal_user',
      "You signed in through your payment service's dashboard: manage your account there.",
    );
}

/** A link into the portal page (`/portal/<path>#token=…`): the token in the fragment never reaches a server log or a Referer. */
export const portalLink = (deps: AccountDeps, path: string, token: string) => `${deps.publicUrl()}/portal/${path}#token=${token}`;

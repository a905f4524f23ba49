import type { AuditTrail } from '../audit/trail.ts';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Db } from '../db/client.ts';
import type { SecretBox } from '../security/encryption.ts';
import type { AccountDeps } from './deps.ts';
import { smtpMailer, type Mailer } from './mailer.ts';
import { OwnAccount } from './own-account.ts';
import { PasswordResets } from './password-reset.ts';
import type { ScryptCost } from './passwords.ts';
import { PortalLinks } from './portal-links.ts';
import { SessionStore } from './sessions.ts';
import { SignIn } from './sign-in.ts';
import { Team } from './team.ts';

/** The account services, built once per process (context.ts, and the admin commands). */
export interface Accounts {
  signIn: SignIn;
  links: PortalLinks;
  team: Team;
  own: OwnAccount;
  resets: PasswordResets;
  deps: AccountDeps;
}

export function createAccounts(deps: AccountDeps): Accounts {
  return {
    signIn: new SignIn(deps),
    links: new PortalLinks(deps),
    team: new Team(deps),
    own: new OwnAccount(deps),
    resets: new PasswordResets(deps),
    deps,
  };
}

/**
 * The account services on a database with the settings' session lifetimes, sign-in mode and
 * SMTP server: the service context builds them, and so do the admin commands, which need
 * nothing else of the service.
 */
export function openAccounts(options: {
  config: Config;
  db: Db;
  clock: Clock;
  audit: AuditTrail;
  secrets: SecretBox;
  passwordCost: ScryptCost;
  publicUrl: () => string;
}): { accounts: Accounts; sessions: SessionStore; mailer: Mailer | null; close(): void } {
  const { config, db, clock } = options;
  const sessions = new SessionStore({
    db,
    clock,
    limits: { idleMs: config.portalIdleTimeoutMs, lifetimeMs: config.portalSessionLifetimeMs },
  });
  const mailer = config.smtpUrl ? smtpMailer(config.smtpUrl, config.smtpFrom) : null;
  const accounts = createAccounts({
    db,
    clock,
    audit: options.audit,
    secrets: options.secrets,
    passwordCost: options.passwordCost,
    sessions,
    mailer,
    passwordSignIn: config.portalPasswordSignIn,
    publicUrl: options.publicUrl,
  });
  return { accounts, sessions, mailer, close: () => mailer?.close() };
}

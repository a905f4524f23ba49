import { pino } from 'pino';
import { listenUrl, loadConfig, type Config } from '../config.ts';
import { AppError, ConfigError } from '../errors.ts';
import { openDatabase } from '../db/client.ts';
import { migrate, migrationStatus } from '../db/migrate.ts';
import { waitForDatabase } from '../db/wait.ts';
import { createLogger } from '../logging.ts';
import { openStore } from '../store.ts';
import { systemClock, type Clock } from '../clock.ts';
import { AuditTrail } from '../audit/trail.ts';
import { SecretBox } from '../security/encryption.ts';
import { openAccounts, type Accounts } from '../accounts/index.ts';
import { PASSWORD_COST, type ScryptCost } from '../accounts/passwords.ts';
import type { Database } from '../db/client.ts';
import { createApiKey, createPlatform, listApiKeys, listPlatforms, platformExists, revokeApiKey } from '../tenancy/platforms.ts';
import { createPortalUser, listUsers, toPortalUser, userByEmail } from '../accounts/users.ts';
import { hostname, userInfo } from 'node:os';
import { isRole, ROLES, type Role } from '../accounts/roles.ts';
import type { AuditedBy } from '../tenancy/platforms.ts';

/**
 * The operator at the CLI, as the audit trail names them: their login name on this machine, and
 * the machine in place of an address.
 */
function operator(ctx: AdminContext): AuditedBy {
  let login = 'unknown';
  try {
    login = userInfo().username;
  } catch {
    // No passwd entry for this uid (a container): the uid is what there is.
    login = `uid ${process.getuid?.() ?? '?'}`;
  }
  return {
    trail: ctx.audit,
    by: { actor: { type: 'operator', id: login }, origin: { ip: null, userAgent: `payhooks-cli on ${hostname()}`, requestId: null } },
  };
}

function role(raw: string | undefined, fallback: Role): Role {
  if (raw === undefined) return fallback;
  if (!isRole(raw)) throw new ConfigError(`--role must be one of ${ROLES.join(', ')} (got '${raw}').`);
  return raw;
}

/** Links the CLI prints point at PAYHOOKS_PUBLIC_URL; without it, at where `serve` listens by default. */
function linkNote(ctx: AdminContext): string {
  return ctx.config.publicUrl ? '' : "The link uses this machine's address: set PAYHOOKS_PUBLIC_URL to the address your users open.\n";
}

/** A refused input (taken or malformed email) ends the command with its message, not a stack trace. */
async function asConfigError<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof AppError) throw new ConfigError(err.message);
    throw err;
  }
}

/** What the admin commands work with: the store and the account services, none of the rest of the service. */
interface AdminContext {
  config: Config;
  database: Database;
  clock: Clock;
  audit: AuditTrail;
  accounts: Accounts;
  passwordCost: ScryptCost;
}

/**
 * Admin commands open the database without starting a server, and build only the account
 * services on it: a command loads neither the HTTP server nor the delivery engine (about 40 %
 * of its start). Their stdout is the result (`--json` output is parsed by scripts), so their
 * logs go to stderr.
 */
async function withAdmin<T>(fn: (ctx: AdminContext) => Promise<T>): Promise<T> {
  // Quiet unless the operator asked for a level.
  const config = loadConfig(process.env, process.env.PAYHOOKS_LOG_LEVEL ? {} : { logLevel: 'warn' });
  const logger = createLogger(config, pino.destination({ fd: 2, sync: true }));
  const store = await openStore({ config, logger });
  const ctx = {
    config,
    database: store.database,
    clock: systemClock,
    audit: new AuditTrail({ logger, clock: systemClock }),
    passwordCost: PASSWORD_COST,
  };
  const { accounts, close } = openAccounts({
    ...ctx,
    db: store.database.db,
    secrets: new SecretBox(store.encryptionKey),
    // As in the service context before the server listens: links point at where `serve` listens.
    publicUrl: () => config.publicUrl ?? listenUrl(config),
  });
  try {
    return await fn({ ...ctx, accounts });
  } finally {
    close();
    await store.close();
  }
}

/** `payhooks migrate --check`: migrations are pending (exit code 3); see the CLI table of docs/api.md. */
export const MIGRATIONS_PENDING_EXIT = 3;

/** `payhooks migrate [--check]`. */
export async function migrateCommand(options: { check?: boolean } = {}): Promise<void> {
  const cfg = loadConfig();
  const logger = createLogger(cfg, pino.destination({ fd: 2, sync: true }));
  const database = await openDatabase({ databaseUrl: cfg.databaseUrl, dataDir: cfg.dataDir, logger });
  try {
    await waitForDatabase(database, { maxWaitMs: cfg.dbWaitMs, logger, url: cfg.databaseUrl });
    if (options.check) {
      const status = await migrationStatus(database);
      if (status.newer.length)
        process.stdout.write(
          `the database has migrations this release does not know (${status.newer.join(', ')}): a newer release migrated it\n`,
        );
      if (status.pending.length === 0) {
        process.stdout.write('database is up to date\n');
        return;
      }
      process.stdout.write(`pending: ${status.pending.join(', ')}\n`);
      process.exitCode = MIGRATIONS_PENDING_EXIT;
      return;
    }
    const applied = await migrate(database);
    process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n');
  } finally {
    await database.close();
  }
}

export async function createPlatformCommand(opts: { name: string; email?: string; json?: boolean }): Promise<void> {
  const name = opts.name.trim();
  if (!name || name.length > 200) throw new ConfigError('--name must be 1 to 200 characters.');
  const created = await withAdmin((ctx) =>
    asConfigError(() => createPlatform(ctx.database.db, name, { portalEmail: opts.email, audit: operator(ctx) })),
  );
  if (opts.json) process.stdout.write(`${JSON.stringify(created)}\n`);
  else
    process.stdout.write(
      `Platform ${created.platform_id}\nMerchant ${created.merchant_id}\nSandbox key ${created.keys.sandbox}\nLive key    ${created.keys.live}\n` +
        `Portal user ${created.portal.email}\nPassword    ${created.portal.password}\n` +
        'Store the keys and the password now: they are not shown again.\n',
    );
}

export async function createUserCommand(opts: { platform: string; email: string; role?: string; json?: boolean }): Promise<void> {
  const chosen = role(opts.role, 'developer');
  const user = await withAdmin(async (ctx) => {
    if (!(await platformExists(ctx.database.db, opts.platform))) throw new ConfigError(`No such Platform: ${opts.platform}`);
    return asConfigError(() =>
      ctx.database.db.transaction(async (tx) => {
        const created = await createPortalUser(tx, { platformId: opts.platform, email: opts.email, role: chosen }, ctx.passwordCost);
        const { trail, by } = operator(ctx);
        await trail.record(
          tx,
          { ...by, platformId: opts.platform, environment: null },
          {
            action: 'portal_user.create',
            resourceType: 'portal_user',
            resourceId: created.id,
            changes: { email: created.email, role: chosen },
          },
        );
        return created;
      }),
    );
  });
  if (opts.json) process.stdout.write(`${JSON.stringify(user)}\n`);
  else
    process.stdout.write(
      `Portal user ${user.id} (${user.email}, ${user.role}) of ${user.platform_id}\nPassword ${user.password}\nStore it now: it is not shown again.\n`,
    );
}

/** `admin invite`: a single-use invitation link, printed (and mailed when PAYHOOKS_SMTP_URL is set). */
export async function inviteCommand(opts: { platform: string; email: string; role?: string; json?: boolean }): Promise<void> {
  const chosen = role(opts.role, 'developer');
  const { invitation, note } = await withAdmin(async (ctx) => {
    if (!(await platformExists(ctx.database.db, opts.platform))) throw new ConfigError(`No such Platform: ${opts.platform}`);
    const { by } = operator(ctx);
    const created = await asConfigError(() =>
      ctx.accounts.team.invite({ ...by, platformId: opts.platform, environment: null }, opts.email, chosen),
    );
    return { invitation: created, note: linkNote(ctx) };
  });
  if (opts.json) process.stdout.write(`${JSON.stringify(invitation)}\n`);
  else
    process.stdout.write(
      `Invitation ${invitation.id} for ${invitation.email} (${invitation.role}), until ${invitation.expires_at}${invitation.emailed ? ' (mailed)' : ''}\n${invitation.url}\n${note}`,
    );
}

/** The account named by email, and by Platform when the email has accounts on several. */
const userOf = (ctx: AdminContext, email: string, platform?: string) => asConfigError(() => userByEmail(ctx.database.db, email, platform));

/** `admin set-role`: the user's next request runs with the new role. */
export async function setRoleCommand(opts: { email: string; role: string; platform?: string }): Promise<void> {
  const chosen = role(opts.role, 'viewer');
  const user = await withAdmin(async (ctx) => {
    const target = await userOf(ctx, opts.email, opts.platform);
    const { by } = operator(ctx);
    return asConfigError(() =>
      ctx.accounts.team.changeRole({ ...by, platformId: target.platformId, environment: null }, target.id, chosen),
    );
  });
  process.stdout.write(`${user.email} is now ${user.role}\n`);
}

/** `admin remove-user`: the user and every session of theirs end at once. */
export async function removeUserCommand(opts: { email: string; platform?: string }): Promise<void> {
  const user = await withAdmin(async (ctx) => {
    const target = await userOf(ctx, opts.email, opts.platform);
    const { by } = operator(ctx);
    return asConfigError(() => ctx.accounts.team.remove({ ...by, platformId: target.platformId, environment: null }, target.id));
  });
  process.stdout.write(`removed ${user.id} (${user.email}); their sessions have ended\n`);
}

/** `admin reset-password`: a single-use link (an hour) where the user chooses a new password. */
export async function resetPasswordCommand(opts: { email: string; platform?: string; json?: boolean }): Promise<void> {
  const { reset, note } = await withAdmin(async (ctx) => ({
    reset: await asConfigError(() => ctx.accounts.resets.issue(opts.email, operator(ctx).by, opts.platform)),
    note: linkNote(ctx),
  }));
  if (opts.json) process.stdout.write(`${JSON.stringify(reset)}\n`);
  else
    process.stdout.write(
      `Password reset for ${opts.email.trim().toLowerCase()}, until ${reset.expires_at}${reset.emailed ? ' (mailed)' : ''}\n${reset.url}\n${note}`,
    );
}

/** `admin reset-two-factor`: two-factor sign-in off for a user who lost their device and recovery codes. */
export async function resetTwoFactorCommand(opts: { email: string; platform?: string }): Promise<void> {
  await withAdmin(async (ctx) => asConfigError(() => ctx.accounts.resets.resetTwoFactor(opts.email, operator(ctx).by, opts.platform)));
  process.stdout.write(`two-factor sign-in is off for ${opts.email.trim().toLowerCase()}; their sessions have ended\n`);
}

/** `admin list-users`: every portal user of a Platform (or all), with role and two-factor. */
export async function listUsersCommand(opts: { platform: string; json?: boolean }): Promise<void> {
  const users = await withAdmin(async (ctx) => {
    if (!(await platformExists(ctx.database.db, opts.platform))) throw new ConfigError(`No such Platform: ${opts.platform}`);
    return (await listUsers(ctx.database.db, opts.platform)).map(toPortalUser);
  });
  if (opts.json) process.stdout.write(`${JSON.stringify(users)}\n`);
  else
    for (const u of users)
      process.stdout.write(`${u.id}  ${u.role.padEnd(9)}  ${u.two_factor_enabled ? '2fa' : '   '}  ${u.created_at}  ${u.email}\n`);
}

export async function createKeyCommand(opts: { platform: string; environment: 'live' | 'sandbox'; json?: boolean }): Promise<void> {
  const key = await withAdmin(async (ctx) => {
    if (!(await platformExists(ctx.database.db, opts.platform))) throw new ConfigError(`No such Platform: ${opts.platform}`);
    return ctx.database.db.transaction((tx) => createApiKey(tx, opts.platform, opts.environment, operator(ctx)));
  });
  if (opts.json) process.stdout.write(`${JSON.stringify({ id: key.id, environment: key.environment, key: key.key })}\n`);
  else process.stdout.write(`Key ${key.id} (${key.environment}): ${key.key}\nStore it now: it is not shown again.\n`);
}

export async function revokeKeyCommand(idOrPrefix: string): Promise<void> {
  const result = await withAdmin((ctx) => revokeApiKey(ctx.database.db, idOrPrefix, ctx.clock.now(), operator(ctx)));
  if ('revoked' in result) process.stdout.write(`revoked ${result.revoked.id} (${result.revoked.prefix}…)\n`);
  else if (result.error === 'ambiguous')
    throw new ConfigError(`${result.matches} keys match '${idOrPrefix}'; give the key id (key_…) instead.`);
  else throw new ConfigError(`No API key matches '${idOrPrefix}'.`);
}

/** `admin list-platforms`: what exists, for an operator who lost track (no secrets). */
export async function listPlatformsCommand(opts: { json?: boolean }): Promise<void> {
  const list = await withAdmin((ctx) => listPlatforms(ctx.database.db));
  if (opts.json) process.stdout.write(`${JSON.stringify(list)}\n`);
  else if (list.length === 0) process.stdout.write('No Platforms yet; create one with `payhooks admin create-platform --name NAME`.\n');
  else
    for (const p of list)
      process.stdout.write(`${p.id}  ${p.created_at}  live keys ${p.active_keys.live}, sandbox keys ${p.active_keys.sandbox}  ${p.name}\n`);
}

/** `admin list-keys`: keys by id and prefix; the key itself is never stored, only its hash. */
export async function listKeysCommand(opts: { platform?: string; json?: boolean }): Promise<void> {
  const list = await withAdmin(async (ctx) => {
    if (opts.platform !== undefined && !(await platformExists(ctx.database.db, opts.platform)))
      throw new ConfigError(`No such Platform: ${opts.platform}`);
    return listApiKeys(ctx.database.db, opts.platform);
  });
  if (opts.json) process.stdout.write(`${JSON.stringify(list)}\n`);
  else if (list.length === 0) process.stdout.write('No API keys.\n');
  else
    for (const k of list)
      process.stdout.write(
        `${k.id}  ${k.prefix}…  ${k.environment.padEnd(7)}  ${k.platform_id}  created ${k.created_at}  ${k.revoked_at ? `revoked ${k.revoked_at}` : 'active'}\n`,
      );
}

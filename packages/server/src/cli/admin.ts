import { pino } from 'pino';
import { loadConfig } from '../config.ts';
import { AppError, ConfigError } from '../errors.ts';
import { openDatabase } from '../db/client.ts';
import { migrate, migrationStatus } from '../db/migrate.ts';
import { waitForDatabase } from '../db/wait.ts';
import { createLogger } from '../logging.ts';
import { openRuntime } from '../runtime.ts';
import { createApiKey, createPlatform, listApiKeys, listPlatforms, platformExists, revokeApiKey } from '../tenancy/platforms.ts';
import { createPortalUser } from '../portal/users.ts';

/** A refused input (taken or malformed email) ends the command with its message, not a stack trace. */
async function asConfigError<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof AppError) throw new ConfigError(err.message);
    throw err;
  }
}

/**
 * Admin commands open the database without starting a server. Their stdout is the result
 * (`--json` output is parsed by scripts), so their logs go to stderr.
 */
async function withRuntime<T>(fn: (rt: Awaited<ReturnType<typeof openRuntime>>) => Promise<T>): Promise<T> {
  // Quiet unless the operator asked for a level.
  const cfg = loadConfig(process.env, process.env.PAYHOOKS_LOG_LEVEL ? {} : { logLevel: 'warn' });
  const logger = createLogger(cfg, pino.destination({ fd: 2, sync: true }));
  const rt = await openRuntime({ config: cfg, logger });
  try {
    return await fn(rt);
  } finally {
    await rt.close();
  }
}

/** `payhooks migrate --check`: migrations are pending (exit code 3); see the README's CLI table. */
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
  const created = await withRuntime(({ ctx }) => asConfigError(() => createPlatform(ctx.database.db, name, { portalEmail: opts.email })));
  if (opts.json) process.stdout.write(`${JSON.stringify(created)}\n`);
  else
    process.stdout.write(
      `Platform ${created.platform_id}\nMerchant ${created.merchant_id}\nSandbox key ${created.keys.sandbox}\nLive key    ${created.keys.live}\n` +
        `Portal user ${created.portal.email}\nPassword    ${created.portal.password}\n` +
        'Store the keys and the password now: they are not shown again.\n',
    );
}

export async function createUserCommand(opts: { platform: string; email: string; json?: boolean }): Promise<void> {
  const user = await withRuntime(async ({ ctx }) => {
    if (!(await platformExists(ctx.database.db, opts.platform))) throw new ConfigError(`No such Platform: ${opts.platform}`);
    return asConfigError(() => createPortalUser(ctx.database.db, opts.platform, opts.email));
  });
  if (opts.json) process.stdout.write(`${JSON.stringify(user)}\n`);
  else
    process.stdout.write(
      `Portal user ${user.id} (${user.email}) of ${user.platform_id}\nPassword ${user.password}\nStore it now: it is not shown again.\n`,
    );
}

export async function createKeyCommand(opts: { platform: string; environment: 'live' | 'sandbox'; json?: boolean }): Promise<void> {
  const key = await withRuntime(async ({ ctx }) => {
    if (!(await platformExists(ctx.database.db, opts.platform))) throw new ConfigError(`No such Platform: ${opts.platform}`);
    return createApiKey(ctx.database.db, opts.platform, opts.environment);
  });
  if (opts.json) process.stdout.write(`${JSON.stringify({ id: key.id, environment: key.environment, key: key.key })}\n`);
  else process.stdout.write(`Key ${key.id} (${key.environment}): ${key.key}\nStore it now: it is not shown again.\n`);
}

export async function revokeKeyCommand(idOrPrefix: string): Promise<void> {
  const result = await withRuntime(({ ctx }) => revokeApiKey(ctx.database.db, idOrPrefix, ctx.clock.now()));
  if ('revoked' in result) process.stdout.write(`revoked ${result.revoked.id} (${result.revoked.prefix}…)\n`);
  else if (result.error === 'ambiguous')
    throw new ConfigError(`${result.matches} keys match '${idOrPrefix}'; give the key id (key_…) instead.`);
  else throw new ConfigError(`No API key matches '${idOrPrefix}'.`);
}

/** `admin list-platforms`: what exists, for an operator who lost track (no secrets). */
export async function listPlatformsCommand(opts: { json?: boolean }): Promise<void> {
  const list = await withRuntime(({ ctx }) => listPlatforms(ctx.database.db));
  if (opts.json) process.stdout.write(`${JSON.stringify(list)}\n`);
  else if (list.length === 0) process.stdout.write('No Platforms yet; create one with `payhooks admin create-platform --name NAME`.\n');
  else
    for (const p of list)
      process.stdout.write(`${p.id}  ${p.created_at}  live keys ${p.active_keys.live}, sandbox keys ${p.active_keys.sandbox}  ${p.name}\n`);
}

/** `admin list-keys`: keys by id and prefix; the key itself is never stored, only its hash. */
export async function listKeysCommand(opts: { platform?: string; json?: boolean }): Promise<void> {
  const list = await withRuntime(async ({ ctx }) => {
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

import { pino } from 'pino';
import { loadConfig, type Config } from '../config.ts';
import { ConfigError } from '../errors.ts';
import { openDatabase, type Database } from '../db/client.ts';
import { migrationStatus } from '../db/migrate.ts';
import { waitForDatabase } from '../db/wait.ts';
import { checkRoleName, checkRuntimeRole, connectionRole, grantRuntimeRole } from '../db/roles.ts';
import { runRetention } from '../db/retention.ts';
import { createLogger } from '../logging.ts';
import { systemClock } from '../clock.ts';
import type { Logger } from 'pino';

/**
 * The commands an operator runs as the database's owner beside a service that runs as the
 * runtime role (db/roles.ts): creating or checking that role, and the hourly partition
 * maintenance the service then leaves alone.
 */
async function withOwnerDatabase<T>(fn: (database: Database, cfg: Config, logger: Logger) => Promise<T>): Promise<T> {
  const cfg = loadConfig();
  const logger = createLogger(cfg, pino.destination({ fd: 2, sync: true }));
  const database = await openDatabase({ databaseUrl: cfg.databaseUrl, dataDir: cfg.dataDir, logger });
  try {
    await waitForDatabase(database, { maxWaitMs: cfg.dbWaitMs, logger, url: cfg.databaseUrl });
    const { pending } = await migrationStatus(database);
    if (pending.length) throw new ConfigError(`Migrations are pending (${pending.join(', ')}): run \`payhooks migrate\` first.`);
    return await fn(database, cfg, logger);
  } finally {
    await database.close();
  }
}

/** `admin runtime-role NAME [--check]`: creates (or updates the grants of) the runtime role, or checks it. */
export async function runtimeRoleCommand(name: string, opts: { check?: boolean }): Promise<void> {
  const invalid = checkRoleName(name);
  if (invalid) throw new ConfigError(`Role name '${name.slice(0, 80)}': ${invalid}.`);
  await withOwnerDatabase(async (database) => {
    if (database.kind !== 'postgres')
      throw new ConfigError('The runtime role is for PostgreSQL (set DATABASE_URL): the embedded database has one user.');
    if (!opts.check) {
      const me = await connectionRole(database);
      if (!me?.owner)
        throw new ConfigError(
          `Connected as ${me?.user ?? 'unknown'}, not the owner of payhooks' tables: run this with DATABASE_URL of the role that ran migrate.`,
        );
      const { created, password } = await grantRuntimeRole(database, name);
      if (created)
        process.stdout.write(
          `Created role ${name} with the password ${password}\nStore it now: it is not shown again. Run serve and worker with DATABASE_URL=postgres://${name}:<password>@<host>/<database>.\n`,
        );
      else process.stdout.write(`Role ${name} exists: its grants are brought up to date (its password is unchanged).\n`);
    }
    const problems = await checkRuntimeRole(database, name);
    if (problems.length === 0) {
      process.stdout.write(`${name} is a proper runtime role: it can run serve and worker, and the audit trail's triggers bind it.\n`);
      return;
    }
    process.stdout.write(`${name} is not a proper runtime role:\n${problems.map((p) => `- ${p}\n`).join('')}`);
    process.exitCode = 1;
  });
}

/** `maintain`: one run of the partition maintenance (the hourly job of serve and worker), as the owner. */
export async function maintainCommand(): Promise<void> {
  await withOwnerDatabase(async (database, cfg, logger) => {
    const me = await connectionRole(database);
    if (me && !me.owner)
      throw new ConfigError(
        `Connected as ${me.user}, which may not create or drop partitions: run payhooks maintain with DATABASE_URL of the tables' owner (the role that ran migrate).`,
      );
    const result = await runRetention({
      database,
      clock: systemClock,
      logger,
      retentionMs: cfg.retentionMs,
      auditRetentionMs: cfg.auditRetentionMs,
      retryScheduleMs: cfg.retryScheduleMs,
    });
    if (!result.ran) {
      process.stdout.write('another process is maintaining the partitions right now: nothing to do\n');
      return;
    }
    process.stdout.write(
      `weeks created: ${[...result.created, ...result.auditCreated].length}, dropped: ${[...result.dropped, ...result.auditDropped].length}, ` +
        `partitions rebuilt: ${result.compacted.length}${result.compactFailed.length ? ` (${result.compactFailed.length} failed; retried next run)` : ''}\n`,
    );
  });
}

import type { Logger } from 'pino';
import { runAlone, statement } from './db/statement.ts';
import { ACK_DEADLINE_MS, RETRY_DELAYS_MS } from '@payhooks/contract';
import { startTracing, stopTracing } from './telemetry/tracing.ts';
import { createLogger } from './logging.ts';
import { waitForDatabase } from './db/wait.ts';
import { loadConfig, type Config } from './config.ts';
import { openDatabase, type Database } from './db/client.ts';
import { migrate, migrationStatus } from './db/migrate.ts';
import { dbErrorCode } from './db/faults.ts';

const INSUFFICIENT_PRIVILEGE = '42501';
import { resolveEncryptionKey, SecretBox } from './security/encryption.ts';
import { ConfigError } from './errors.ts';

/**
 * What every command that touches data opens first: the settings, the logger, the database
 * (waited for and migrated) and the encryption key checked against what is stored. runtime.ts
 * builds the whole service on it; the admin commands only the account services, so they never
 * load the HTTP server, the delivery engine or the payment code.
 */
export interface Store {
  config: Config;
  logger: Logger;
  database: Database;
  encryptionKey: Buffer;
  /** Closes the database when the store opened it, and stops tracing. */
  close(): Promise<void>;
}

/**
 * Pooled connections for a process running `workers` delivery loops: one per loop (its claim
 * or its batch write) plus headroom for the API and metrics; never fewer than 10. The wake-up
 * listener is one more connection, outside the pool.
 */
export function poolSizeFor(workers: number): number {
  return Math.max(10, workers + 5);
}

/** The schedule and deadline are the spec's (8); other values are for tests and sandboxes only. */
export function warnAboutTestSettings(config: Config, logger: Logger): void {
  const schedule = config.retryScheduleMs.join(',') !== RETRY_DELAYS_MS.join(',');
  const deadline = config.attemptTimeoutMs !== ACK_DEADLINE_MS;
  if (schedule || deadline) {
    logger.warn(
      { retryScheduleMs: config.retryScheduleMs, attemptTimeoutMs: config.attemptTimeoutMs },
      'PAYHOOKS_RETRY_SCHEDULE / PAYHOOKS_ATTEMPT_TIMEOUT differ from the contract (spec 8: 1m,5m,30m,2h,12h,24h,24h and 10s); use them for tests and sandboxes only',
    );
  }
}

const NEWEST_SECRET = statement<Record<string, never>, { id: string; secret_ciphertext: string }>(
  'check_encryption_key',
  'SELECT id, secret_ciphertext FROM webhook_endpoints ORDER BY created_at DESC LIMIT 1',
);

/**
 * A process whose PAYHOOKS_ENCRYPTION_KEY is not the one the stored signing secrets were
 * encrypted with can't sign anything: its worker would hold each delivery until the lease runs
 * out, again and again, and record nothing. One stored secret is decrypted at start to catch it.
 */
async function checkEncryptionKey(database: Database, secrets: SecretBox): Promise<void> {
  const [row] = await runAlone(database, NEWEST_SECRET, {});
  if (!row) return;
  try {
    secrets.decrypt(row.secret_ciphertext, row.id);
  } catch {
    throw new ConfigError(
      'PAYHOOKS_ENCRYPTION_KEY is not the key the stored endpoint signing secrets were encrypted with, so no event could be signed. ' +
        'Start every process with the same key as the process that created the endpoints (for the embedded database: the encryption.key file in the data directory).',
    );
  }
}

/**
 * Applies pending migrations. Looked up first, so a process connected as the runtime role (which
 * may not create tables: db/roles.ts) starts when there is nothing to apply, and says what to do
 * when there is.
 */
async function migrateIfPending(database: Database, logger: Logger): Promise<void> {
  const { pending } = await migrationStatus(database);
  if (pending.length === 0) return;
  try {
    const applied = await migrate(database);
    if (applied.length > 0) logger.info({ applied }, 'migrations applied');
  } catch (err) {
    if (dbErrorCode(err) === INSUFFICIENT_PRIVILEGE)
      throw new ConfigError(
        `Migrations are pending (${pending.join(', ')}) and DATABASE_URL's role may not apply them: run \`payhooks migrate\` as the database owner, then \`payhooks admin runtime-role NAME\` again to grant this role the new tables.`,
      );
    throw err;
  }
}

/** Opens the database (PGlite or PostgreSQL), applies migrations and resolves the encryption key. */
export async function openStore(
  options: {
    config?: Config;
    logger?: Logger;
    /** An open database (tests); the store then leaves closing it to the caller. */
    database?: Database;
    migrate?: boolean;
    /** Delivery loops this process runs (sizes the pool). */
    workers?: number;
  } = {},
): Promise<Store> {
  const config = options.config ?? loadConfig();
  const logger = options.logger ?? createLogger(config);
  // OTEL_* in the environment: traces through the OpenTelemetry SDK (telemetry/otel.ts); a bad
  // OTEL_ setting stops the start here, before anything is opened.
  if ((await startTracing()).enabled) logger.info('OpenTelemetry tracing on (OTEL_* settings)');
  const encryptionKey = resolveEncryptionKey({
    configured: config.encryptionKey,
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    dev: config.dev,
  });
  const database =
    options.database ??
    (await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: poolSizeFor(options.workers ?? 1), logger }));
  try {
    if (!options.database) await waitForDatabase(database, { maxWaitMs: config.dbWaitMs, logger, url: config.databaseUrl });
    if (options.migrate !== false) await migrateIfPending(database, logger);
    await checkEncryptionKey(database, new SecretBox(encryptionKey));
  } catch (err) {
    if (!options.database) await database.close();
    throw err;
  }
  warnAboutTestSettings(config, logger);
  return {
    config,
    logger,
    database,
    encryptionKey,
    async close() {
      if (!options.database) await database.close();
      await stopTracing();
    },
  };
}

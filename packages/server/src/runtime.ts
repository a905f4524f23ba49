import { pino, type Logger } from 'pino';
import { loadConfig, type Config } from './config.ts';
import { systemClock, type Clock } from './clock.ts';
import { openDatabase, type Database } from './db/client.ts';
import { migrate } from './db/migrate.ts';
import { resolveEncryptionKey } from './security/encryption.ts';
import { createContext, type ServiceContext } from './context.ts';

export interface Runtime {
  ctx: ServiceContext;
  close(): Promise<void>;
}

export function createLogger(config: Pick<Config, 'logLevel'>): Logger {
  return pino({
    level: config.logLevel,
    redact: { paths: ['req.headers.authorization', '*.secret', 'secret'], censor: '[redacted]' },
  });
}

/**
 * Opens the database (PGlite or PostgreSQL), applies migrations, resolves the encryption key
 * and builds the service context: the start of every command that touches data.
 */
export async function openRuntime(options: { config?: Config; clock?: Clock; logger?: Logger; database?: Database; migrate?: boolean } = {}): Promise<Runtime> {
  const config = options.config ?? loadConfig();
  const logger = options.logger ?? createLogger(config);
  const encryptionKey = resolveEncryptionKey({ configured: config.encryptionKey, databaseUrl: config.databaseUrl, dataDir: config.dataDir, dev: config.dev });
  const database = options.database ?? (await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir }));
  try {
    if (options.migrate !== false) {
      const applied = await migrate(database);
      if (applied.length > 0) logger.info({ applied }, 'migrations applied');
    }
  } catch (err) {
    if (!options.database) await database.close();
    throw err;
  }
  const ctx = createContext({ config, database, clock: options.clock ?? systemClock, logger, encryptionKey });
  return {
    ctx,
    async close() {
      await ctx.close();
      if (!options.database) await database.close();
    },
  };
}

import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { createMigratedPgDatabase } from './database.ts';
import { openDatabase, type Database } from '../../src/db/client.ts';
import { createContext, type ServiceContext } from '../../src/context.ts';
import { loadConfig } from '../../src/config.ts';
import { systemClock } from '../../src/clock.ts';

/**
 * A scratch PostgreSQL database, migrated, with a service context on it, for tests where real
 * `payhooks` processes share the database with the test: they need its URL and the same
 * encryption key (`key`, hex in PAYHOOKS_ENCRYPTION_KEY) to read what the test wrote.
 */
export interface SharedPostgres {
  url: string;
  key: Buffer;
  database: Database;
  ctx: ServiceContext;
  close(): Promise<void>;
}

export async function sharedPostgres(): Promise<SharedPostgres> {
  const key = randomBytes(32);
  const { url, drop } = await createMigratedPgDatabase();
  const database = await openDatabase({ databaseUrl: url });
  const config = loadConfig({}, { databaseUrl: url, allowPrivateUrls: true, logLevel: 'silent' });
  const ctx = createContext({ config, database, clock: systemClock, logger: pino({ level: 'silent' }), encryptionKey: key });
  return {
    url,
    key,
    database,
    ctx,
    async close() {
      await ctx.close();
      await database.close();
      await drop();
    },
  };
}

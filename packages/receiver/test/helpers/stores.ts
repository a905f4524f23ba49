import type pg from 'pg';
import type { Redis } from 'ioredis';
import { pgStore, redisStore, type WebhookHandler } from '../../src/index.ts';
import { createPool, createRedis, deleteKeys, dropTables, uniqueName } from './db.ts';

/**
 * Real PostgreSQL and Redis for one test file: fresh, uniquely named stores on demand, and one
 * `close()` that closes the file's handlers and removes every table and key it created.
 */
export function storeFixture(label: string, options: { poolSize?: number; creditWaitMs?: number } = {}) {
  const pool: pg.Pool = createPool(options.poolSize ?? 12);
  const redis: Redis = createRedis();
  const prefix = `${uniqueName(label)}:`;
  const tables: string[] = [];
  const handlers: WebhookHandler[] = [];
  let redisN = 0;
  return {
    pool,
    redis,
    prefix,
    tables,
    handlers,
    newPgStore() {
      const table = uniqueName('events');
      const creditsTable = uniqueName('credits');
      tables.push(table, creditsTable);
      return pgStore({ pool, table, creditsTable });
    },
    newRedisStore() {
      return redisStore({
        client: redis,
        prefix: `${prefix}${redisN++}:`,
        ...(options.creditWaitMs ? { creditWaitMs: options.creditWaitMs } : {}),
      });
    },
    async close() {
      await Promise.all(handlers.map((h) => h.close()));
      await dropTables(pool, ...tables);
      await deleteKeys(redis, prefix);
      await pool.end();
      redis.disconnect();
    },
  };
}

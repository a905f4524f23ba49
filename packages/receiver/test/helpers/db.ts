import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { Redis } from 'ioredis';

export const DATABASE_URL = process.env.PAYHOOKS_RECEIVER_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = process.env.PAYHOOKS_RECEIVER_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Per-test-file names, so parallel files (and runs) never share a table or a key. */
export function uniqueName(label: string): string {
  return `rcv_${label}_${process.pid}_${randomBytes(4).toString('hex')}`;
}

export function createPool(max = 10): pg.Pool {
  return new pg.Pool({ connectionString: DATABASE_URL, max });
}

export async function dropTables(pool: pg.Pool, ...tables: string[]): Promise<void> {
  for (const t of tables) await pool.query(`DROP TABLE IF EXISTS "${t}"`);
}

export function createRedis(): Redis {
  return new Redis(REDIS_URL, { maxRetriesPerRequest: 2, lazyConnect: false });
}

export async function deleteKeys(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
}

import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import pg from 'pg';
import * as schema from './schema.ts';
import { ConfigError } from '../errors.ts';

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;
/** A transaction handle; it has the same query API as `Db`. */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
/** Anything queries can run on: the database or an open transaction. */
export type Queryable = Db | Tx;

/**
 * One handle over either backend. Everything above this file speaks drizzle (`db`) and the
 * same PostgreSQL dialect; only multi-statement SQL, LISTEN and closing differ per driver.
 */
export interface Database {
  readonly kind: 'postgres' | 'pglite';
  readonly db: Db;
  /**
   * Runs `fn` in one transaction on the raw driver, where `run` executes SQL text that may hold
   * several statements (migration files) and returns the rows of the last one.
   */
  script<T>(fn: (run: (sqlText: string) => Promise<Record<string, unknown>[]>) => Promise<T>): Promise<T>;
  /**
   * One parameterised statement on the raw driver, for the hot queries of the delivery engine
   * (claim, record), whose SQL is written by hand and documented where it lives.
   */
  query<T = Record<string, unknown>>(text: string, params: unknown[]): Promise<T[]>;
  /** Calls `onNotify` on each NOTIFY on `channel`; resolves to an unsubscribe function. */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

export interface OpenOptions {
  databaseUrl?: string | undefined;
  /** PGlite data directory; undefined with no URL = in memory (tests). */
  dataDir?: string | undefined;
  poolSize?: number;
}

export async function openDatabase(options: OpenOptions): Promise<Database> {
  if (options.databaseUrl) return openPostgres(options.databaseUrl, options.poolSize ?? 10);
  return openPglite(options.dataDir);
}

async function openPostgres(url: string, poolSize: number): Promise<Database> {
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  // An idle client's error (server restart) must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  const listeners = new Set<pg.PoolClient>();
  return {
    kind: 'postgres',
    db: drizzlePg(pool, { schema }) as unknown as Db,
    async script(fn) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await fn(async (text) => {
          const r = (await client.query(text)) as pg.QueryResult | pg.QueryResult[];
          return (Array.isArray(r) ? (r.at(-1)?.rows ?? []) : r.rows) as Record<string, unknown>[];
        });
        await client.query('COMMIT');
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        throw err;
      } finally {
        client.release();
      }
    },
    async query<T>(text: string, params: unknown[]) {
      return (await pool.query(text, params)).rows as T[];
    },
    async listen(channel, onNotify) {
      const client = await pool.connect();
      listeners.add(client);
      client.on('notification', (msg) => {
        if (msg.channel === channel) onNotify(msg.payload ?? '');
      });
      client.on('error', () => {});
      await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      return async () => {
        if (!listeners.delete(client)) return;
        try {
          await client.query(`UNLISTEN ${pg.escapeIdentifier(channel)}`);
          client.release();
        } catch {
          client.release(true);
        }
      };
    },
    async close() {
      for (const client of listeners) client.release(true);
      listeners.clear();
      await pool.end();
    },
  };
}

async function openPglite(dataDir: string | undefined): Promise<Database> {
  let unlock = () => {};
  let client: PGlite;
  if (dataDir) {
    const dir = resolve(dataDir, 'pgdata');
    mkdirSync(dir, { recursive: true });
    unlock = lockDataDir(resolve(dataDir));
    client = new PGlite(dir);
  } else {
    client = new PGlite();
  }
  try {
    await client.waitReady;
  } catch (err) {
    unlock();
    throw err;
  }
  return {
    kind: 'pglite',
    db: drizzlePglite(client, { schema }) as unknown as Db,
    async script(fn) {
      return client.transaction((tx) =>
        fn(async (text) => ((await tx.exec(text)).at(-1)?.rows ?? []) as Record<string, unknown>[]),
      );
    },
    async query<T>(text: string, params: unknown[]) {
      return (await client.query<T>(text, params)).rows;
    },
    async listen(channel, onNotify) {
      return client.listen(channel, onNotify);
    },
    async close() {
      await client.close();
      unlock();
    },
  };
}

/**
 * PGlite is single-process: two processes opening one data directory would corrupt it. A pid
 * file guards it; a stale file (its process gone) is taken over.
 */
function lockDataDir(dataDir: string): () => void {
  const lockFile = join(dataDir, 'payhooks.pid');
  try {
    const pid = Number(readFileSync(lockFile, 'utf8').trim());
    if (pid && pid !== process.pid && processAlive(pid)) {
      throw new ConfigError(
        `The embedded database in ${dataDir} is in use by process ${pid}. Stop that process, ` +
          'set PAYHOOKS_DATA_DIR to another directory, or use PostgreSQL with DATABASE_URL.',
      );
    }
  } catch (err) {
    if (err instanceof ConfigError) throw err;
  }
  writeFileSync(lockFile, String(process.pid), { mode: 0o600 });
  return () => rmSync(lockFile, { force: true });
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

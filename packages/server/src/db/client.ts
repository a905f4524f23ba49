import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import pg from 'pg';
import { pino, type Logger } from 'pino';
import * as schema from './schema.ts';
import { ConfigError } from '../errors.ts';
import { QueryError, statementName } from './faults.ts';
import { CommitNotifier, collectAfterCommit, deferWakeUps, flushAfterCommit } from './after-commit.ts';
import { parseDatabaseTargets, type HostPort } from './database-url.ts';
import { HostSelector, pointAt } from './hosts.ts';
import { LazyBegin } from './lazy-begin.ts';
import { attachScratch, DatabaseScratch } from './scratch.ts';
import { attachConnection, type ConnectionRunner } from './statement.ts';

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
  query<T = Record<string, unknown>>(text: string, params: unknown[], name?: string): Promise<T[]>;
  /**
   * Runs `fn` on one connection held for its whole duration, each statement committing on its
   * own (no transaction block): for statements that refuse one (REINDEX CONCURRENTLY) and for
   * session state that must stay on that connection (a session-level advisory lock). On
   * PostgreSQL the connection is closed afterwards, so that state never outlives `fn`.
   */
  autocommit<T>(fn: (run: (sqlText: string) => Promise<Record<string, unknown>[]>) => Promise<T>): Promise<T>;
  /**
   * Calls `onNotify` on each NOTIFY on `channel`; resolves to an unsubscribe function. On
   * PostgreSQL it is also called (with '') after the listening connection came back from a
   * loss, since notifications sent meanwhile were not received.
   */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>;
  /**
   * Wakes `channel`'s listeners after a statement that committed on its own (no `db.transaction`):
   * on PostgreSQL through the after-commit sender (db/after-commit.ts), on PGlite at once.
   */
  wake(channel: string): void;
  /** State a layer above keeps per handle, not per process (db/scratch.ts). */
  readonly scratch: DatabaseScratch;
  close(): Promise<void>;
}

export interface OpenOptions {
  databaseUrl?: string | undefined;
  /** PGlite data directory; undefined with no URL = in memory (tests). */
  dataDir?: string | undefined;
  /**
   * In memory only: start from this dump of a PGlite data directory (`dumpDataDir()`) instead of
   * an empty cluster. Tests copy one migrated database this way (test/helpers/database.ts).
   */
  pgliteSnapshot?: Blob | undefined;
  /** Most pooled PostgreSQL connections (the wake-up listener has its own, outside the pool). */
  poolSize?: number;
  /** Where lost connections and listener reconnects are reported; silent when absent. */
  logger?: Logger | undefined;
}

/**
 * How the raw paths (`query`, `script`, `autocommit`) read values, so both drivers give the same
 * row: node-postgres returns int8 (bigint columns, `count(*)`, sums) as a string, PGlite as a
 * number. Numbers here, as PGlite does: what payhooks counts stays far below 2^53. Every other
 * type already agrees (booleans, Dates, arrays, jsonb; numeric stays an exact string on both);
 * `database-drivers.test.ts` checks them on each driver. drizzle's own queries keep drizzle's
 * parsing (its column modes).
 */
const RAW_TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === pg.types.builtins.INT8 ? Number : pg.types.getTypeParser(oid, format as 'text')) as pg.CustomTypesConfig['getTypeParser'],
};

/** Named statements on one held connection, rows parsed as on the raw paths. */
function statementsOn(client: pg.PoolClient): ConnectionRunner {
  return async <R>(name: string, text: string, params: unknown[]) => {
    try {
      return (await client.query({ name, text, values: params, types: RAW_TYPES })).rows as R[];
    } catch (err) {
      throw new QueryError(name, err);
    }
  };
}

/** How long a request waits for a pooled connection (or a new one) before failing with a 503. */
const CONNECT_TIMEOUT_MS = 5_000;
/**
 * TCP keepalive after this much idle time, so a connection to a server that vanished without
 * closing it (a failover, a partition) is noticed within minutes (the OS's probe interval and
 * count apply after that) instead of after two hours of idle; the listening connection, idle by
 * design, needs it most.
 */
const KEEPALIVE_MS = 10_000;

export async function openDatabase(options: OpenOptions): Promise<Database> {
  if (options.databaseUrl) return openPostgres(options.databaseUrl, options.poolSize ?? 10, options.logger ?? pino({ level: 'silent' }));
  return openPglite(options.dataDir, options.pgliteSnapshot);
}

async function openPostgres(url: string, poolSize: number, logger: Logger): Promise<Database> {
  const targets = parseDatabaseTargets(url);
  const base: pg.ClientConfig = {
    connectionString: targets.url,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_MS,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  };
  // Every connection of this process (pool, listener, sender) follows one choice of host.
  const selector = new HostSelector(targets, base, logger);
  const pool = new pg.Pool({ ...base, Client: TargetedClient, selector, pooled: true, max: poolSize } as unknown as pg.PoolConfig);
  // Every connection gets an error listener for its whole life, idle or checked out (by
  // db.transaction, script, query): a server restart or outage then fails the statement that
  // was running, never the process. The pool drops a broken client when it is released.
  pool.on('connect', (client) => {
    client.on('error', (err) => logger.warn({ err }, 'database connection lost; it is replaced on next use'));
  });
  // Idle clients report through the pool too; the listener above has already logged it.
  pool.on('error', () => {});
  pool.on('release', (_err: Error | undefined, client: pg.PoolClient) => (client as unknown as TargetedClient).resetTransactionState());
  const listener = new WakeListener(() => directClient(base, selector), logger);
  const db = drizzlePg(pool, { schema }) as unknown as Db;
  const sender = new WakeSender(() => directClient(base, selector), logger);
  const notifier = new CommitNotifier(
    (channel) => sender.send(channel),
    (err) => logger.warn({ err }, 'wake-up after commit not sent; workers find the work when they next poll'),
  );
  const scratch = new DatabaseScratch();
  // The connection a top-level transaction runs on is taken here, not by drizzle, so its
  // hand-written statements run on it by name (db/statement.ts). drizzle runs the transaction on
  // that connection through its public API: a drizzle per pooled connection, made on first use.
  const onConnection = new WeakMap<pg.PoolClient, Db>();
  // Every top-level transaction sends its wake-ups after it commits (db/after-commit.ts).
  db.transaction = (async (fn, config) => {
    let channels: Set<string> | undefined;
    let committed: (() => void)[] | undefined;
    const client = await pool.connect();
    let result: unknown;
    try {
      let conn = onConnection.get(client);
      if (!conn) {
        conn = drizzlePg(client, { schema }) as unknown as Db;
        onConnection.set(client, conn);
      }
      result = await conn.transaction(async (tx) => {
        attachScratch(tx, scratch);
        attachConnection(tx, statementsOn(client));
        channels = deferWakeUps(tx);
        committed = collectAfterCommit(tx);
        return fn(tx);
      }, config);
    } finally {
      client.release();
    }
    for (const channel of channels ?? []) notifier.notify(channel);
    flushAfterCommit(committed);
    return result;
  }) as Db['transaction'];
  return {
    kind: 'postgres',
    db,
    scratch,
    async script(fn) {
      const client = await pool.connect();
      let broken: unknown;
      try {
        await client.query('BEGIN');
        const result = await fn(async (text) => {
          const r = (await client.query({ text, types: RAW_TYPES })) as pg.QueryResult | pg.QueryResult[];
          return (Array.isArray(r) ? (r.at(-1)?.rows ?? []) : r.rows) as Record<string, unknown>[];
        });
        await client.query('COMMIT');
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch((e: unknown) => (broken = e));
        throw err;
      } finally {
        client.release(broken as Error | undefined);
      }
    },
    async autocommit(fn) {
      const client = await pool.connect();
      try {
        return await fn(async (text) => (await client.query({ text, types: RAW_TYPES })).rows as Record<string, unknown>[]);
      } finally {
        // Closed, not returned to the pool: whatever the session set (settings, advisory locks,
        // after a failure too) ends with it, and no later borrower inherits it. It serves the
        // rare maintenance statement, so a new connection per use costs nothing that matters.
        client.release(true);
      }
    },
    async query<T>(text: string, params: unknown[], name?: string) {
      try {
        // A named statement is parsed and planned once per connection (prepared), then executed
        // by name; hot statements (claim, record) are named. Unnamed ones are parsed every time.
        return (await pool.query({ name, text, values: params, types: RAW_TYPES })).rows as T[];
      } catch (err) {
        throw new QueryError(name ?? statementName(text), err);
      }
    },
    listen: (channel, onNotify) => listener.subscribe(channel, onNotify),
    wake: (channel) => notifier.notify(channel),
    async close() {
      await notifier.idle();
      await sender.close();
      await listener.close();
      await pool.end();
    },
  };
}

/**
 * The connection after-commit wake-ups are sent on (db/after-commit.ts): one per process,
 * outside the pool, opened on first use, so a wake-up never queues behind requests waiting for
 * a pooled connection. Each is a transaction of its own with `synchronous_commit` off: it carries
 * nothing but the NOTIFY, so it need not wait for a disk flush. A send that fails is tried once
 * more on a new connection; if that fails too, the notifier logs it and workers find the work when
 * they next poll.
 */
class WakeSender {
  private client: Promise<pg.Client> | null = null;

  constructor(
    private readonly newClient: () => pg.Client,
    private readonly logger: Logger,
  ) {}

  /** Sends on the open connection; if that fails, once more on a new one (it may have dropped while idle). */
  async send(channel: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      this.client ??= this.connect();
      const pending = this.client;
      try {
        const client = await pending;
        await client.query({
          name: 'wake_after_commit',
          text: `SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, '')`,
          values: [channel],
        });
        return;
      } catch (err) {
        this.drop(pending);
        if (attempt === 2) throw err;
      }
    }
  }

  private connect(): Promise<pg.Client> {
    const client = this.newClient();
    const pending = client.connect().then(() => client);
    client.on('error', (err) => {
      this.logger.warn({ err }, 'wake-up connection lost; it is replaced on next use');
      this.drop(pending);
    });
    return pending;
  }

  private drop(pending: Promise<pg.Client>): void {
    if (this.client !== pending) return;
    this.client = null;
    pending.then((c) => c.end()).catch(() => {});
  }

  async close(): Promise<void> {
    const pending = this.client;
    this.client = null;
    await pending?.then((c) => c.end()).catch(() => {});
  }
}

interface TargetedConfig extends pg.ClientConfig {
  selector: HostSelector;
  /** Pooled connections: JIT off (see below), and BEGIN sent with the first statement (db/lazy-begin.ts). */
  pooled?: boolean;
}

/**
 * A connection that goes to the host the process's HostSelector chose (db/hosts.ts), checks
 * that the session still qualifies (target_session_attrs), and turns PostgreSQL's JIT compiler
 * off on pooled connections before the pool hands them out: it costs more than any statement
 * here takes (migration 0009 sets it for the database too, which a pooler can't lose; this
 * covers a database payhooks may not alter). Done in `connect`, which the pool awaits, rather
 * than in its `connect` event, where the SET would still be running when the caller's first
 * query is sent. A connection that fails makes the selector look for another host.
 */
class TargetedClient extends pg.Client {
  private readonly selector: HostSelector;
  private readonly jitOff: boolean;
  private readonly lazyBegin: LazyBegin | null;

  constructor(config: TargetedConfig) {
    super(config);
    this.selector = config.selector;
    this.jitOff = config.pooled ?? false;
    this.lazyBegin = config.pooled ? new LazyBegin() : null;
    // Handled from birth: `open` turns node-postgres' connect callback into promises, so the
    // pool attaches its own listener a few microtasks after the connection is ready, while the
    // driver goes on parsing the same socket read. A restart's FATAL (57P01) arriving in that read
    // would be emitted with no listener and crash the process. Here it only marks the client not
    // queryable: its next statement fails as "database unavailable" (503), and the pool drops it.
    this.on('error', () => {});
  }

  /** node-postgres' own `query`, bound once (every statement passes through `query` below). */
  private readonly send = (...args: unknown[]): unknown => pg.Client.prototype.query.apply(this, args as never);

  // biome-ignore lint/suspicious/noExplicitAny: pg.Client's query has a dozen overloads; this passes every form through.
  override query(...args: any[]): any {
    return this.lazyBegin?.query(this, this.send, args) ?? this.send(...args);
  }

  /** The pool hands the connection to someone else: nothing of a transaction carries over. */
  resetTransactionState(): void {
    this.lazyBegin?.reset();
  }

  // The pool calls connect(callback); the promise form is kept for everyone else.
  override connect(): Promise<pg.Client>;
  override connect(callback: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): void;
  override connect(callback?: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): Promise<pg.Client> | undefined {
    const ready = this.open();
    if (!callback) return ready;
    ready.then(
      (c) => (callback as (err: null, c: pg.Client) => void)(null, c),
      (err: Error) => (callback as (err: Error) => void)(err),
    );
    return undefined;
  }

  private async open(): Promise<pg.Client> {
    let host: HostPort | null = null;
    try {
      host = await this.selector.target();
      pointAt(this, host);
      await super.connect();
    } catch (err) {
      this.selector.forget(host);
      throw err;
    }
    try {
      await this.selector.check(this, host);
      if (this.jitOff) await this.query('SET jit = off');
    } catch (err) {
      await this.end().catch(() => {});
      throw err;
    }
    return this;
  }
}

/** A connection outside the pool (listening, waking), with the pool's timeouts, keepalive and host. */
function directClient(base: pg.ClientConfig, selector: HostSelector): pg.Client {
  return new TargetedClient({ ...base, selector });
}

/** Reconnect delays of the wake-up listener: doubling from 100 ms, at most 5 s, with jitter. */
export function listenerBackoffMs(attempt: number): number {
  const base = Math.min(5_000, 100 * 2 ** Math.min(attempt, 10));
  return Math.round(base / 2 + Math.random() * (base / 2));
}

type Subscriber = (payload: string) => void;

/**
 * One LISTEN connection per process, outside the pool, shared by every subscriber (all the
 * worker loops of a `payhooks worker --workers N`), so listening never takes a pooled
 * connection. When the connection drops (server restart, outage) it reconnects with backoff,
 * LISTENs again, and wakes every subscriber once: a NOTIFY sent meanwhile was lost.
 */
class WakeListener {
  private client: pg.Client | null = null;
  private connecting: Promise<void> | null = null;
  private readonly channels = new Map<string, Set<Subscriber>>();
  private retryTimer: NodeJS.Timeout | null = null;
  private failures = 0;
  private closed = false;

  constructor(
    private readonly newClient: () => pg.Client,
    private readonly logger: Logger,
  ) {}

  async subscribe(channel: string, onNotify: Subscriber): Promise<() => Promise<void>> {
    let subs = this.channels.get(channel);
    const fresh = !subs;
    if (!subs) {
      subs = new Set();
      this.channels.set(channel, subs);
    }
    const sub: Subscriber = (payload) => onNotify(payload);
    subs.add(sub);
    const client = this.client;
    if (client && fresh) {
      await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`).catch((err: unknown) => this.lost(client, err));
    } else if (!client) {
      // The first subscriber waits for the first connection attempt; if the database is down,
      // reconnecting goes on in the background and the subscriber is woken when it succeeds.
      this.connecting ??= this.connect();
      await this.connecting;
    }
    return async () => {
      subs.delete(sub);
      if (subs.size > 0 || this.channels.get(channel) !== subs) return;
      this.channels.delete(channel);
      if (this.channels.size === 0) return this.disconnect();
      await this.client?.query(`UNLISTEN ${pg.escapeIdentifier(channel)}`).catch(() => {});
    };
  }

  private async connect(): Promise<void> {
    const client = this.newClient();
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, new Error('Connection terminated')));
    client.on('notification', (msg) => {
      for (const sub of this.channels.get(msg.channel) ?? []) sub(msg.payload ?? '');
    });
    try {
      await client.connect();
      for (const channel of this.channels.keys()) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    } catch (err) {
      this.connecting = null;
      client.removeAllListeners('end');
      await client.end().catch(() => {});
      this.retry(err);
      return;
    }
    this.connecting = null;
    if (this.closed || this.channels.size === 0) {
      client.removeAllListeners('end');
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    if (this.failures > 0) this.logger.info({ attempts: this.failures }, 'wake-up listener reconnected; workers look for due work now');
    this.failures = 0;
    // Whatever was published while we were not listening is due now: every subscriber claims.
    for (const subs of this.channels.values()) for (const sub of subs) sub('');
  }

  private lost(client: pg.Client, err: unknown): void {
    if (this.client !== client) return;
    this.client = null;
    client.removeAllListeners('end');
    client.end().catch(() => {});
    if (!this.closed) this.retry(err);
  }

  private retry(err: unknown): void {
    if (this.closed || this.channels.size === 0 || this.retryTimer) return;
    const delay = listenerBackoffMs(this.failures++);
    this.logger.warn(
      { err, attempt: this.failures, retryInMs: delay },
      'wake-up listener disconnected; reconnecting (workers poll meanwhile)',
    );
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (!this.closed && !this.client) this.connecting ??= this.connect();
    }, delay);
  }

  private async disconnect(): Promise<void> {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    await this.connecting?.catch(() => {});
    const client = this.client;
    this.client = null;
    if (client) {
      client.removeAllListeners('end');
      await client.end().catch(() => {});
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.disconnect();
  }
}

async function openPglite(dataDir: string | undefined, snapshot?: Blob): Promise<Database> {
  // Loaded here, not at the top: PGlite (a WebAssembly PostgreSQL) takes a while to load, and a
  // PostgreSQL deployment or a command that opens no database never needs it.
  const [{ PGlite }, { drizzle: drizzlePglite }] = await Promise.all([import('@electric-sql/pglite'), import('drizzle-orm/pglite')]);
  let unlock = () => {};
  let client: PGlite;
  if (dataDir) {
    const dir = resolve(dataDir, 'pgdata');
    mkdirSync(dir, { recursive: true });
    unlock = lockDataDir(resolve(dataDir));
    client = new PGlite(dir);
  } else {
    client = snapshot ? new PGlite({ loadDataDir: snapshot }) : new PGlite();
  }
  try {
    await client.waitReady;
  } catch (err) {
    unlock();
    throw err;
  }
  const db = drizzlePglite(client, { schema }) as unknown as Db;
  const transaction = db.transaction.bind(db);
  const scratch = new DatabaseScratch();
  // Work waiting for a commit (db/after-commit.ts) runs once the top-level transaction has committed.
  db.transaction = (async (fn, config) => {
    let committed: (() => void)[] | undefined;
    const result = await transaction(async (tx) => {
      attachScratch(tx, scratch);
      committed = collectAfterCommit(tx);
      return fn(tx);
    }, config);
    flushAfterCommit(committed);
    return result;
  }) as Db['transaction'];
  return {
    kind: 'pglite',
    db,
    scratch,
    async script(fn) {
      return client.transaction((tx) => fn(async (text) => ((await tx.exec(text)).at(-1)?.rows ?? []) as Record<string, unknown>[]));
    },
    // One connection in one process: nothing runs beside it to hold it for.
    async autocommit(fn) {
      return fn(async (text) => ((await client.exec(text)).at(-1)?.rows ?? []) as Record<string, unknown>[]);
    },
    async query<T>(text: string, params: unknown[], name?: string) {
      try {
        return (await client.query<T>(text, params)).rows;
      } catch (err) {
        throw new QueryError(name ?? statementName(text), err);
      }
    },
    async listen(channel, onNotify) {
      return client.listen(channel, onNotify);
    },
    wake(channel) {
      client.query('SELECT pg_notify($1, $2)', [channel, '']).catch(() => {});
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

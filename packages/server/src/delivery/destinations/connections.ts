import { createHash } from 'node:crypto';
import type { BrokerDestination, BrokerMessage, BrokerTls, DialOptions } from './broker.ts';
import type { BrokerCredentials, BrokerTarget } from '../../endpoint-urls/broker-url.ts';

interface Entry<C> {
  conn: Promise<C>;
  inUse: number;
  lastUsed: number;
}

/**
 * One open connection per broker and credentials, shared by every attempt that goes there and
 * closed after `idleMs` without use. A connection that fails to open, or that the broker
 * closes, is forgotten at once, so the next attempt dials afresh (each attempt then fails on
 * its own and is retried on the delivery schedule; nothing here retries).
 */
export class ConnectionPool<C> {
  private readonly entries = new Map<string, Entry<C>>();
  private sweeper: NodeJS.Timeout | null = null;

  constructor(
    private readonly idleMs: number,
    private readonly closeConnection: (conn: C) => Promise<void>,
  ) {}

  /**
   * Runs `fn` on the connection for `key` (opened with `open` when there is none). The key
   * holds credentials, so only its hash is kept.
   */
  async use<T>(key: string, open: () => Promise<C>, fn: (conn: C) => Promise<T>): Promise<T> {
    const id = createHash('sha256').update(key).digest('base64url');
    let entry = this.entries.get(id);
    if (!entry) {
      const conn = open();
      entry = { conn, inUse: 0, lastUsed: performance.now() };
      this.entries.set(id, entry);
      const opened = entry;
      conn.catch(() => this.forget(id, opened));
      this.startSweeper();
    }
    entry.inUse++;
    try {
      return await fn(await entry.conn);
    } finally {
      entry.inUse--;
      entry.lastUsed = performance.now();
    }
  }

  /** Drops the entry of a connection that closed or broke (only if it is still that entry's). */
  forgetConnection(conn: C): void {
    for (const [id, entry] of this.entries) {
      void entry.conn.then(
        (c) => {
          if (c === conn) this.forget(id, entry);
        },
        () => {},
      );
    }
  }

  /** Open (or opening) connections. */
  get size(): number {
    return this.entries.size;
  }

  async close(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
    const all = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(all.map((e) => e.conn.then((c) => this.closeConnection(c)).catch(() => {})));
  }

  private forget(id: string, entry: Entry<C>): void {
    if (this.entries.get(id) === entry) this.entries.delete(id);
  }

  private startSweeper(): void {
    if (this.sweeper) return;
    this.sweeper = setInterval(() => this.sweep(), Math.max(50, Math.floor(this.idleMs / 2)));
    this.sweeper.unref();
  }

  private sweep(): void {
    const now = performance.now();
    for (const [id, entry] of this.entries) {
      if (entry.inUse > 0 || now - entry.lastUsed < this.idleMs) continue;
      this.entries.delete(id);
      void entry.conn.then((c) => this.closeConnection(c)).catch(() => {});
    }
    if (this.entries.size === 0 && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = null;
    }
  }
}

/**
 * What every broker destination shares: its connections, pooled by broker address and
 * credentials, counted and closed together. A destination adds how to open one and publish on it.
 */
export abstract class PooledDestination<C> implements BrokerDestination {
  protected readonly pool: ConnectionPool<C>;

  constructor(
    protected readonly options: DialOptions,
    closeConnection: (conn: C) => Promise<void>,
  ) {
    this.pool = new ConnectionPool(options.idleMs, closeConnection);
  }

  abstract publish(target: BrokerTarget, credentials: BrokerCredentials | null, message: BrokerMessage, tls?: BrokerTls): Promise<string>;

  get openConnections(): number {
    return this.pool.size;
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

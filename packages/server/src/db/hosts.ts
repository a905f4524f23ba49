import pg from 'pg';
import type { Logger } from 'pino';

import type { DatabaseTargets, HostPort, TargetSessionAttrs } from './database-url.ts';

/**
 * Failover-aware connections: the libpq multi-host URL every PostgreSQL tool understands,
 *
 *   postgres://user@h1:5432,h2:5433/db?target_session_attrs=read-write
 *
 * node-postgres connects to one host only, so payhooks picks the host itself: the first in the
 * list whose session has the wanted attributes, as libpq does. The pick is remembered; a
 * connection that fails (the primary died) or lands on a host that no longer qualifies (a
 * standby, read-only) forgets it, and the next connection tries the list again, with backoff
 * between whole rounds that found nothing. Requests meanwhile fail fast with a database
 * unavailable error (503 with Retry-After to the caller), never wait on a dead host.
 */

/**
 * Aims a client that has not connected yet at `host`. node-postgres takes the host from the
 * connection string over any `host` option, so it is set on the client itself, where connect reads it.
 */
export function pointAt<C extends pg.Client>(client: C, host: HostPort | null): C {
  if (!host) return client;
  const c = client as unknown as { host: string; port: number; connectionParameters: { host: string; port: number } };
  c.host = host.host;
  c.port = host.port;
  c.connectionParameters.host = host.host;
  c.connectionParameters.port = host.port;
  return client;
}

/** Hosts as `h1:5432, h2:5433`, for messages (a URL's hosts are not secret; its password is). */
export function describeHosts(hosts: HostPort[]): string {
  return hosts.map((h) => `${h.host}:${h.port}`).join(', ');
}

/** Delay before the next round over the hosts after `failures` rounds found none: 100 ms doubling to 5 s. */
export function roundBackoffMs(failures: number): number {
  return Math.min(5_000, 100 * 2 ** Math.min(Math.max(failures - 1, 0), 10));
}

/** SQLSTATE-like code of "no host of the list qualifies": class 08, so callers answer 503. */
export const NO_SUITABLE_HOST = '08001';

export class NoSuitableHostError extends Error {
  readonly code = NO_SUITABLE_HOST;
}

interface SessionState {
  recovery: boolean;
  readOnly: boolean;
}

async function sessionState(client: pg.Client): Promise<SessionState> {
  const { rows } = await client.query<{ recovery: boolean; read_only: string }>(
    "SELECT pg_is_in_recovery() AS recovery, current_setting('transaction_read_only') AS read_only",
  );
  return { recovery: rows[0]!.recovery, readOnly: rows[0]!.read_only === 'on' };
}

/** Whether a session qualifies; prefer-standby takes a standby first, then anything. */
function qualifies(attrs: TargetSessionAttrs, s: SessionState, pass: 'first' | 'second'): boolean {
  switch (attrs) {
    case 'any':
      return true;
    case 'read-write':
      return !s.readOnly;
    case 'read-only':
      return s.readOnly;
    case 'primary':
      return !s.recovery;
    case 'standby':
      return s.recovery;
    case 'prefer-standby':
      return pass === 'second' || s.recovery;
  }
}

/**
 * The host every connection of one process goes to. Shared by the pool, the wake-up listener
 * and sender: they all follow the same primary.
 */
export class HostSelector {
  private current: HostPort | null;
  private probing: Promise<HostPort> | null = null;
  private failures = 0;
  private nextRoundAt = 0;
  private lastError: Error | null = null;
  /** The host the previous round chose: a change (or a recovery) is logged. */
  private lastPick: HostPort | null = null;

  constructor(
    readonly targets: DatabaseTargets,
    private readonly base: pg.ClientConfig,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {
    // One host and no attribute to check: nothing to choose, connect as node-postgres would.
    this.current = this.trivial ? (targets.hosts[0] ?? null) : null;
  }

  /** True when there is nothing to pick or check (one host, any session). */
  get trivial(): boolean {
    return this.targets.hosts.length <= 1 && this.targets.attrs === 'any';
  }

  /** The host to connect to: the remembered one, or the first that qualifies now. */
  async target(): Promise<HostPort | null> {
    if (this.trivial || this.current) return this.current;
    this.probing ??= this.round().finally(() => {
      this.probing = null;
    });
    return this.probing;
  }

  /** A connection to `host` failed or no longer qualifies: the next one looks again. */
  forget(host: HostPort | null): void {
    if (this.trivial || !host || !this.current) return;
    if (this.current.host === host.host && this.current.port === host.port) this.current = null;
  }

  /** Checks a freshly opened connection (the pick may be stale: a primary demoted since). */
  async check(client: pg.Client, host: HostPort | null): Promise<void> {
    if (this.targets.attrs === 'any') return;
    const state = await sessionState(client);
    if (qualifies(this.targets.attrs, state, this.targets.attrs === 'prefer-standby' ? 'second' : 'first')) return;
    this.forget(host);
    throw new NoSuitableHostError(
      `${host ? `${host.host}:${host.port}` : 'the database'} no longer accepts a ${this.targets.attrs} session (${state.recovery ? 'standby' : 'read-only'}); looking for another host`,
    );
  }

  private async round(): Promise<HostPort> {
    if (this.now() < this.nextRoundAt && this.lastError) throw this.lastError;
    const reasons: string[] = [];
    const passes: Array<'first' | 'second'> = this.targets.attrs === 'prefer-standby' ? ['first', 'second'] : ['first'];
    const states = new Map<HostPort, SessionState>();
    for (const pass of passes) {
      for (const host of this.targets.hosts) {
        let state = states.get(host);
        if (!state && pass === 'first') {
          const client = pointAt(new pg.Client(this.base), host);
          client.on('error', () => {});
          try {
            await client.connect();
            state = await sessionState(client);
            states.set(host, state);
          } catch (err) {
            reasons.push(`${host.host}:${host.port} (${(err as { code?: string }).code ?? (err as Error).message})`);
            continue;
          } finally {
            client.end().catch(() => {});
          }
        }
        if (!state) continue;
        if (qualifies(this.targets.attrs, state, pass)) {
          if (this.failures > 0 || this.lastPick?.host !== host.host || this.lastPick.port !== host.port) {
            this.logger.info({ host: `${host.host}:${host.port}`, rounds: this.failures + 1 }, 'database host chosen from DATABASE_URL');
          }
          this.failures = 0;
          this.lastError = null;
          this.current = host;
          this.lastPick = host;
          return host;
        }
        if (pass === 'first') reasons.push(`${host.host}:${host.port} (${state.recovery ? 'standby' : 'read-only'})`);
      }
    }
    this.failures++;
    this.nextRoundAt = this.now() + roundBackoffMs(this.failures);
    this.lastError = new NoSuitableHostError(
      `no host of DATABASE_URL accepts a ${this.targets.attrs} session: ${reasons.join(', ')}; trying again in ${roundBackoffMs(this.failures)} ms`,
    );
    this.logger.warn({ hosts: describeHosts(this.targets.hosts), reason: this.lastError.message }, 'no database host available');
    throw this.lastError;
  }
}

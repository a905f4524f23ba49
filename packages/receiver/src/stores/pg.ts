import {
  DEDUP_RETENTION_MS,
  RECEIVER_CREDITS_TABLE,
  RECEIVER_EVENTS_TABLE,
  RECEIVER_MIGRATION_LOCK,
  receiverTablesDdl,
  type WebhookEvent,
} from '@payhooks/contract';
import {
  checkPaymentId,
  checkRetention,
  errorText,
  randomToken,
  type Claim,
  type CreditResult,
  type CreditStore,
  type WebhookStore,
} from './types.ts';

/** The part of node-postgres (`pg`) the store uses; a `pg.Pool` fits, as do pg-compatible pools. */
export interface PgQueryable {
  // biome-ignore lint/suspicious/noExplicitAny: as in pg's QueryResult; a narrower row type would stop pg-compatible pools fitting
  query(text: string, values?: unknown[]): Promise<{ rows: any[]; rowCount: number | null }>;
}
export interface PgPoolClientLike extends PgQueryable {
  release(destroy?: boolean | Error): void;
}
export interface PgPoolLike extends PgQueryable {
  connect(): Promise<PgPoolClientLike>;
}

export interface PgStoreOptions<P extends PgPoolLike> {
  /** A `pg.Pool` (not a single `pg.Client`: transactions need a connection of their own). */
  pool: P;
  /** Table of seen event ids and their work (the inbox). Default `payhooks_events`. May be `schema.table`. */
  table?: string;
  /** Table of credited payment ids. Default `payhooks_credits`. May be `schema.table`. */
  creditsTable?: string;
  /** How long a done id is kept. At least, and by default, 30 days (spec 8). */
  retentionMs?: number;
  /** Create the tables on first use (default true). Otherwise call `migrate()` or run `schemaSql()` yourself. */
  autoMigrate?: boolean;
}

/**
 * The client type `pool.connect()` resolves to, e.g. `pg.PoolClient`. pg's Pool also has a callback
 * overload of connect (returning void), so both overloads are matched.
 */
export type PgTransactionClient<P> = P extends {
  connect(): Promise<infer C>;
  // biome-ignore lint/suspicious/noExplicitAny: matches pg's callback overload whatever its arguments
  connect(callback: (...args: any[]) => void): void;
}
  ? C
  : P extends { connect(): Promise<infer C> }
    ? C
    : PgPoolClientLike;
type TxOf<P> = PgTransactionClient<P>;

export interface PgStore<P extends PgPoolLike = PgPoolLike> extends WebhookStore, CreditStore<TxOf<P>> {
  readonly durable: true;
  /** Creates the tables if they do not exist (idempotent, safe to run from several processes at once). */
  migrate(): Promise<void>;
  /** The DDL `migrate()` runs, for your own migration tool. */
  schemaSql(): string;
  /** Puts failed events (all, or one) back in the queue for another round of attempts; returns how many. */
  requeueFailed(eventId?: string): Promise<number>;
  /** Deletes done ids older than the retention; returns how many. */
  purge(): Promise<number>;
  readonly table: string;
  readonly creditsTable: string;
  markFailed(claim: Claim, error: unknown): Promise<void>;
  claimDue(limit: number, leaseMs: number): Promise<Array<{ claim: Claim; event: WebhookEvent }>>;
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

function quoteName(name: string): { sql: string; base: string } {
  const parts = name.split('.');
  if (parts.length > 2 || parts.some((p) => !IDENT.test(p))) {
    throw new TypeError(`payhooks: invalid table name ${JSON.stringify(name)}`);
  }
  return { sql: parts.map((p) => `"${p}"`).join('.'), base: parts[parts.length - 1]! };
}

/**
 * PostgreSQL store (node-postgres). Durable: the seen id and the event to process are one row,
 * written by one statement, so an acknowledged event is never without its work. States:
 * `processing` (leased to one worker), `pending` (waiting for a retry), `done` (kept 30 days, then
 * purged), `failed` (all attempts failed; kept until requeued or replayed).
 *
 * `creditOnce(paymentId, fn)` runs `fn(tx)` inside a transaction that also inserts the payment id
 * into the credits table (primary key): write your ledger row with `tx` and both commit together.
 */
export function pgStore<P extends PgPoolLike>(options: PgStoreOptions<P>): PgStore<P> {
  const pool = options.pool;
  if (!pool || typeof pool.connect !== 'function' || typeof pool.query !== 'function') {
    throw new TypeError('payhooks: pgStore needs `pool`, a pg.Pool');
  }
  const events = quoteName(options.table ?? RECEIVER_EVENTS_TABLE);
  const credits = quoteName(options.creditsTable ?? RECEIVER_CREDITS_TABLE);
  const retentionMs = checkRetention(options.retentionMs ?? DEDUP_RETENTION_MS, DEDUP_RETENTION_MS);
  const autoMigrate = options.autoMigrate ?? true;
  const T = events.sql;
  const C = credits.sql;

  const schemaSql = (): string => receiverTablesDdl({ eventsTable: T, creditsTable: C, indexPrefix: events.base });

  const migrate = async (): Promise<void> => {
    const client = await pool.connect();
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      // Concurrent CREATE TABLE IF NOT EXISTS can still collide: serialise migrations.
      await client.query(`SELECT pg_advisory_xact_lock(hashtext('${RECEIVER_MIGRATION_LOCK}'))`);
      await client.query(schemaSql());
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch((e: Error) => (broken = e));
      throw error;
    } finally {
      client.release(broken);
    }
  };

  let ready: Promise<void> | undefined;
  const ensure = (): Promise<void> => {
    if (!autoMigrate) return Promise.resolve();
    ready ??= migrate().catch((error) => {
      ready = undefined;
      throw error;
    });
    return ready;
  };

  const ms = (param: string) => `(${param}::float8 * interval '1 millisecond')`;

  const store: PgStore<P> = {
    durable: true,
    table: options.table ?? 'payhooks_events',
    creditsTable: options.creditsTable ?? 'payhooks_credits',
    migrate,
    schemaSql,

    async claim(event, leaseMs) {
      await ensure();
      const token = randomToken();
      // Insert-or-ignore (spec 6.2.1). An existing row is taken over only when its work failed for
      // good (a replay re-runs it) or its holder's lease expired (the holder died).
      const { rows } = await pool.query(
        `INSERT INTO ${T} AS e (event_id, event_type, state, payload, attempts, token, locked_until)
         VALUES ($1, $2, 'processing', $3::jsonb, 1, $4, now() + ${ms('$5')})
         ON CONFLICT (event_id) DO UPDATE SET
           state = 'processing', payload = EXCLUDED.payload, token = EXCLUDED.token,
           attempts = CASE WHEN e.state = 'failed' THEN 1 ELSE e.attempts + 1 END,
           locked_until = EXCLUDED.locked_until, next_attempt_at = NULL, updated_at = now()
         WHERE e.state = 'failed' OR (e.state = 'processing' AND e.locked_until < now())
         RETURNING attempts`,
        [event.id, event.type, JSON.stringify(event), token, leaseMs],
      );
      const row = rows[0];
      return row ? { eventId: event.id, token, attempt: Number(row.attempts) } : null;
    },

    async complete(claim) {
      await pool.query(
        `UPDATE ${T} SET state = 'done', payload = NULL, token = NULL, locked_until = NULL,
           next_attempt_at = NULL, last_error = NULL, updated_at = now()
         WHERE event_id = $1 AND token = $2`,
        [claim.eventId, claim.token],
      );
    },

    async retryLater(claim, delayMs, _leaseMs, error) {
      await pool.query(
        `UPDATE ${T} SET state = 'pending', token = NULL, locked_until = NULL,
           next_attempt_at = now() + ${ms('$3')}, last_error = $4, updated_at = now()
         WHERE event_id = $1 AND token = $2`,
        [claim.eventId, claim.token, delayMs, errorText(error)],
      );
    },

    async release(claim) {
      await pool.query(`DELETE FROM ${T} WHERE event_id = $1 AND token = $2`, [claim.eventId, claim.token]);
    },

    async markFailed(claim, error) {
      await pool.query(
        `UPDATE ${T} SET state = 'failed', token = NULL, locked_until = NULL, next_attempt_at = NULL,
           last_error = $3, updated_at = now()
         WHERE event_id = $1 AND token = $2`,
        [claim.eventId, claim.token, errorText(error)],
      );
    },

    async claimDue(limit, leaseMs) {
      if (limit <= 0) return [];
      await ensure();
      const { rows } = await pool.query(
        `UPDATE ${T} AS e SET state = 'processing', attempts = e.attempts + 1,
           token = gen_random_uuid()::text, locked_until = now() + ${ms('$2')},
           next_attempt_at = NULL, updated_at = now()
         FROM (
           SELECT event_id FROM ${T}
           WHERE (state = 'pending' AND next_attempt_at <= now())
              OR (state = 'processing' AND locked_until < now())
           ORDER BY COALESCE(next_attempt_at, locked_until)
           LIMIT $1
           FOR UPDATE SKIP LOCKED
         ) due
         WHERE e.event_id = due.event_id
         RETURNING e.event_id, e.attempts, e.token, e.payload`,
        [limit, leaseMs],
      );
      return rows.map((row) => ({
        claim: { eventId: row.event_id as string, token: row.token as string, attempt: Number(row.attempts) },
        event: (typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload) as WebhookEvent,
      }));
    },

    async requeueFailed(eventId) {
      await ensure();
      const result = await pool.query(
        `UPDATE ${T} SET state = 'pending', attempts = 0, next_attempt_at = now(), updated_at = now()
         WHERE state = 'failed'${eventId === undefined ? '' : ' AND event_id = $1'}`,
        eventId === undefined ? [] : [eventId],
      );
      return result.rowCount ?? 0;
    },

    async purge() {
      await ensure();
      const result = await pool.query(`DELETE FROM ${T} WHERE state = 'done' AND updated_at < now() - ${ms('$1')}`, [retentionMs]);
      return result.rowCount ?? 0;
    },

    async creditOnce<R>(paymentId: string, fn: (tx: TxOf<P>) => R | Promise<R>): Promise<CreditResult<R>> {
      checkPaymentId(paymentId);
      await ensure();
      const client = (await pool.connect()) as TxOf<P> & PgPoolClientLike;
      let broken: Error | undefined;
      try {
        await client.query('BEGIN');
        // The primary key makes a concurrent second insert wait for the first transaction: it then
        // conflicts (first committed: already credited) or goes ahead (first rolled back).
        const marker = await client.query(`INSERT INTO ${C} (payment_id) VALUES ($1) ON CONFLICT (payment_id) DO NOTHING`, [paymentId]);
        if (marker.rowCount === 0) {
          await client.query('ROLLBACK');
          return { credited: false };
        }
        const value = await fn(client);
        await client.query('COMMIT');
        return { credited: true, value };
      } catch (error) {
        await client.query('ROLLBACK').catch((e: Error) => (broken = e));
        throw error;
      } finally {
        client.release(broken);
      }
    },
  };
  return store;
}

import type { Logger } from 'pino';
import type { Database } from './client.ts';
import type { Clock } from '../clock.ts';
import { IDEMPOTENCY_WINDOW_MS } from '../idempotency-window.ts';

/**
 * Retention (migration 0007): `events`, `webhook_deliveries` and `delivery_attempts` are
 * partitioned by week (Monday 00:00 UTC to the next; attempts by their delivery's creation
 * time), and a week's three partitions are named `<table>_pYYYYMMDD` after its Monday.
 *
 * Maintenance, one transaction at a time across every process (transaction-level advisory
 * lock; a second caller skips instead of waiting):
 * 1. creates the weeks from the current one to `WEEKS_AHEAD` ahead, so inserts never wait on
 *    DDL and never fall into the default partition in normal operation;
 * 2. drops every week that ended at least `retentionMs` ago, attempts first, unless one of its
 *    deliveries still has work to do (`due_at` set: a worker backlog older than the window, a
 *    schedule still running): that week waits for the next run;
 * 3. purges the DEFAULT partitions (rows outside every week: very old imports, clocks far off)
 *    by DELETE with the same rules;
 * 4. deletes event idempotency keys of purged events, and API idempotency keys older than 24 h.
 *
 * DDL takes an ACCESS EXCLUSIVE lock on each parent table for a moment; `lock_timeout` makes
 * maintenance give up (and retry at the next run) rather than queue the hot path behind it.
 */
export const WEEKS_AHEAD = 2;
const WEEK_MS = 7 * 86_400_000;
const LOCK_KEY = 727275;
const TABLES = [
  { name: 'delivery_attempts', key: 'delivery_created_at' },
  { name: 'webhook_deliveries', key: 'created_at' },
  { name: 'events', key: 'created_at' },
] as const;

export interface MaintenanceResult {
  /** False when another process held the maintenance lock (nothing was done). */
  ran: boolean;
  /** Week starts (YYYYMMDD) whose partitions were created. */
  created: string[];
  /** Week starts whose partitions were dropped. */
  dropped: string[];
  /** Old weeks kept because a delivery in them still has work to do. */
  keptBusy: string[];
  /** Rows deleted from the default partitions (attempts + deliveries + events). */
  defaultRowsDeleted: number;
  idempotencyKeysDeleted: number;
}

/** Monday 00:00 UTC of the week holding `t`. */
export function weekStart(t: Date): Date {
  const day = new Date(Date.UTC(t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate()));
  const sinceMonday = (day.getUTCDay() + 6) % 7;
  return new Date(day.getTime() - sinceMonday * 86_400_000);
}

const suffixOf = (week: Date) => week.toISOString().slice(0, 10).replace(/-/g, '');
const weekOf = (suffix: string) => new Date(`${suffix.slice(0, 4)}-${suffix.slice(4, 6)}-${suffix.slice(6, 8)}T00:00:00Z`);

export async function maintainPartitions(database: Database, options: { now: Date; retentionMs: number }): Promise<MaintenanceResult> {
  const result: MaintenanceResult = { ran: false, created: [], dropped: [], keptBusy: [], defaultRowsDeleted: 0, idempotencyKeysDeleted: 0 };
  const cutoff = new Date(options.now.getTime() - options.retentionMs);
  const lit = (d: Date) => `'${d.toISOString()}'::timestamptz`;
  return database.script(async (run) => {
    const [lock] = await run(`SELECT pg_try_advisory_xact_lock(${LOCK_KEY}) AS ok`);
    if (!(lock?.ok === true || lock?.ok === 't')) return result;
    result.ran = true;
    await run(`SET LOCAL lock_timeout = '5s'`);
    const existing = new Set(
      (await run(`SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'webhook_deliveries'::regclass`))
        .map((r) => /^webhook_deliveries_p(\d{8})$/.exec(String(r.relname))?.[1])
        .filter((s): s is string => s !== undefined),
    );

    // 1. Weeks ahead. A week whose range already has rows in a default partition can't be
    //    created (PostgreSQL refuses); those rows stay in the default and age out by DELETE.
    const first = weekStart(options.now);
    for (let i = 0; i <= WEEKS_AHEAD; i++) {
      const week = new Date(first.getTime() + i * WEEK_MS);
      const suffix = suffixOf(week);
      if (existing.has(suffix)) continue;
      const end = new Date(week.getTime() + WEEK_MS);
      const [clash] = await run(
        TABLES.map((t) => `SELECT 1 FROM ${t.name}_default WHERE ${t.key} >= ${lit(week)} AND ${t.key} < ${lit(end)}`).join(' UNION ALL ') + ' LIMIT 1',
      );
      if (clash) continue;
      for (const t of [...TABLES].reverse()) {
        await run(`CREATE TABLE IF NOT EXISTS ${t.name}_p${suffix} PARTITION OF ${t.name} FOR VALUES FROM (${lit(week)}) TO (${lit(end)})`);
      }
      result.created.push(suffix);
    }

    // 2. Whole weeks past the window.
    for (const suffix of [...existing].sort()) {
      const end = new Date(weekOf(suffix).getTime() + WEEK_MS);
      if (end > cutoff) continue;
      const [busy] = await run(`SELECT 1 FROM webhook_deliveries_p${suffix} WHERE due_at IS NOT NULL LIMIT 1`);
      if (busy) {
        result.keptBusy.push(suffix);
        continue;
      }
      for (const t of TABLES) await run(`DROP TABLE IF EXISTS ${t.name}_p${suffix}`);
      result.dropped.push(suffix);
    }

    // 3. The default partitions, row by row (normally empty). A delivery with work to do keeps
    //    itself, its attempts and its event.
    const deleted = await run(`
      WITH d AS (
        DELETE FROM webhook_deliveries_default d WHERE d.created_at < ${lit(cutoff)} AND d.due_at IS NULL RETURNING d.id
      ), a AS (
        DELETE FROM delivery_attempts_default a USING d WHERE a.delivery_id = d.id RETURNING 1
      ), e AS (
        DELETE FROM events_default e WHERE e.created_at < ${lit(cutoff)}
          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries_default k WHERE k.event_id = e.id AND k.due_at IS NOT NULL)
        RETURNING 1
      )
      SELECT (SELECT count(*) FROM d) + (SELECT count(*) FROM a) + (SELECT count(*) FROM e) AS n`);
    result.defaultRowsDeleted = Number(deleted[0]?.n ?? 0);

    // 4. Idempotency keys: an event's goes with its event; an API request's after 24 h.
    await run(`DELETE FROM event_idempotency_keys k WHERE k.event_created_at < ${lit(cutoff)}
      AND NOT EXISTS (SELECT 1 FROM events e WHERE e.id = k.event_id AND e.created_at = k.event_created_at)`);
    const keys = await run(`WITH k AS (DELETE FROM idempotency_keys WHERE created_at <= ${lit(new Date(options.now.getTime() - IDEMPOTENCY_WINDOW_MS))} RETURNING 1)
      SELECT count(*) AS n FROM k`);
    result.idempotencyKeysDeleted = Number(keys[0]?.n ?? 0);
    return result;
  });
}

/** How often the worker runs maintenance (at start, then on this timer). */
export const RETENTION_INTERVAL_MS = 3_600_000;

/** Runs `maintainPartitions` beside the workers: at start, then every hour. */
export class RetentionJob {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> = Promise.resolve();
  private stopped: boolean | null = null;

  constructor(private readonly deps: { database: Database; clock: Clock; logger: Logger; retentionMs: number; intervalMs?: number }) {}

  /** One run, now (tests call this with a ManualClock). */
  async runOnce(): Promise<MaintenanceResult> {
    const result = await maintainPartitions(this.deps.database, { now: this.deps.clock.now(), retentionMs: this.deps.retentionMs });
    if (result.created.length || result.dropped.length || result.defaultRowsDeleted || result.idempotencyKeysDeleted) {
      this.deps.logger.info(result, 'retention: partitions maintained');
    }
    if (result.keptBusy.length) this.deps.logger.warn({ weeks: result.keptBusy }, 'retention: weeks past the window kept because deliveries in them still have attempts due');
    return result;
  }

  start(): void {
    if (this.stopped === false) return;
    this.stopped = false;
    const tick = async () => {
      try {
        await this.runOnce();
      } catch (err) {
        this.deps.logger.error({ err }, 'retention maintenance failed; retrying at the next interval');
      }
      if (!this.stopped) {
        this.timer = setTimeout(() => (this.running = tick()), this.deps.intervalMs ?? RETENTION_INTERVAL_MS);
        this.timer.unref();
      }
    };
    this.running = tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }
}

import type { Logger } from 'pino';
import type { Database } from './client.ts';
import type { Clock } from '../clock.ts';
import { IDEMPOTENCY_WINDOW_MS } from '../idempotency-window.ts';
import { PeriodicJob } from '../periodic-job.ts';
import { RETRY_DELAYS_MS } from '@payhooks/contract';
import { compactionCandidates, compactOneWeek, type Compaction, type CompactionFailure } from './compact-weeks.ts';

/**
 * Retention (migrations 0007 and 0028): `events`, `webhook_deliveries`, `delivery_attempts` and
 * `event_idempotency_keys` are partitioned by week (Monday 00:00 UTC to the next; attempts by
 * their delivery's creation time, keys by their `week`), and a week's four partitions are named
 * `<table>_pYYYYMMDD` after its Monday.
 *
 * Each run, step by step, each step its own short transaction:
 * 1. creates the weeks from the current one to `WEEKS_AHEAD` ahead, so inserts never wait on
 *    DDL and never fall into the default partition in normal operation;
 * 2. drops every week that ended at least `retentionMs` ago, attempts, deliveries, events and
 *    their idempotency keys together, unless a delivery of that week is still in `delivery_queue` (an attempt due or in
 *    flight: a worker backlog older than the window). That week waits for a later run and is
 *    reported. A parked delivery (its endpoint disabled, so out of the queue) does not hold its
 *    week: it leaves with it, like the finished ones;
 * 3. purges the DEFAULT partitions (rows outside every week: very old imports, clocks far off)
 *    by DELETE with the same rules (normally they are empty);
 * 4. deletes API `Idempotency-Key` records older than their 24 h window (by their index on
 *    `created_at`: only the expired ones are read). Event idempotency keys need no step: they
 *    leave with their week (step 2) or with the default partitions (step 3), so a run with
 *    nothing to drop reads no kept row; and endpoint stats buckets past their window (hours
 *    after 8 days, days after `retentionMs`), by their index on (period, start);
 * 5. the audit trail (`audit_events`, migration 0022), partitioned by the same weeks but kept for
 *    its own window (`auditRetentionMs`): weeks ahead are created with the trigger that refuses
 *    TRUNCATE (row triggers come from the parent; TRUNCATE triggers don't), and whole weeks
 *    past the window are dropped. Rows of the trail are never deleted one by one (its triggers
 *    refuse it): its DEFAULT partition, normally empty, is dropped and made anew once every row
 *    in it is past the window;
 * 6. rebuilds the indexes of one partition of a closed week (its end older than the automatic
 *    retry schedule plus a day), once: db/compact-weeks.ts. Outside a transaction (REINDEX
 *    CONCURRENTLY refuses one), under the same advisory lock taken for the session.
 *
 * One process at a time: every step takes a transaction-level advisory lock with
 * `pg_try_advisory_xact_lock`; a process that doesn't get it stops its run (another is doing
 * the work). Steps are idempotent, so two runs interleaving would be harmless anyway.
 *
 * Creating or dropping a partition takes an ACCESS EXCLUSIVE lock on the parent table for a
 * moment; while it waits for one, the hot path's statements would queue behind it.
 * `lock_timeout` makes the step give up quickly instead (it is retried at the next run).
 */
export const WEEKS_AHEAD = 2;
export const WEEK_MS = 7 * 86_400_000;
/** How long a maintenance step may wait for a table lock before giving up until the next run. */
export const DDL_LOCK_TIMEOUT_MS = 500;
const LOCK_KEY = 727275;
/** Hourly endpoint stats are kept 8 days (delivery/stats.ts reads 7 at most). */
const STATS_HOURS_KEPT_MS = 8 * 86_400_000;
const TABLES = [
  { name: 'delivery_attempts', key: 'delivery_created_at' },
  { name: 'webhook_deliveries', key: 'created_at' },
  { name: 'events', key: 'created_at' },
  { name: 'event_idempotency_keys', key: 'week' },
] as const;

export interface MaintenanceResult {
  /** False when another process held the maintenance lock (it does the work). */
  ran: boolean;
  /** Week starts (YYYYMMDD) whose partitions were created. */
  created: string[];
  /** Week starts whose partitions were dropped. */
  dropped: string[];
  /** Old weeks kept because deliveries in them are still queued, with how many. */
  keptBusy: { week: string; queued: number }[];
  /** Steps that gave up on a table lock (retried at the next run). */
  lockTimeouts: string[];
  /** Rows deleted from the default partitions (attempts + deliveries + events). */
  defaultRowsDeleted: number;
  /** Event idempotency keys deleted from their default partition (normally none: keys leave with their week). */
  eventKeysDeleted: number;
  idempotencyKeysDeleted: number;
  /** Endpoint stats buckets past their window (hours after 8 days, days after the retention window). */
  statsDeleted: number;
  /** Audit weeks created and dropped (YYYYMMDD of their Monday). */
  auditCreated: string[];
  auditDropped: string[];
  /** The partition whose indexes were rebuilt (at most one per run), with their sizes before and after. */
  compacted: Compaction[];
  /** A rebuild that failed (lock timeout, disk, cancelled): retried at a later run. */
  compactFailed: CompactionFailure[];
}

/** The audit trail's default window when a caller names none (PAYHOOKS_AUDIT_RETENTION's default). */
const DEFAULT_AUDIT_RETENTION_MS = 365 * 86_400_000;

/** Monday 00:00 UTC of the week holding `t`. */
export function weekStart(t: Date): Date {
  const day = new Date(Date.UTC(t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate()));
  const sinceMonday = (day.getUTCDay() + 6) % 7;
  return new Date(day.getTime() - sinceMonday * 86_400_000);
}

export const weekSuffix = (week: Date) => week.toISOString().slice(0, 10).replace(/-/g, '');
const weekOf = (suffix: string) => new Date(`${suffix.slice(0, 4)}-${suffix.slice(4, 6)}-${suffix.slice(6, 8)}T00:00:00Z`);
const lit = (d: Date) => `'${d.toISOString()}'::timestamptz`;

class Skipped extends Error {}

function isLockTimeout(err: unknown): boolean {
  for (let e: unknown = err; e; e = (e as { cause?: unknown }).cause) {
    if ((e as { code?: string }).code === '55P03') return true;
  }
  return false;
}

export async function maintainPartitions(
  database: Database,
  options: {
    now: Date;
    retentionMs: number;
    auditRetentionMs?: number | undefined;
    /** The automatic retry schedule (PAYHOOKS_RETRY_SCHEDULE): a week is closed once it is over. */
    retryScheduleMs?: readonly number[] | undefined;
  },
): Promise<MaintenanceResult> {
  const result: MaintenanceResult = {
    ran: true,
    created: [],
    dropped: [],
    keptBusy: [],
    lockTimeouts: [],
    defaultRowsDeleted: 0,
    eventKeysDeleted: 0,
    idempotencyKeysDeleted: 0,
    statsDeleted: 0,
    auditCreated: [],
    auditDropped: [],
    compacted: [],
    compactFailed: [],
  };
  const cutoff = new Date(options.now.getTime() - options.retentionMs);

  /** One step in its own transaction, under the advisory lock; false when it gave up on a lock. */
  const step = async <T>(
    name: string,
    fn: (run: (sql: string) => Promise<Record<string, unknown>[]>) => Promise<T>,
  ): Promise<T | undefined> => {
    try {
      return await database.script(async (run) => {
        const [lock] = await run(`SELECT pg_try_advisory_xact_lock(${LOCK_KEY}) AS ok`);
        if (lock?.ok !== true) throw new Skipped();
        await run(`SET LOCAL lock_timeout = '${DDL_LOCK_TIMEOUT_MS}ms'`);
        return fn(run);
      });
    } catch (err) {
      if (err instanceof Skipped) {
        result.ran = false;
        return undefined;
      }
      if (isLockTimeout(err)) {
        result.lockTimeouts.push(name);
        return undefined;
      }
      throw err;
    }
  };

  // Each table's weeks: a week made by an older release may lack the keys' partition (made below).
  const existing = new Map<string, Set<string>>(TABLES.map((t) => [t.name, new Set<string>()]));
  for (const r of await database.query<{ parent: string; relname: string }>(
    `SELECT i.inhparent::regclass::text AS parent, c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = ANY (ARRAY[${TABLES.map((t) => `'${t.name}'::regclass`).join(', ')}])`,
    [],
  )) {
    const week = /_p(\d{8})$/.exec(String(r.relname))?.[1];
    if (week) existing.get(String(r.parent))?.add(week);
  }
  const weeks = new Set([...existing.values()].flatMap((w) => [...w]));
  const partitionsOf = (suffix: string) => TABLES.filter((t) => existing.get(t.name)!.has(suffix)).map((t) => `${t.name}_p${suffix}`);

  // 1. Weeks ahead. A week whose range already has rows in a default partition can't be
  //    created (PostgreSQL refuses); those rows stay in the default and age out by DELETE.
  const first = weekStart(options.now);
  for (let i = 0; i <= WEEKS_AHEAD && result.ran; i++) {
    const week = new Date(first.getTime() + i * WEEK_MS);
    const suffix = weekSuffix(week);
    const missing = TABLES.filter((t) => !existing.get(t.name)!.has(suffix));
    if (missing.length === 0) continue;
    const end = new Date(week.getTime() + WEEK_MS);
    const made = await step(`create ${suffix}`, async (run) => {
      const [clash] = await run(
        `${missing.map((t) => `SELECT 1 FROM ${t.name}_default WHERE ${t.key} >= ${lit(week)} AND ${t.key} < ${lit(end)}`).join(' UNION ALL ')} LIMIT 1`,
      );
      if (clash) return false;
      for (const t of [...missing].reverse()) {
        await run(`CREATE TABLE IF NOT EXISTS ${t.name}_p${suffix} PARTITION OF ${t.name} FOR VALUES FROM (${lit(week)}) TO (${lit(end)})`);
      }
      return true;
    });
    if (made && missing.some((t) => t.name === 'webhook_deliveries')) result.created.push(suffix);
  }

  // 2. Whole weeks past the window. The week's partitions are locked first, so a manual replay
  //    can't queue one of its deliveries between the check and the drop.
  for (const suffix of [...weeks].sort()) {
    if (!result.ran) break;
    const start = weekOf(suffix);
    const end = new Date(start.getTime() + WEEK_MS);
    if (end > cutoff) continue;
    const outcome = await step(`drop ${suffix}`, async (run) => {
      await run(`LOCK TABLE ${partitionsOf(suffix).join(', ')} IN ACCESS EXCLUSIVE MODE`);
      const [busy] = await run(
        `SELECT count(*) AS n FROM delivery_queue WHERE delivery_created_at >= ${lit(start)} AND delivery_created_at < ${lit(end)}`,
      );
      const queued = Number(busy?.n ?? 0);
      if (queued > 0) return { queued };
      for (const partition of partitionsOf(suffix)) await run(`DROP TABLE IF EXISTS ${partition}`);
      await run(
        `DELETE FROM compacted_weeks WHERE partition IN (${partitionsOf(suffix)
          .map((p) => `'${p}'`)
          .join(', ')})`,
      );
      return { queued: 0 };
    });
    if (!outcome) continue;
    if (outcome.queued > 0) result.keptBusy.push({ week: suffix, queued: outcome.queued });
    else result.dropped.push(suffix);
  }
  if (!result.ran) return result;

  // 3. The default partitions, row by row (normally empty). A queued delivery keeps itself, its
  //    attempts and its event; an event keeps its keys.
  const deleted = await step('purge default partitions', (run) =>
    run(`
      WITH d AS (
        DELETE FROM webhook_deliveries_default d WHERE d.created_at < ${lit(cutoff)}
          AND NOT EXISTS (SELECT 1 FROM delivery_queue q WHERE q.delivery_id = d.id)
        RETURNING d.id, d.created_at
      ), a AS (
        DELETE FROM delivery_attempts_default a USING d WHERE a.delivery_id = d.id AND a.delivery_created_at = d.created_at RETURNING 1
      ), e AS (
        DELETE FROM events_default e WHERE e.created_at < ${lit(cutoff)}
          AND NOT EXISTS (SELECT 1 FROM delivery_queue q WHERE q.event_id = e.id)
        RETURNING 1
      ), k AS (
        -- Keys outside every week whose event is gone (the anti-join reads only this partition).
        DELETE FROM event_idempotency_keys_default k WHERE k.event_created_at < ${lit(cutoff)}
          AND NOT EXISTS (SELECT 1 FROM events e WHERE e.id = k.event_id AND e.created_at = k.event_created_at)
        RETURNING 1
      )
      SELECT (SELECT count(*) FROM d) + (SELECT count(*) FROM a) + (SELECT count(*) FROM e) AS n,
             (SELECT count(*) FROM k) AS keys`),
  );
  result.defaultRowsDeleted = Number(deleted?.[0]?.n ?? 0);
  result.eventKeysDeleted = Number(deleted?.[0]?.keys ?? 0);

  // 4. API `Idempotency-Key` records, after their 24 h window.
  const keys = await step('idempotency keys', async (run) => {
    const [api] =
      await run(`WITH k AS (DELETE FROM idempotency_keys WHERE created_at <= ${lit(new Date(options.now.getTime() - IDEMPOTENCY_WINDOW_MS))} RETURNING 1)
      SELECT count(*) AS n FROM k`);
    return { api: Number(api?.n ?? 0) };
  });
  result.idempotencyKeysDeleted = keys?.api ?? 0;

  // 4b. Endpoint stats (delivery/attempt-stats.ts): hours after 8 days, days after the window.
  const stats = await step('endpoint stats', async (run) => {
    const [n] = await run(`WITH s AS (
        DELETE FROM endpoint_stats
        WHERE (period = 'hour' AND start < ${lit(new Date(options.now.getTime() - STATS_HOURS_KEPT_MS))})
           OR (period = 'day' AND start < ${lit(new Date(options.now.getTime() - options.retentionMs))})
        RETURNING 1)
      SELECT count(*) AS n FROM s`);
    return Number(n?.n ?? 0);
  });
  result.statsDeleted = stats ?? 0;

  // 5. The audit trail.
  const auditCutoff = new Date(options.now.getTime() - (options.auditRetentionMs ?? DEFAULT_AUDIT_RETENTION_MS));
  const auditWeeks = new Set(
    (
      await database.query<{ relname: string }>(
        `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'audit_events'::regclass`,
        [],
      )
    )
      .map((r) => /^audit_events_p(\d{8})$/.exec(String(r.relname))?.[1])
      .filter((s): s is string => s !== undefined),
  );
  const noTruncate = (table: string) =>
    `CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only()`;
  for (let i = 0; i <= WEEKS_AHEAD && result.ran; i++) {
    const week = new Date(first.getTime() + i * WEEK_MS);
    const suffix = weekSuffix(week);
    if (auditWeeks.has(suffix)) continue;
    const end = new Date(week.getTime() + WEEK_MS);
    const made = await step(`create audit ${suffix}`, async (run) => {
      const [clash] = await run(`SELECT 1 FROM audit_events_default WHERE created_at >= ${lit(week)} AND created_at < ${lit(end)} LIMIT 1`);
      if (clash) return false;
      await run(`CREATE TABLE audit_events_p${suffix} PARTITION OF audit_events FOR VALUES FROM (${lit(week)}) TO (${lit(end)})`);
      await run(noTruncate(`audit_events_p${suffix}`));
      return true;
    });
    if (made) result.auditCreated.push(suffix);
  }
  for (const suffix of [...auditWeeks].sort()) {
    if (!result.ran) break;
    if (new Date(weekOf(suffix).getTime() + WEEK_MS) > auditCutoff) continue;
    const dropped = await step(`drop audit ${suffix}`, async (run) => {
      await run(`DROP TABLE IF EXISTS audit_events_p${suffix}`);
      return true;
    });
    if (dropped) result.auditDropped.push(suffix);
  }
  await step('audit default partition', async (run) => {
    const [row] = await run('SELECT max(created_at) AS newest FROM audit_events_default');
    const newest = row?.newest ? new Date(row.newest as string) : null;
    if (!newest || newest >= auditCutoff) return;
    await run('DROP TABLE audit_events_default');
    await run('CREATE TABLE audit_events_default PARTITION OF audit_events DEFAULT');
    await run(noTruncate('audit_events_default'));
  });
  if (!result.ran) return result;

  // 6. One partition of a closed week, its indexes rebuilt once.
  const dropped = new Set(result.dropped);
  const outcome = await compactOneWeek(
    database,
    compactionCandidates({
      weeks: [...weeks].filter((w) => !dropped.has(w)),
      partitionsOf,
      now: options.now,
      retryScheduleMs: options.retryScheduleMs ?? RETRY_DELAYS_MS,
      dropCutoff: cutoff,
    }),
    LOCK_KEY,
    options.now,
  );
  if (outcome.kind === 'busy') result.ran = false;
  if (outcome.kind === 'compacted') result.compacted.push(outcome.compaction);
  if (outcome.kind === 'failed') result.compactFailed.push(outcome.failure);
  return result;
}

/** How often the worker runs maintenance (at start, then on this timer). */
export const RETENTION_INTERVAL_MS = 3_600_000;

interface RetentionDeps {
  database: Database;
  clock: Clock;
  logger: Logger;
  retentionMs: number;
  auditRetentionMs?: number | undefined;
  retryScheduleMs?: readonly number[] | undefined;
}

/** One maintenance run, logged: what changed, weeks kept for queued deliveries, lock give-ups. */
export async function runRetention(deps: RetentionDeps): Promise<MaintenanceResult> {
  const result = await maintainPartitions(deps.database, {
    now: deps.clock.now(),
    retentionMs: deps.retentionMs,
    auditRetentionMs: deps.auditRetentionMs,
    retryScheduleMs: deps.retryScheduleMs,
  });
  const { logger } = deps;
  if (
    result.created.length ||
    result.dropped.length ||
    result.defaultRowsDeleted ||
    result.eventKeysDeleted ||
    result.idempotencyKeysDeleted ||
    result.auditCreated.length ||
    result.auditDropped.length ||
    result.compacted.length
  ) {
    logger.info(result, 'retention: partitions maintained');
  }
  if (result.keptBusy.length) {
    logger.warn(
      { weeks: result.keptBusy },
      'retention: weeks past the window kept because deliveries in them still have attempts due or in flight; dropped once they finish',
    );
  }
  if (result.compactFailed.length) {
    logger.warn(
      { partitions: result.compactFailed },
      "retention: rebuilding a closed week's indexes failed; retrying at a later run (an interrupted rebuild's leftovers are dropped first)",
    );
  }
  if (result.lockTimeouts.length) {
    logger.warn(
      { steps: result.lockTimeouts, lockTimeoutMs: DDL_LOCK_TIMEOUT_MS },
      'retention: gave up waiting for a table lock (busy); retrying at the next run',
    );
  }
  return result;
}

/** Runs maintenance beside the workers: at start, then every hour. */
export class RetentionJob extends PeriodicJob {
  constructor(private readonly deps: RetentionDeps & { intervalMs?: number }) {
    super(
      deps.intervalMs ?? RETENTION_INTERVAL_MS,
      async () => void (await runRetention(deps)),
      (err) => deps.logger.error({ err }, 'retention maintenance failed; retrying at the next interval'),
    );
  }

  /** One run, now (tests call this with a ManualClock). */
  runOnce(): Promise<MaintenanceResult> {
    return runRetention(this.deps);
  }
}

import type { Database } from './client.ts';
import { runAlone, statement } from './statement.ts';

/**
 * A closed week's indexes, rebuilt once (docs/decisions/compact-closed-weeks.md).
 *
 * Rows go into a week's partitions in time order but interleaved across Platforms, event types,
 * endpoints and random ids, so most B-tree inserts land mid-page: pages split and stay about half
 * full. Once a week can no longer change (its last delivery's automatic retries are over), one
 * rebuild packs its indexes at the B-tree's default fill (90 %) for the rest of its retention.
 *
 * The retention job calls `compactOneWeek` at the end of each run: at most one partition per run,
 * newest closed week first (an older one is dropped sooner, so it gains for less time).
 */

/**
 * Tables whose closed partitions are rebuilt. All four measured loose (1 M seeded deliveries,
 * the decision record has the figures): every one of them gains.
 */
export const COMPACTED_TABLES = ['webhook_deliveries', 'events', 'delivery_attempts', 'event_idempotency_keys'] as const;

/**
 * How long after the whole automatic retry schedule a week's end must be before it counts as
 * closed. A delivery made in the week's last instant finishes its schedule that long after the
 * week's end at the latest, when workers keep up; the day covers a worker backlog or outage of
 * up to a day (its attempts then still write into the week). A write after the rebuild does no
 * harm beyond loosening a page or two again (manual replays do that too).
 */
export const CLOSED_MARGIN_MS = 86_400_000;

/**
 * How long the rebuild may wait for a lock. REINDEX CONCURRENTLY takes SHARE UPDATE EXCLUSIVE on
 * the partition (it conflicts only with DDL, VACUUM and ANALYZE, never with reads or writes, so
 * nothing of the hot path queues behind its wait), and then waits for transactions older than
 * each of its phases to end: a long report or a stuck session. Waiting a minute for those is
 * cheaper than giving up, which throws away the index already built (retried at the next run).
 */
export const REINDEX_LOCK_TIMEOUT_MS = 60_000;

export interface IndexSize {
  index: string;
  bytesBefore: number;
  bytesAfter: number;
}

export interface Compaction {
  partition: string;
  indexBytesBefore: number;
  indexBytesAfter: number;
  durationMs: number;
  indexes: IndexSize[];
}

export interface CompactionFailure {
  partition: string;
  error: string;
}

export type CompactOutcome =
  | { kind: 'none' }
  | { kind: 'busy' }
  | { kind: 'compacted'; compaction: Compaction }
  | { kind: 'failed'; failure: CompactionFailure };

const DAY = 86_400_000;
const WEEK_MS = 7 * DAY;
const weekOf = (suffix: string) => new Date(`${suffix.slice(0, 4)}-${suffix.slice(4, 6)}-${suffix.slice(6, 8)}T00:00:00Z`);
const PARTITION = /^[a-z_]+_p\d{8}$/;

/** Weeks whose end is at or before this instant are closed. */
export function closedBefore(now: Date, retryScheduleMs: readonly number[]): Date {
  return new Date(now.getTime() - retryScheduleMs.reduce((a, b) => a + b, 0) - CLOSED_MARGIN_MS);
}

/**
 * The partitions to rebuild, in order: of closed weeks not yet past `dropCutoff` (those are about
 * to be dropped), newest week first, each week's tables in COMPACTED_TABLES' order.
 */
export function compactionCandidates(options: {
  weeks: Iterable<string>;
  partitionsOf: (suffix: string) => string[];
  now: Date;
  retryScheduleMs: readonly number[];
  dropCutoff: Date;
}): string[] {
  const closed = closedBefore(options.now, options.retryScheduleMs);
  const out: string[] = [];
  for (const suffix of [...options.weeks].sort().reverse()) {
    const end = new Date(weekOf(suffix).getTime() + WEEK_MS);
    if (end > closed || end <= options.dropCutoff) continue;
    const partitions = options.partitionsOf(suffix);
    for (const table of COMPACTED_TABLES) {
      const p = `${table}_p${suffix}`;
      if (partitions.includes(p)) out.push(p);
    }
  }
  return out;
}

const COMPACTED = statement<{ partitions: string[] }, { partition: string }>(
  'compacted_weeks_of',
  'SELECT partition FROM compacted_weeks WHERE partition = ANY(:partitions::text[])',
);

/**
 * Rebuilds the first of `candidates` not rebuilt yet, if any. With none left it reads
 * `compacted_weeks` once (by its key) and does nothing else. Empty partitions are remembered
 * without a rebuild.
 *
 * One process at a time, like every maintenance step: a session-level advisory lock on the same
 * key the steps take per transaction, held on the one connection that runs the REINDEX (it can't
 * run in a transaction, so a transaction-level lock can't cover it). 'busy' when another process
 * holds it.
 */
export async function compactOneWeek(database: Database, candidates: string[], lockKey: number, now: Date): Promise<CompactOutcome> {
  if (candidates.length === 0) return { kind: 'none' };
  const done = new Set((await runAlone(database, COMPACTED, { partitions: candidates })).map((r) => r.partition));
  const pending = candidates.filter((p) => !done.has(p));
  if (pending.length === 0) return { kind: 'none' };
  for (const p of pending) if (!PARTITION.test(p)) throw new Error(`not a weekly partition: ${p}`);
  return database.autocommit(async (run) => {
    const [lock] = await run(`SELECT pg_try_advisory_lock(${lockKey}) AS ok`);
    if (lock?.ok !== true) return { kind: 'busy' } as const;
    const record = (partition: string, before: number, after: number, ms: number) =>
      run(
        `INSERT INTO compacted_weeks (partition, compacted_at, index_bytes_before, index_bytes_after, duration_ms)
         VALUES ('${partition}', '${now.toISOString()}', ${before}, ${after}, ${ms}) ON CONFLICT (partition) DO NOTHING`,
      );
    try {
      for (const partition of pending) {
        // Another process may have rebuilt or dropped it since the read above.
        const [state] = await run(
          `SELECT to_regclass('${partition}') IS NOT NULL AS present,
                  EXISTS (SELECT 1 FROM compacted_weeks WHERE partition = '${partition}') AS done`,
        );
        if (state?.present !== true || state.done === true) continue;
        // A week that never had a row (one created ahead on a quiet system) has nothing to pack:
        // remembered without a REINDEX, and the run goes on to the next candidate.
        const [empty] = await run(
          `SELECT pg_relation_size('${partition}') = 0 AS empty,
                  (SELECT coalesce(sum(pg_relation_size(indexrelid)), 0) FROM pg_index WHERE indrelid = '${partition}'::regclass) AS bytes`,
        );
        if (empty?.empty === true) {
          await record(partition, Number(empty?.bytes), Number(empty?.bytes), 0);
          continue;
        }
        try {
          const compaction = await rebuildPartition(database.kind, run, partition);
          await record(partition, compaction.indexBytesBefore, compaction.indexBytesAfter, compaction.durationMs);
          return { kind: 'compacted', compaction } as const;
        } catch (err) {
          return { kind: 'failed', failure: { partition, error: err instanceof Error ? err.message : String(err) } } as const;
        }
      }
      return { kind: 'none' } as const;
    } finally {
      // PGlite keeps its one session; on PostgreSQL the connection is closed anyway.
      await run(`SELECT pg_advisory_unlock(${lockKey})`).catch(() => {});
    }
  });
}

/**
 * Rebuilds every index of `partition` and measures them. On PostgreSQL REINDEX TABLE
 * CONCURRENTLY, in autocommit (`run` must not be inside a transaction block): it builds each new
 * index beside the old one and swaps them, blocking neither reads nor writes. An interrupted one
 * leaves invalid `<index>_ccnew` (or `_ccold`) indexes behind, which writes still maintain: they
 * are dropped first. On PGlite plain REINDEX TABLE (one connection, nothing runs beside it).
 */
export async function rebuildPartition(
  kind: Database['kind'],
  run: (sql: string) => Promise<Record<string, unknown>[]>,
  partition: string,
): Promise<Compaction> {
  const concurrently = kind === 'postgres' ? 'CONCURRENTLY ' : '';
  if (kind === 'postgres') await run(`SET lock_timeout = '${REINDEX_LOCK_TIMEOUT_MS}ms'`);
  const leftovers = await run(
    `SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      WHERE i.indrelid = '${partition}'::regclass AND NOT i.indisvalid AND c.relname ~ '_cc(new|old)[0-9]*$'`,
  );
  for (const r of leftovers) await run(`DROP INDEX ${concurrently}IF EXISTS "${String(r.relname)}"`);
  const sizes = async () =>
    new Map(
      (
        await run(
          `SELECT c.relname, pg_relation_size(c.oid) AS bytes FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
            WHERE i.indrelid = '${partition}'::regclass ORDER BY c.relname`,
        )
      ).map((r) => [String(r.relname), Number(r.bytes)]),
    );
  const before = await sizes();
  const started = performance.now();
  await run(`REINDEX TABLE ${concurrently}${partition}`);
  const durationMs = Math.round(performance.now() - started);
  const after = await sizes();
  const indexes = [...after].map(([index, bytesAfter]) => ({ index, bytesBefore: before.get(index) ?? 0, bytesAfter }));
  return {
    partition,
    indexBytesBefore: [...before.values()].reduce((a, b) => a + b, 0),
    indexBytesAfter: indexes.reduce((a, b) => a + b.bytesAfter, 0),
    durationMs,
    indexes,
  };
}

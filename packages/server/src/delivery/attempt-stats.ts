import type { Database } from '../db/client.ts';
import { runAlone, statement } from '../db/statement.ts';
import { arrayLiteral } from '../db/array-literal.ts';
import type { AttemptResult } from './destinations/attempt.ts';

/**
 * Endpoint health over time (migration 0036): attempts, successes, failures by kind and a
 * histogram of answer times per endpoint and UTC hour and day. A process counts the attempts it
 * records in memory (`AttemptStats.add`) and adds them to `endpoint_stats` in one statement per
 * flush (a worker every few seconds, when it drains and when it stops; a manual attempt at once),
 * so recording an attempt writes nothing more. Reads (delivery/stats.ts) cost the buckets they
 * return. A process killed without stopping loses its last unflushed seconds of counts, never an
 * attempt: the delivery log stays the record (docs/decisions/endpoint-stats.md).
 */

/** How a failed attempt failed, as the stats count it (the delivery log keeps the exact error). */
export const FAILURE_KINDS = ['timeout', 'connection', 'tls', 'http_4xx', 'http_429', 'http_5xx', 'endpoint_disabled', 'other'] as const;
export type FailureKind = (typeof FAILURE_KINDS)[number];

export type StatsPeriod = 'hour' | 'day';
export const PERIOD_MS: Record<StatsPeriod, number> = { hour: 3_600_000, day: 86_400_000 };

/** Null for a success. A status code decides first; then the error: refused, reset, DNS and the like are `connection`. */
export function failureKind(r: Pick<AttemptResult, 'succeeded' | 'statusCode' | 'errorKind'>): FailureKind | null {
  if (r.succeeded) return null;
  if (r.statusCode !== null) {
    if (r.statusCode === 429) return 'http_429';
    if (r.statusCode >= 500) return 'http_5xx';
    if (r.statusCode >= 400) return 'http_4xx';
    return 'other';
  }
  switch (r.errorKind) {
    case 'timeout':
      return 'timeout';
    case 'connection_refused':
    case 'connection_reset':
    case 'dns':
    case 'network':
    case 'forbidden_address':
      return 'connection';
    case 'tls':
      return 'tls';
    case 'endpoint_disabled':
      return 'endpoint_disabled';
    default:
      return 'other';
  }
}

/**
 * Answer times are counted in 64 buckets a quarter of a power of two wide: bucket 0 holds
 * [0, 2^¼) ms, bucket i [2^(i/4), 2^((i+1)/4)), the last everything from 2^(63/4) ≈ 55 s. A
 * percentile read from them is within 9 % of the true one (half a bucket, geometrically).
 */
export const LATENCY_BUCKETS = 64;

export function latencyBucket(ms: number): number {
  if (!(ms >= 1)) return 0;
  return Math.min(LATENCY_BUCKETS - 1, Math.floor(4 * Math.log2(ms)));
}

/** The `q` quantile (0 < q ≤ 1) of a histogram, in whole milliseconds; null when it is empty. */
export function percentile(histogram: readonly number[], q: number): number | null {
  let total = 0;
  for (const n of histogram) total += n;
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (let i = 0; i < histogram.length; i++) {
    seen += histogram[i]!;
    if (seen >= rank) {
      if (i === 0) return 1;
      const low = 2 ** (i / 4);
      return Math.round(i === LATENCY_BUCKETS - 1 ? low : Math.sqrt(low * 2 ** ((i + 1) / 4)));
    }
  }
  return null;
}

/** Whether an attempt's duration is an answer time: a status came back, or a broker confirmed. */
const answered = (r: Pick<AttemptResult, 'succeeded' | 'statusCode'>) => r.statusCode !== null || r.succeeded;

interface Cell {
  endpointId: string;
  period: StatsPeriod;
  start: number;
  attempts: number;
  successes: number;
  failed: number[];
  latency: number[];
}

const newCell = (endpointId: string, period: StatsPeriod, start: number): Cell => ({
  endpointId,
  period,
  start,
  attempts: 0,
  successes: 0,
  failed: new Array<number>(FAILURE_KINDS.length).fill(0),
  latency: new Array<number>(LATENCY_BUCKETS).fill(0),
});

/**
 * Adds the counts to the rows, creating those that don't exist. The endpoint's Platform and
 * environment come from the endpoint (the summary's key). Cells arrive sorted by key, and rows
 * are written in that order, so two processes flushing at once lock rows in the same order.
 */
const FLUSH = statement<FlushParams, never>(
  'endpoint_stats_flush',
  `
INSERT INTO endpoint_stats AS s (endpoint_id, period, start, platform_id, environment, attempts, successes,
  failed_timeout, failed_connection, failed_tls, failed_http_4xx, failed_http_429, failed_http_5xx, failed_disabled,
  failed_other, latency)
SELECT v.endpoint_id, v.period, to_timestamp(v.start_ms / 1000), w.platform_id, w.environment, v.attempts, v.successes,
  v.f0, v.f1, v.f2, v.f3, v.f4, v.f5, v.f6, v.f7, v.latency::int[]
FROM unnest(:endpoint_ids::text[], :periods::text[], :start_ms::float8[], :attempts::int[], :successes::int[], :f0::int[], :f1::int[],
            :f2::int[], :f3::int[], :f4::int[], :f5::int[], :f6::int[], :f7::int[], :latencies::text[]) WITH ORDINALITY
  AS v(endpoint_id, period, start_ms, attempts, successes, f0, f1, f2, f3, f4, f5, f6, f7, latency, ord)
JOIN webhook_endpoints w ON w.id = v.endpoint_id
ORDER BY v.ord
ON CONFLICT (endpoint_id, period, start) DO UPDATE SET
  attempts = s.attempts + EXCLUDED.attempts,
  successes = s.successes + EXCLUDED.successes,
  failed_timeout = s.failed_timeout + EXCLUDED.failed_timeout,
  failed_connection = s.failed_connection + EXCLUDED.failed_connection,
  failed_tls = s.failed_tls + EXCLUDED.failed_tls,
  failed_http_4xx = s.failed_http_4xx + EXCLUDED.failed_http_4xx,
  failed_http_429 = s.failed_http_429 + EXCLUDED.failed_http_429,
  failed_http_5xx = s.failed_http_5xx + EXCLUDED.failed_http_5xx,
  failed_disabled = s.failed_disabled + EXCLUDED.failed_disabled,
  failed_other = s.failed_other + EXCLUDED.failed_other,
  latency = ARRAY(SELECT a + b FROM unnest(s.latency, EXCLUDED.latency) WITH ORDINALITY AS t(a, b, i) ORDER BY i)`,
);

/** FLUSH's columns, one array literal each: `f0`…`f7` count the failures of each of FAILURE_KINDS, in order. */
type FlushParams = Record<'endpoint_ids' | 'periods' | 'start_ms' | 'attempts' | 'successes' | 'latencies' | `f${number}`, string>;
// A failure kind added to FAILURE_KINDS needs its column in the statement (and the table).
if (FAILURE_KINDS.some((_, k) => !(FLUSH.params as string[]).includes(`f${k}`))) throw new Error("FLUSH lacks a failure kind's column");

/** Counts of recorded attempts not yet written, by endpoint, hour and day. */
export class AttemptStats {
  private cells = new Map<string, Cell>();

  /** Cells waiting for a flush. */
  get waiting(): number {
    return this.cells.size;
  }

  /**
   * The cells an endpoint's last attempt was counted in: its next attempt is almost always in the
   * same hour and day, so it is counted without building a key (this runs once per attempt).
   */
  private last = new Map<string, { hour: Cell; day: Cell }>();

  /** Counts one recorded attempt in its hour and its day (UTC), by when it started. */
  add(endpointId: string, result: Pick<AttemptResult, 'succeeded' | 'statusCode' | 'errorKind' | 'startedAt' | 'durationMs'>): void {
    const t = result.startedAt.getTime();
    let cells = this.last.get(endpointId);
    if (!cells || t < cells.hour.start || t >= cells.hour.start + PERIOD_MS.hour) {
      cells = { hour: this.cell(endpointId, 'hour', t), day: this.cell(endpointId, 'day', t) };
      this.last.set(endpointId, cells);
    }
    const kind = failureKind(result);
    const latency = answered(result) ? latencyBucket(result.durationMs) : -1;
    for (const cell of [cells.hour, cells.day]) {
      cell.attempts++;
      if (kind === null) cell.successes++;
      else cell.failed[FAILURE_KINDS.indexOf(kind)]!++;
      if (latency >= 0) cell.latency[latency]!++;
    }
  }

  private cell(endpointId: string, period: StatsPeriod, t: number): Cell {
    const start = Math.floor(t / PERIOD_MS[period]) * PERIOD_MS[period];
    const key = `${endpointId} ${period} ${start}`;
    let cell = this.cells.get(key);
    if (!cell) {
      cell = newCell(endpointId, period, start);
      this.cells.set(key, cell);
    }
    return cell;
  }

  /**
   * Writes every waiting count in one statement. On failure the counts are kept for the next
   * flush and the error is thrown; counts added meanwhile are kept too.
   */
  async flush(database: Database): Promise<void> {
    if (this.cells.size === 0) return;
    const taken = this.cells;
    this.cells = new Map();
    this.last.clear();
    const cells = [...taken.values()].sort(
      (a, b) =>
        (a.endpointId < b.endpointId ? -1 : a.endpointId > b.endpointId ? 1 : 0) || a.period.localeCompare(b.period) || a.start - b.start,
    );
    const column = <T extends string | number>(f: (c: Cell) => T) => arrayLiteral(cells.map(f));
    try {
      const params: FlushParams = {
        endpoint_ids: column((c) => c.endpointId),
        periods: column((c) => c.period),
        start_ms: column((c) => c.start),
        attempts: column((c) => c.attempts),
        successes: column((c) => c.successes),
        latencies: column((c) => `{${c.latency.join(',')}}`),
      };
      FAILURE_KINDS.forEach((_, k) => {
        params[`f${k}`] = column((c) => c.failed[k]!);
      });
      await runAlone(database, FLUSH, params);
    } catch (err) {
      for (const [key, cell] of taken) this.merge(key, cell);
      throw err;
    }
  }

  private merge(key: string, cell: Cell): void {
    const into = this.cells.get(key);
    if (!into) {
      this.cells.set(key, cell);
      return;
    }
    into.attempts += cell.attempts;
    into.successes += cell.successes;
    for (let i = 0; i < cell.failed.length; i++) into.failed[i]! += cell.failed[i]!;
    for (let i = 0; i < cell.latency.length; i++) into.latency[i]! += cell.latency[i]!;
  }
}

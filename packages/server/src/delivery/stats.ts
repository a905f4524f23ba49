import type { Database } from '../db/client.ts';
import { runAlone, statement } from '../db/statement.ts';
import { AppError } from '../errors.ts';
import type { Scope } from '../scope.ts';
import { formatEventTimestamp } from '@payhooks/contract';
import { FAILURE_KINDS, LATENCY_BUCKETS, PERIOD_MS, percentile, type FailureKind, type StatsPeriod } from './attempt-stats.ts';

/** Answer times of a bucket: null when no attempt got an answer. */
export interface Latency {
  p50: number | null;
  p95: number | null;
  p99: number | null;
}

export interface StatsTotals {
  attempts: number;
  successes: number;
  failures: Record<FailureKind, number>;
  latency_ms: Latency;
}

export interface StatsPoint extends StatsTotals {
  /** The bucket's start (UTC, its hour or its day). */
  start: string;
}

export interface StatsSeries {
  granularity: StatsPeriod;
  from: string;
  until: string;
  totals: StatsTotals;
  /** Every bucket of the range, oldest first, with zeros where nothing was attempted. */
  data: StatsPoint[];
}

export interface StatsRange {
  granularity: StatsPeriod;
  from: Date;
  until: Date;
}

/** Hourly buckets are kept this long (db/retention.ts), and an hourly range is at most this wide. */
export const HOURLY_KEPT_MS = 8 * 86_400_000;
export const MAX_HOURLY_RANGE_MS = 7 * 86_400_000;
/** A daily range is at most this wide (and days are kept for the retention window). */
export const MAX_DAILY_RANGE_MS = 400 * 86_400_000;

const floorTo = (t: number, period: StatsPeriod) => Math.floor(t / PERIOD_MS[period]) * PERIOD_MS[period];

/**
 * The buckets a request asks for: `until` (exclusive) defaults to the end of the current bucket,
 * `from` to 24 hours (hourly) or 30 days (daily) before it; both are rounded down to a bucket's
 * start. Ranges wider than 7 days of hours, or hours older than they are kept, are refused with
 * what to ask instead.
 */
export function statsRange(
  q: { granularity?: StatsPeriod | undefined; from?: Date | undefined; until?: Date | undefined },
  now: Date,
): StatsRange {
  const granularity = q.granularity ?? 'hour';
  const period = PERIOD_MS[granularity];
  const until = q.until ? floorTo(q.until.getTime() + period - 1, granularity) : floorTo(now.getTime(), granularity) + period;
  const from = q.from ? floorTo(q.from.getTime(), granularity) : until - (granularity === 'hour' ? 24 : 30) * period;
  if (from >= until)
    throw new AppError('invalid_request', 'parameter_invalid', "'from' must be before 'until' (at least one bucket apart).", {
      param: 'from',
    });
  const max = granularity === 'hour' ? MAX_HOURLY_RANGE_MS : MAX_DAILY_RANGE_MS;
  if (until - from > max)
    throw new AppError(
      'invalid_request',
      'parameter_invalid',
      granularity === 'hour'
        ? 'An hourly range covers at most 7 days: narrow it, or ask granularity=day.'
        : 'A daily range covers at most 400 days: narrow it.',
      { param: 'from' },
    );
  if (granularity === 'hour' && from < floorTo(now.getTime(), 'hour') - HOURLY_KEPT_MS)
    throw new AppError('invalid_request', 'parameter_invalid', 'Hourly stats are kept for 8 days: ask a later from, or granularity=day.', {
      param: 'from',
    });
  return { granularity, from: new Date(from), until: new Date(until) };
}

interface Row {
  endpoint_id: string;
  start: Date;
  attempts: number;
  successes: number;
  failed_timeout: number;
  failed_connection: number;
  failed_tls: number;
  failed_http_4xx: number;
  failed_http_429: number;
  failed_http_5xx: number;
  failed_disabled: number;
  failed_other: number;
  latency: number[];
}

const COLUMNS = `endpoint_id, start, attempts, successes, failed_timeout, failed_connection, failed_tls, failed_http_4xx,
  failed_http_429, failed_http_5xx, failed_disabled, failed_other, latency`;

/** One endpoint's buckets, by its primary key. */
export const ENDPOINT_STATS = statement<
  { endpoint_id: string; period: string; from: Date; until: Date; platform_id: string; environment: string },
  Row
>(
  'endpoint_stats_one',
  `SELECT ${COLUMNS} FROM endpoint_stats
WHERE endpoint_id = :endpoint_id AND period = :period AND start >= :from AND start < :until AND platform_id = :platform_id AND environment = :environment`,
);

/** Every endpoint's buckets of one Platform and environment (endpoint_stats_platform_idx). */
export const PLATFORM_STATS = statement<{ platform_id: string; environment: string; period: string; from: Date; until: Date }, Row>(
  'endpoint_stats_platform',
  `SELECT ${COLUMNS} FROM endpoint_stats
WHERE platform_id = :platform_id AND environment = :environment AND period = :period AND start >= :from AND start < :until`,
);

/** A bucket's counts while they are summed: the histogram stays whole until the percentiles. */
interface Sum {
  attempts: number;
  successes: number;
  failed: number[];
  latency: number[];
}

const emptySum = (): Sum => ({
  attempts: 0,
  successes: 0,
  failed: new Array<number>(FAILURE_KINDS.length).fill(0),
  latency: new Array<number>(LATENCY_BUCKETS).fill(0),
});

function addRow(into: Sum, r: Row): void {
  into.attempts += r.attempts;
  into.successes += r.successes;
  const failed = [
    r.failed_timeout,
    r.failed_connection,
    r.failed_tls,
    r.failed_http_4xx,
    r.failed_http_429,
    r.failed_http_5xx,
    r.failed_disabled,
    r.failed_other,
  ];
  for (let i = 0; i < failed.length; i++) into.failed[i]! += failed[i]!;
  for (let i = 0; i < LATENCY_BUCKETS; i++) into.latency[i]! += r.latency[i] ?? 0;
}

function addSum(into: Sum, s: Sum): void {
  into.attempts += s.attempts;
  into.successes += s.successes;
  for (let i = 0; i < s.failed.length; i++) into.failed[i]! += s.failed[i]!;
  for (let i = 0; i < LATENCY_BUCKETS; i++) into.latency[i]! += s.latency[i]!;
}

function totalsOf(s: Sum): StatsTotals {
  return {
    attempts: s.attempts,
    successes: s.successes,
    failures: Object.fromEntries(FAILURE_KINDS.map((k, i) => [k, s.failed[i]!])) as Record<FailureKind, number>,
    latency_ms: { p50: percentile(s.latency, 0.5), p95: percentile(s.latency, 0.95), p99: percentile(s.latency, 0.99) },
  };
}

/** Sums rows into every bucket of the range (zeros where none) and the range's totals. */
function seriesOf(rows: Row[], range: StatsRange): { series: StatsSeries; perEndpoint: Map<string, Sum> } {
  const step = PERIOD_MS[range.granularity];
  const buckets = new Map<number, Sum>();
  for (let t = range.from.getTime(); t < range.until.getTime(); t += step) buckets.set(t, emptySum());
  const perEndpoint = new Map<string, Sum>();
  for (const r of rows) {
    const bucket = buckets.get(r.start.getTime());
    if (bucket) addRow(bucket, r);
    let e = perEndpoint.get(r.endpoint_id);
    if (!e) {
      e = emptySum();
      perEndpoint.set(r.endpoint_id, e);
    }
    addRow(e, r);
  }
  const all = emptySum();
  const data: StatsPoint[] = [];
  for (const [t, s] of buckets) {
    addSum(all, s);
    data.push({ start: formatEventTimestamp(new Date(t)), ...totalsOf(s) });
  }
  return {
    series: {
      granularity: range.granularity,
      from: formatEventTimestamp(range.from),
      until: formatEventTimestamp(range.until),
      totals: totalsOf(all),
      data,
    },
    perEndpoint,
  };
}

/** One endpoint's stats over the range (the caller has checked the endpoint is the scope's). */
export async function endpointSeries(database: Database, scope: Scope, endpointId: string, range: StatsRange): Promise<StatsSeries> {
  const rows = await runAlone(database, ENDPOINT_STATS, {
    endpoint_id: endpointId,
    period: range.granularity,
    from: range.from,
    until: range.until,
    platform_id: scope.platformId,
    environment: scope.environment,
  });
  return seriesOf(rows, range).series;
}

/** The Platform's stats in the scope's environment over the range, and each endpoint's totals. */
export async function platformSeries(
  database: Database,
  scope: Scope,
  range: StatsRange,
): Promise<StatsSeries & { endpoints: Array<{ endpoint_id: string } & StatsTotals> }> {
  const rows = await runAlone(database, PLATFORM_STATS, {
    platform_id: scope.platformId,
    environment: scope.environment,
    period: range.granularity,
    from: range.from,
    until: range.until,
  });
  const { series, perEndpoint } = seriesOf(rows, range);
  const endpoints = [...perEndpoint]
    .map(([endpoint_id, s]) => ({ endpoint_id, ...totalsOf(s) }))
    .sort((a, b) => b.attempts - a.attempts || (a.endpoint_id < b.endpoint_id ? -1 : 1));
  return { ...series, endpoints };
}

/** Attempts of the last 24 hours for one endpoint, overall and per hour (oldest hour first). */
export interface EndpointStats {
  attempts: number;
  succeeded: number;
  /** succeeded / attempts, or null with no attempts. */
  success_rate: number | null;
  /** 24 buckets of one hour each, index 23 = the current hour. */
  hourly: Array<{ attempts: number; succeeded: number }>;
}

const LAST_DAY = statement<
  { endpoint_ids: string[]; from: Date; until: Date; platform_id: string; environment: string },
  { endpoint_id: string; start: Date; attempts: number; successes: number }
>(
  'endpoint_stats_24h',
  `SELECT endpoint_id, start, attempts, successes FROM endpoint_stats
   WHERE endpoint_id = ANY(:endpoint_ids::text[]) AND period = 'hour' AND start >= :from AND start < :until
     AND platform_id = :platform_id AND environment = :environment`,
);

/**
 * The portal list's 24-hour figure per endpoint, from the same hourly buckets: the current hour
 * and the 23 before it. One statement for a page of endpoints.
 */
export async function endpointStats(
  database: Database,
  scope: Scope,
  endpointIds: string[],
  now: Date,
): Promise<Map<string, EndpointStats>> {
  const out = new Map<string, EndpointStats>();
  for (const id of endpointIds)
    out.set(id, {
      attempts: 0,
      succeeded: 0,
      success_rate: null,
      hourly: Array.from({ length: 24 }, () => ({ attempts: 0, succeeded: 0 })),
    });
  if (endpointIds.length === 0) return out;
  // The API's default range: the current hour and the 23 before it.
  const { from, until } = statsRange({}, now);
  const rows = await runAlone(database, LAST_DAY, {
    endpoint_ids: endpointIds,
    from,
    until,
    platform_id: scope.platformId,
    environment: scope.environment,
  });
  for (const r of rows) {
    const s = out.get(r.endpoint_id)!;
    const b = s.hourly[Math.round((r.start.getTime() - from.getTime()) / PERIOD_MS.hour)];
    if (!b) continue;
    b.attempts += r.attempts;
    b.succeeded += r.successes;
    s.attempts += r.attempts;
    s.succeeded += r.successes;
  }
  for (const s of out.values()) s.success_rate = s.attempts === 0 ? null : s.succeeded / s.attempts;
  return out;
}

import { writeFileSync } from 'node:fs';
/**
 * The scenarios of the reference benchmark. Each one gets a scratch database cloned from a
 * migrated template, real `payhooks worker` processes (or the graphile-worker baseline process),
 * the shared receiver processes, and the shared publisher process.
 */
import { randomBytes } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import type pg from 'pg';
import { pino } from 'pino';
import { openDatabase } from '../../packages/server/src/db/client.ts';
import { loadConfig } from '../../packages/server/src/config.ts';
import { systemClock } from '../../packages/server/src/clock.ts';
import { createContext } from '../../packages/server/src/context.ts';
import { createPlatform } from '../../packages/server/src/tenancy/platforms.ts';
import { ask, forkTs, startWorker, childOf, type Child } from './processes.ts';
import type { PublishRequest } from './publisher.ts';
import type { Receivers } from './receivers.ts';
import type { BrokerSinks } from './brokers.ts';
import { cpuMsOfAll } from './machine.ts';
import { ProcSampler } from './sampler.ts';
import { now, percentiles, perSecond, round, sleep, type Percentiles } from './stats.ts';

/** 50 attempts in flight whatever the number of endpoints: the ceiling's and the baseline's concurrency. */
export const IN_FLIGHT = 50;
/** Worker settings of the throughput and latency scenarios (one Platform; see bench/README.md). */
export const BENCH_WORKER_ENV = {
  PAYHOOKS_WORKER_CONCURRENCY: String(IN_FLIGHT),
  PAYHOOKS_ENDPOINT_CONCURRENCY: String(IN_FLIGHT),
  PAYHOOKS_PLATFORM_SHARE: '1',
};
/**
 * Requests (ceiling) or deliveries (drains) whose CPU is not counted: connections opened, code
 * compiled. Client and worker alike; a drain smaller than twice this counts its second half. A
 * fifth of a --quick run was 600 requests, after which the bare client still spent 2-3x its
 * steady CPU per request (0.09 ms against 0.03-0.04).
 */
export const WARM_UP = 2000;
/** Isolation and fan-out run the worker with its shipped defaults: the per-endpoint cap is what isolates. */
export const DEFAULT_WORKER_ENV = {};

export interface Env {
  admin: pg.Client;
  adminUrl: string;
  template: string;
  receivers: Receivers;
  publisher: ChildProcess;
  encryptionKey: Buffer;
  log: (line: string) => void;
  /** Every database made, dropped at the end. */
  databases: string[];
}

export interface Scratch {
  name: string;
  url: string;
  sampler: ProcSampler;
}

export async function scratch(env: Env, fromTemplate: boolean): Promise<Scratch> {
  const name = `payhooks_bench_${randomBytes(5).toString('hex')}`;
  await env.admin.query(`CREATE DATABASE ${name} TEMPLATE ${fromTemplate ? env.template : 'template0'}`);
  env.databases.push(name);
  const url = new URL(env.adminUrl);
  url.pathname = `/${name}`;
  return { name, url: url.toString(), sampler: new ProcSampler(env.admin, name, env.receivers.pids) };
}

export async function drop(env: Env, db: Scratch): Promise<void> {
  db.sampler.stop();
  await env.admin.query(`DROP DATABASE IF EXISTS ${db.name} WITH (FORCE)`);
  env.databases = env.databases.filter((n) => n !== db.name);
}

export interface Endpoint {
  id: string;
  url: string;
  secret: string;
}

/** A Platform with `urls.length` endpoints subscribed to every event, made through the service's own functions. */
export async function setupPlatform(
  env: Env,
  db: Scratch,
  urls: string[],
  options: { ordered?: boolean } = {},
): Promise<{ merchantId: string; endpoints: Endpoint[] }> {
  const database = await openDatabase({ databaseUrl: db.url, dataDir: undefined, poolSize: 8 });
  try {
    const config = loadConfig({}, { databaseUrl: db.url, allowPrivateUrls: true, logLevel: 'silent' });
    const ctx = createContext({
      config,
      database,
      clock: systemClock,
      logger: pino({ level: 'silent' }),
      encryptionKey: env.encryptionKey,
    });
    const platform = await createPlatform(database.db, 'bench');
    const scope = { platformId: platform.platform_id, environment: 'sandbox' as const, actor: { type: 'operator' as const, id: 'bench' } };
    const endpoints: Endpoint[] = new Array(urls.length);
    let next = 0;
    await Promise.all(
      Array.from({ length: 6 }, async () => {
        while (next < urls.length) {
          const i = next++;
          const e = await ctx.endpoints.create(scope, {
            url: urls[i]!,
            enabled_events: ['*'],
            ...(options.ordered ? { delivery_order: 'per_object' as const } : {}),
          });
          endpoints[i] = { id: e.id, url: urls[i]!, secret: e.secret };
        }
      }),
    );
    await ctx.close();
    return { merchantId: platform.merchant_id, endpoints };
  } finally {
    await database.close();
  }
}

/** Runs one publish request in the publisher process; resolves with each event's commit time. */
export async function publish(
  env: Env,
  req: PublishRequest,
): Promise<{ commits: Map<string, number>; ms: number; published: number; startedAt: number }> {
  const commits = new Map<string, number>();
  const startedAt = now();
  const done = await ask<{ published: number; ms: number; t0: number }>(env.publisher, req, 'done', (m) => {
    if (m?.type === 'commits') for (const [id, t] of m.list as [string, number][]) commits.set(id, t);
  });
  return { commits, ms: done.ms, published: done.published, startedAt: done.t0 ?? startedAt };
}

function startBaseline(db: Scratch): Promise<Child> {
  const child = forkTs('./baseline-worker.ts', {
    BENCH_DATABASE_URL: db.url,
    BENCH_CONCURRENCY: String(IN_FLIGHT),
    PGAPPNAME: 'bench-worker-baseline',
  });
  return ask(child, { type: 'hello' }, 'ready').then(() => childOf(child));
}

export async function startWorkers(env: Env, db: Scratch, count: number, workerEnv: Record<string, string>): Promise<Child[]> {
  return Promise.all(
    Array.from({ length: count }, (_, i) =>
      startWorker({ databaseUrl: db.url, encryptionKeyHex: env.encryptionKey.toString('hex'), env: workerEnv, name: String(i) }),
    ),
  );
}

export interface Claims {
  /** Claim statements per delivery, over every worker process (from their /metrics). */
  per_delivery: number;
  /** Deliveries leased per claim statement, on average. */
  mean_batch: number;
}

type ClaimCounters = { claims: number; claimed: number } | null;

/** The workers' claim counters, summed; null for the baseline (it has none). */
async function claimCounters(workers: Child[]): Promise<ClaimCounters> {
  const sum = { claims: 0, claimed: 0 };
  for (const w of workers) {
    if (!w.metricsUrl) return null;
    const text = await (await fetch(w.metricsUrl)).text();
    sum.claims += Number(/^payhooks_delivery_claims_total (\d+)$/m.exec(text)?.[1] ?? Number.NaN);
    sum.claimed += Number(/^payhooks_delivery_claimed_total (\d+)$/m.exec(text)?.[1] ?? Number.NaN);
  }
  return Number.isFinite(sum.claims) ? sum : null;
}

function claimsBetween(before: ClaimCounters, after: ClaimCounters, deliveries: number): Claims | null {
  if (!before || !after || after.claims === before.claims) return null;
  const claims = after.claims - before.claims;
  return { per_delivery: round(claims / Math.max(1, deliveries), 3), mean_batch: round((after.claimed - before.claimed) / claims, 1) };
}

export interface CpuPerDelivery {
  worker_ms: number;
  /** The PostgreSQL backends serving the worker processes. */
  postgres_ms: number;
  /** The five receiver processes: what answering costs, the same work the ceiling pays for. */
  receivers_ms: number;
}

function cpuPer(db: Scratch, t1: number, t2: number, deliveries: number): CpuPerDelivery {
  const w = db.sampler.window(t1, t2);
  const per = (ms: number) => round(ms / Math.max(1, deliveries), 3);
  return { worker_ms: per(w.worker), postgres_ms: per(w.pgWorker), receivers_ms: per(w.receivers) };
}

export interface DrainResult {
  target: 'payhooks' | 'graphile-worker';
  endpoints: number;
  events: number;
  deliveries: number;
  worker_processes: number;
  /** Events/s while publishing the backlog (no worker running). */
  publish_per_s: number;
  /** Deliveries/s from the first to the last arrival at the receivers. */
  throughput_per_s: number;
  drain_s: number;
  delivered: number;
  duplicates: number;
  cpu_per_delivery: CpuPerDelivery;
  /** payhooks only: claim statements per delivery and the mean claim batch. */
  claims: Claims | null;
  worker_peak_rss_mib: number;
  /** WAL bytes PostgreSQL wrote per delivery while draining (pg_stat_wal, the whole cluster: nothing else runs). */
  wal_bytes_per_delivery: number;
  /** Rows each table had inserted, updated (of which HOT) and deleted per delivery while draining. */
  rows_per_delivery: Record<string, { ins: number; upd: number; hot: number; del: number }>;
}

/** `fn` on a connection of its own to `db`, closed after. */
async function onScratch<T>(db: Scratch, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const { default: pgModule } = await import('pg');
  const client = new pgModule.Client({ connectionString: db.url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** What PostgreSQL has written: the cluster's WAL bytes, and the rows of each table of `db`. */
function writeCounters(db: Scratch): Promise<{ wal: number; tables: Map<string, number[]> }> {
  return onScratch(db, async (client) => {
    const [wal] = (await client.query<{ wal_bytes: string }>('SELECT wal_bytes FROM pg_stat_wal')).rows;
    const rows = await client.query<{ relname: string; ins: string; upd: string; hot: string; del: string }>(
      `SELECT relname, n_tup_ins AS ins, n_tup_upd AS upd, n_tup_hot_upd AS hot, n_tup_del AS del FROM pg_stat_user_tables`,
    );
    const tables = new Map<string, number[]>();
    for (const r of rows.rows) {
      // Partitions count under their table (delivery_attempts_2026w49 -> delivery_attempts).
      const name = r.relname.replace(/_(\d{4}w\d{2}|default|p\d+)$/, '');
      const sum = tables.get(name) ?? [0, 0, 0, 0];
      [r.ins, r.upd, r.hot, r.del].forEach((v, i) => {
        sum[i]! += Number(v);
      });
      tables.set(name, sum);
    }
    return { wal: Number(wal!.wal_bytes), tables };
  });
}

function writesPer(before: Awaited<ReturnType<typeof writeCounters>>, after: typeof before, deliveries: number) {
  const per = (n: number) => round(n / deliveries, 3);
  const rows: DrainResult['rows_per_delivery'] = {};
  for (const [table, a] of after.tables) {
    const b = before.tables.get(table) ?? [0, 0, 0, 0];
    const d = a.map((v, i) => v - b[i]!);
    if (d.some((v) => v !== 0)) rows[table] = { ins: per(d[0]!), upd: per(d[1]!), hot: per(d[2]!), del: per(d[3]!) };
  }
  return { wal_bytes_per_delivery: Math.round((after.wal - before.wal) / deliveries), rows_per_delivery: rows };
}

/**
 * A backlog of `events` x `endpoints` deliveries published with no worker running, then drained
 * by `workers` worker processes (or the baseline). Throughput: deliveries from the first to the
 * last arrival, so process start-up is not counted.
 */
export async function backlog(
  env: Env,
  o: {
    target: 'payhooks' | 'graphile';
    endpoints: number;
    events: number;
    workers?: number;
    timeoutMs: number;
    ordered?: boolean;
    /** Endpoints on a message broker instead of the HTTP receivers (payhooks only). */
    broker?: { kind: 'amqp' | 'nats'; sinks: BrokerSinks };
    /** More environment for the worker processes (OTEL_* for the tracing figure). */
    workerEnv?: Record<string, string>;
  },
): Promise<DrainResult> {
  const db = await scratch(env, o.target === 'payhooks');
  try {
    const urls = Array.from({ length: o.endpoints }, (_, i) => (o.broker ? o.broker.sinks.url(o.broker.kind, i) : env.receivers.url(i)));
    let merchantId = 'mer_baseline';
    let endpoints: Endpoint[];
    if (o.target === 'payhooks') ({ merchantId, endpoints } = await setupPlatform(env, db, urls, { ordered: o.ordered }));
    else endpoints = urls.map((url, i) => ({ id: `we_${i}`, url, secret: `whsec_${randomBytes(24).toString('base64url')}` }));
    const total = o.events * o.endpoints;
    env.log(`  publishing ${o.events} events x ${o.endpoints} endpoints (${o.target})`);
    // Batches of 50 events per transaction; with 100 endpoints an event is 100 rows, so fewer at a time.
    const pub = await publish(env, {
      mode: 'burst',
      target: o.target,
      databaseUrl: db.url,
      merchantId,
      endpoints,
      events: o.events,
      batch: o.endpoints >= 100 ? 5 : 50,
      concurrency: 4,
    });
    env.receivers.arrivals.reset();
    const written = await writeCounters(db);
    db.sampler.start([]);
    const workers =
      o.target === 'payhooks'
        ? await startWorkers(env, db, o.workers ?? 1, { ...BENCH_WORKER_ENV, ...o.workerEnv })
        : [await startBaseline(db)];
    const allReady = workers.length > 1 ? now() : 0;
    for (const w of workers) db.sampler.addWorker(w.pid);
    const a = env.receivers.arrivals;
    const complete = await a.waitFor(total, o.timeoutMs);
    if (!complete) env.log(`  ! only ${a.count} of ${total} deliveries arrived within ${o.timeoutMs / 1000} s`);
    await sleep(300); // a duplicate sent late still shows up
    await db.sampler.sample();
    // With several processes, count only from the moment all of them are running.
    const times = [...a.at.values()].filter((t) => t >= allReady).sort((x, y) => x - y);
    const first = times[0] ?? a.first;
    const counted = times.length || a.count;
    const drainMs = a.last - first;
    // CPU is counted after the warm-up the ceiling client has too: the first deliveries pay for
    // JIT compilation, receiver connections and prepared statements. Throughput still counts
    // every delivery.
    const warm = Math.min(WARM_UP, Math.floor(counted / 2));
    const warmAt = times[warm] ?? first;
    const result: DrainResult = {
      target: o.target === 'payhooks' ? 'payhooks' : 'graphile-worker',
      endpoints: o.endpoints,
      events: o.events,
      deliveries: total,
      worker_processes: workers.length,
      publish_per_s: perSecond(pub.published, pub.ms),
      throughput_per_s: perSecond(counted - 1, drainMs),
      drain_s: round(drainMs / 1000),
      delivered: a.count,
      duplicates: a.duplicates,
      cpu_per_delivery: cpuPer(db, warmAt, a.last, times.length ? counted - warm : counted),
      claims: claimsBetween({ claims: 0, claimed: 0 }, await claimCounters(workers), total),
      worker_peak_rss_mib: db.sampler.peakRssMib(),
      wal_bytes_per_delivery: 0,
      rows_per_delivery: {},
    };
    await Promise.all(workers.map((w) => w.kill()));
    // After the workers exit: a backend's table counters reach the shared statistics by then.
    Object.assign(result, writesPer(written, await writeCounters(db), total));
    return result;
  } finally {
    await drop(env, db);
  }
}

/**
 * How the latency came back after the rate rose to this phase's (from the previous phase's, with
 * no pause between): deliveries bucketed by commit time in 250 ms windows from the rise, each
 * window's p99; `settle_s` is when the first second of windows all under `threshold_ms` begins
 * (0: never above it), null if that never happened in the phase.
 */
export interface StepResponse {
  from_per_s: number;
  to_per_s: number;
  threshold_ms: number;
  settle_s: number | null;
  /** The worst window's p99 after the rise. */
  peak_window_p99_ms: number;
}

export interface LatencyResult {
  /** For every phase after the first: the rise into it. */
  step?: StepResponse;
  offered_deliveries_per_s: number;
  events_per_s: number;
  seconds: number;
  deliveries: number;
  delivered: number;
  latency_ms: Percentiles;
  cpu_per_delivery: CpuPerDelivery;
  /** payhooks only: claim statements per delivery and the mean claim batch. */
  claims: Claims | null;
}

/**
 * Publish commit -> receiver for every (event, endpoint) of `commits`; `points` pairs each
 * latency with its commit time (for BENCH_LATENCY_TRACE).
 */
function latencies(
  env: Env,
  commits: Map<string, number>,
  paths: string[],
): { values: number[]; delivered: number; points: Array<[number, number]> } {
  const points: Array<[number, number]> = [];
  for (const [id, committed] of commits) {
    for (const p of paths) {
      const at = env.receivers.arrivals.at.get(`${id}|${p}`);
      if (at !== undefined) points.push([committed, at - committed]);
    }
  }
  const values = points.map(([, ms]) => ms);
  return { values, delivered: values.length, points };
}

const pathOf = (url: string) => new URL(url).pathname;

/**
 * Waits until every (event, endpoint) of `commits` arrived, or `timeoutMs`: counting arrivals
 * alone would let stragglers of an earlier phase stand in for this one's.
 */
async function waitForAll(env: Env, commits: Map<string, number>, paths: string[], timeoutMs: number): Promise<boolean> {
  const deadline = now() + timeoutMs;
  const missing = new Set<string>();
  for (const id of commits.keys()) for (const p of paths) missing.add(`${id}|${p}`);
  for (;;) {
    for (const key of missing) if (env.receivers.arrivals.at.has(key)) missing.delete(key);
    if (missing.size === 0) return true;
    if (now() > deadline) {
      env.log(`  ! ${missing.size} of ${commits.size * paths.length} deliveries had not arrived after ${timeoutMs / 1000} s`);
      return false;
    }
    await sleep(50);
  }
}

const STEP_WINDOW_MS = 250;
const STEP_THRESHOLD_MS = 50;

function stepResponse(points: Array<[number, number]>, riseAt: number, fromPerS: number, toPerS: number): StepResponse {
  const windows: number[][] = [];
  for (const [committed, ms] of points) {
    if (committed < riseAt) continue;
    const i = Math.floor((committed - riseAt) / STEP_WINDOW_MS);
    windows[i] ??= [];
    windows[i].push(ms);
  }
  const p99s = Array.from(windows, (w) => (w?.length ? percentiles(w).p99 : 0));
  const span = 1000 / STEP_WINDOW_MS; // a second of windows
  let settle: number | null = null;
  for (let i = 0; i + span <= p99s.length; i++) {
    if (p99s.slice(i, i + span).every((p) => p <= STEP_THRESHOLD_MS)) {
      settle = round((i * STEP_WINDOW_MS) / 1000, 2);
      break;
    }
  }
  return {
    from_per_s: fromPerS,
    to_per_s: toPerS,
    threshold_ms: STEP_THRESHOLD_MS,
    settle_s: settle,
    peak_window_p99_ms: Math.max(0, ...p99s),
  };
}

/**
 * A running worker (or the baseline) and events published one per transaction at fixed rates,
 * each to `endpoints` endpoints; latency = publish commit -> the receiver has the request.
 */
export async function latency(
  env: Env,
  o: { target: 'payhooks' | 'graphile'; endpoints: number; ratesPerS: number[]; seconds: number; warmupS: number },
): Promise<LatencyResult[]> {
  const db = await scratch(env, o.target === 'payhooks');
  try {
    const urls = Array.from({ length: o.endpoints }, (_, i) => env.receivers.url(i));
    let merchantId = 'mer_baseline';
    let endpoints: Endpoint[];
    if (o.target === 'payhooks') ({ merchantId, endpoints } = await setupPlatform(env, db, urls));
    else {
      endpoints = urls.map((url, i) => ({ id: `we_${i}`, url, secret: `whsec_${randomBytes(24).toString('base64url')}` }));
      await publish(env, { mode: 'burst', target: 'graphile', databaseUrl: db.url, merchantId, endpoints: [], events: 0 }); // creates graphile's schema
    }
    db.sampler.start([]);
    const workers = o.target === 'payhooks' ? await startWorkers(env, db, 1, BENCH_WORKER_ENV) : [await startBaseline(db)];
    for (const w of workers) db.sampler.addWorker(w.pid);
    const out: LatencyResult[] = [];
    const paths = urls.map(pathOf);
    for (const rate of o.ratesPerS) {
      const eventsPerS = rate / o.endpoints;
      // One schedule: a warm-up at this rate, then the measured seconds, without a pause between
      // them. The warm-up (connections, statements prepared, JIT) is not measured; the measured
      // part starts with the system already at the rate. The harness once waited for the
      // warm-up's deliveries and then started the measured part from idle: a ramp from zero at
      // every phase's start, which cost 50-300 ms of latency in its first second in about half
      // the runs (bench/README.md, history).
      env.receivers.arrivals.reset();
      env.log(
        `  ${o.target}: ${rate} deliveries/s (${round(eventsPerS, 1)} events/s x ${o.endpoints} endpoints) for ${o.seconds} s, after ${o.warmupS} s of warm-up at that rate`,
      );
      let countersBefore: Promise<ClaimCounters> = Promise.resolve(null);
      const boundary = setTimeout(() => {
        countersBefore = claimCounters(workers);
      }, o.warmupS * 1000);
      const pub = await publish(env, {
        mode: 'rate',
        target: o.target,
        databaseUrl: db.url,
        merchantId,
        endpoints,
        ratePerS: eventsPerS,
        seconds: o.warmupS + o.seconds,
      });
      clearTimeout(boundary);
      const t1 = pub.startedAt + o.warmupS * 1000;
      const measured = new Map([...pub.commits].filter(([, committed]) => committed >= t1));
      const expected = measured.size * o.endpoints;
      await waitForAll(env, pub.commits, paths, 30_000);
      // The rise from the previous rate: every delivery of this phase, warm-up included.
      const previous = o.ratesPerS[o.ratesPerS.indexOf(rate) - 1];
      const step =
        previous === undefined ? undefined : stepResponse(latencies(env, pub.commits, paths).points, pub.startedAt, previous, rate);
      await db.sampler.sample();
      const t2 = Math.max(env.receivers.arrivals.last, t1 + 1);
      const lat = latencies(env, measured, paths);
      // BENCH_LATENCY_TRACE=dir: every delivery's (commit time, latency), to see when the tail happens.
      if (process.env.BENCH_LATENCY_TRACE) {
        const lines = lat.points.map(([committed, ms]) => `${round(committed, 1)} ${round(ms, 1)}`);
        writeFileSync(`${process.env.BENCH_LATENCY_TRACE}/${o.target}-${rate}.txt`, `${lines.join('\n')}\n`);
      }
      out.push({
        ...(step ? { step } : {}),
        offered_deliveries_per_s: rate,
        events_per_s: round(eventsPerS, 1),
        seconds: o.seconds,
        deliveries: expected,
        delivered: lat.delivered,
        latency_ms: percentiles(lat.values),
        cpu_per_delivery: cpuPer(db, t1, t2, lat.delivered),
        claims: claimsBetween(await countersBefore, await claimCounters(workers), lat.delivered),
      });
    }
    await Promise.all(workers.map((w) => w.kill()));
    return out;
  } finally {
    await drop(env, db);
  }
}

export interface PipelineResult {
  endpoints: number;
  events: number;
  deliveries: number;
  publish_per_s: number;
  /** Deliveries/s from the first publish to the last arrival. */
  throughput_per_s: number;
  latency_ms: Percentiles;
  duplicates: number;
}

/** A running worker while the publisher process publishes a burst (4 transactions of 50 events at a time). */
export async function pipeline(env: Env, o: { endpoints: number; events: number; timeoutMs: number }): Promise<PipelineResult> {
  const db = await scratch(env, true);
  try {
    const urls = Array.from({ length: o.endpoints }, (_, i) => env.receivers.url(i));
    const { merchantId } = await setupPlatform(env, db, urls);
    const [worker] = await startWorkers(env, db, 1, BENCH_WORKER_ENV);
    env.receivers.arrivals.reset();
    const pub = await publish(env, {
      mode: 'burst',
      target: 'payhooks',
      databaseUrl: db.url,
      merchantId,
      events: o.events,
      batch: 50,
      concurrency: 4,
    });
    const total = o.events * o.endpoints;
    await waitForAll(env, pub.commits, urls.map(pathOf), o.timeoutMs);
    await sleep(300);
    const lat = latencies(env, pub.commits, urls.map(pathOf));
    await worker!.kill();
    return {
      endpoints: o.endpoints,
      events: o.events,
      deliveries: total,
      publish_per_s: perSecond(pub.published, pub.ms),
      throughput_per_s: perSecond(env.receivers.arrivals.count, env.receivers.arrivals.last - pub.startedAt),
      latency_ms: percentiles(lat.values),
      duplicates: env.receivers.arrivals.duplicates,
    };
  } finally {
    await drop(env, db);
  }
}

export interface PublishRate {
  endpoints_per_event: number;
  /** Transactions of 50 events, 4 at a time. */
  batched_events_per_s: number;
  /** One event per transaction, 8 at a time. */
  single_events_per_s: number;
  /** The SQL function `payhooks.publish_event`, one event per transaction, 8 at a time. */
  sql_function_events_per_s: number;
}

/** `publishEvent` alone (no worker running): batched and one event per transaction; then the SQL function. */
export async function publishRate(env: Env, o: { endpoints: number; events: number }): Promise<PublishRate> {
  const db = await scratch(env, true);
  try {
    const urls = Array.from({ length: o.endpoints }, (_, i) => env.receivers.url(i));
    const { merchantId } = await setupPlatform(env, db, urls);
    // Warm-up, both ways: the single-event run's 8 connections are open and its statement
    // prepared on each before anything is timed (the batched run keeps 4 of them busy), and the
    // publisher's code is compiled. After 200 one-event transactions V8 was still optimising it:
    // the publisher spent 470-565 µs of CPU per event over the next 500, 210 µs after 2,000
    // (bench/publish-cpu.ts with WARM=200 / 2000 N=500, docs/performance.md).
    await publish(env, { mode: 'burst', target: 'payhooks', databaseUrl: db.url, merchantId, events: 200, batch: 50, concurrency: 4 });
    await publish(env, { mode: 'burst', target: 'payhooks', databaseUrl: db.url, merchantId, events: 2000, batch: 1, concurrency: 8 });
    const batched = await publish(env, {
      mode: 'burst',
      target: 'payhooks',
      databaseUrl: db.url,
      merchantId,
      events: o.events,
      batch: 50,
      concurrency: 4,
    });
    const single = await publish(env, {
      mode: 'burst',
      target: 'payhooks',
      databaseUrl: db.url,
      merchantId,
      events: Math.round(o.events / 2),
      batch: 1,
      concurrency: 8,
    });
    // The SQL function, one event per transaction as the one-event run, after its own warm-up.
    await publish(env, { mode: 'burst', target: 'payhooks-sql', databaseUrl: db.url, merchantId, events: 1000, batch: 1, concurrency: 8 });
    const sqlFunction = await publish(env, {
      mode: 'burst',
      target: 'payhooks-sql',
      databaseUrl: db.url,
      merchantId,
      events: Math.round(o.events / 2),
      batch: 1,
      concurrency: 8,
    });
    return {
      endpoints_per_event: o.endpoints,
      batched_events_per_s: perSecond(batched.published, batched.ms),
      single_events_per_s: perSecond(single.published, single.ms),
      sql_function_events_per_s: perSecond(sqlFunction.published, sqlFunction.ms),
    };
  } finally {
    await drop(env, db);
  }
}

export interface IsolationPhase {
  /** Mean over the rounds. */
  healthy_throughput_per_s: number;
  rounds_per_s: number[];
  /** Over every round's fixed-rate phase together. */
  healthy_latency_ms: Percentiles;
}

export interface IsolationResult {
  healthy_endpoints: number;
  never_answering_endpoints: number;
  rounds: number;
  alone: IsolationPhase;
  beside_never_answering: IsolationPhase;
  /** 1 - beside / alone, of the healthy endpoints' backlog throughput. */
  throughput_loss: number;
  p99_ratio: number;
}

/**
 * Healthy endpoints alone, then beside an endpoint that takes the request and never answers
 * (every event goes to all of them), alternated for `rounds` rounds so a change in the machine's
 * load hits both sides alike. Each phase: a backlog drain (throughput) and then a fixed rate
 * (latency). Worker defaults, so the per-endpoint cap is what keeps them apart.
 */
export async function isolation(
  env: Env,
  o: { healthy: number; events: number; ratePerS: number; seconds: number; rounds: number; timeoutMs: number },
): Promise<IsolationResult> {
  const phase = async (withDead: boolean): Promise<{ throughput: number; latencies: number[] }> => {
    const db = await scratch(env, true);
    try {
      const urls = Array.from({ length: o.healthy }, (_, i) => env.receivers.url(i));
      const all = withDead ? [...urls, env.receivers.url(o.healthy, 'dead/')] : urls;
      const { merchantId } = await setupPlatform(env, db, all);
      await publish(env, {
        mode: 'burst',
        target: 'payhooks',
        databaseUrl: db.url,
        merchantId,
        events: o.events,
        batch: 50,
        concurrency: 4,
      });
      const a = env.receivers.arrivals;
      a.reset();
      const [worker] = await startWorkers(env, db, 1, DEFAULT_WORKER_ENV);
      await a.waitFor(o.events * o.healthy, o.timeoutMs);
      const throughput = perSecond(a.count - 1, a.last - a.first);
      await sleep(1000); // the backlog's last outcomes recorded before the timed phase
      a.reset();
      const pub = await publish(env, {
        mode: 'rate',
        target: 'payhooks',
        databaseUrl: db.url,
        merchantId,
        ratePerS: o.ratePerS / o.healthy,
        seconds: o.seconds,
      });
      await waitForAll(env, pub.commits, urls.map(pathOf), 30_000);
      const lat = latencies(env, pub.commits, urls.map(pathOf));
      await worker!.kill(); // the dead endpoint's connections are cut with it
      return { throughput, latencies: lat.values };
    } finally {
      await drop(env, db);
    }
  };
  const alone: Array<{ throughput: number; latencies: number[] }> = [];
  const beside: Array<{ throughput: number; latencies: number[] }> = [];
  for (let r = 1; r <= o.rounds; r++) {
    env.log(`  round ${r}/${o.rounds}: healthy endpoints alone`);
    alone.push(await phase(false));
    env.log(`  round ${r}/${o.rounds}: beside a never-answering endpoint`);
    beside.push(await phase(true));
  }
  const summary = (xs: Array<{ throughput: number; latencies: number[] }>): IsolationPhase => ({
    healthy_throughput_per_s: Math.round(xs.reduce((sum, x) => sum + x.throughput, 0) / xs.length),
    rounds_per_s: xs.map((x) => x.throughput),
    healthy_latency_ms: percentiles(xs.flatMap((x) => x.latencies)),
  });
  const a = summary(alone);
  const b = summary(beside);
  return {
    healthy_endpoints: o.healthy,
    never_answering_endpoints: 1,
    rounds: o.rounds,
    alone: a,
    beside_never_answering: b,
    throughput_loss: round(1 - b.healthy_throughput_per_s / a.healthy_throughput_per_s, 3),
    p99_ratio: round(b.healthy_latency_ms.p99 / a.healthy_latency_ms.p99, 2),
  };
}

export interface FanoutResult {
  endpoints: number;
  runs_ms: number[];
  /** Median over the runs: publish commit -> the last of the endpoints has the request. */
  last_arrival_ms: number;
  first_arrival_ms: number;
}

/** One event to `endpoints` endpoints, connections warmed by a first event; time to the last arrival. */
export async function fanout(env: Env, o: { endpoints: number; runs: number; timeoutMs: number }): Promise<FanoutResult> {
  const db = await scratch(env, true);
  try {
    const urls = Array.from({ length: o.endpoints }, (_, i) => env.receivers.url(i));
    env.log(`  creating ${o.endpoints} endpoints`);
    const { merchantId } = await setupPlatform(env, db, urls);
    const [worker] = await startWorkers(env, db, 1, DEFAULT_WORKER_ENV);
    const a = env.receivers.arrivals;
    const runs: number[] = [];
    const firsts: number[] = [];
    for (let r = -1; r < o.runs; r++) {
      a.reset();
      const pub = await publish(env, {
        mode: 'burst',
        target: 'payhooks',
        databaseUrl: db.url,
        merchantId,
        events: 1,
        batch: 1,
        concurrency: 1,
      });
      const complete = await a.waitFor(o.endpoints, o.timeoutMs);
      if (!complete) env.log(`  ! ${a.count} of ${o.endpoints} arrived`);
      const committed = [...pub.commits.values()][0]!;
      if (r >= 0) {
        runs.push(Math.round(a.last - committed));
        firsts.push(Math.round(a.first - committed));
      }
      await sleep(200);
    }
    await worker!.kill();
    const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
    return { endpoints: o.endpoints, runs_ms: runs, last_arrival_ms: median(runs), first_arrival_ms: median(firsts) };
  } finally {
    await drop(env, db);
  }
}

export interface CeilingResult {
  requests: number;
  in_flight: number;
  per_s: number;
  errors: number;
  /** CPU per request over the measured requests: the client process and the receivers. */
  cpu_per_request: { client_ms: number; receivers_ms: number };
}

/** A bare undici client, 50 in flight, to the same receivers (round robin over 100 paths). */
export async function ceiling(env: Env, o: { requests: number; record?: boolean }): Promise<CeilingResult> {
  // The recording ceiling writes each outcome to a table of its own in a scratch database.
  const db = o.record ? await scratch(env, false) : null;
  try {
    if (db)
      await onScratch(db, (client) =>
        client.query('CREATE TABLE recorded (request int NOT NULL, status int NOT NULL, response text, recorded_at timestamptz NOT NULL)'),
      );
    const result = await ceilingRun(env, o.requests, db);
    if (db) {
      // Every outcome, the warm-up's included, is in the table: the figure is of a client that recorded.
      const recorded = await onScratch(db, async (client) =>
        Number((await client.query<{ n: string }>('SELECT count(*) AS n FROM recorded')).rows[0]!.n),
      );
      if (recorded !== o.requests + WARM_UP) throw new Error(`recording ceiling: ${recorded} rows recorded of ${o.requests + WARM_UP}`);
    }
    return result;
  } finally {
    if (db) await drop(env, db);
  }
}

async function ceilingRun(env: Env, requests: number, db: Scratch | null): Promise<CeilingResult> {
  const { fork } = await import('node:child_process');
  const child = fork(new URL('./ceiling-client.mjs', import.meta.url), { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const body = JSON.stringify({
    id: 'evt_0000000000000000000000',
    object: 'event',
    type: 'payment.succeeded',
    api_version: '2026-01-01',
    environment: 'sandbox',
    merchant_id: 'mer_000000000000000000',
    created_at: '2026-01-01T00:00:00Z',
    data: {
      object: {
        id: 'pay_0',
        object: 'payment',
        status: 'succeeded',
        amount: '10.00',
        asset_code: 'USDC.ETH',
        metadata: { order: 'ord_0' },
      },
    },
  });
  const urls = Array.from({ length: 100 }, (_, i) => env.receivers.url(i, 'c'));
  // The receivers' CPU from the client's 'measuring' (after its warm-up) to its 'done'.
  let receiversBefore = Number.NaN;
  const done = await ask<{ ms: number; total: number; errors: number; cpu_ms: number }>(
    child,
    { urls, total: requests, concurrency: IN_FLIGHT, body, warmup: WARM_UP, ...(db ? { databaseUrl: db.url } : {}) },
    'done',
    (m) => {
      if (m?.type === 'measuring') receiversBefore = cpuMsOfAll(env.receivers.pids);
    },
  );
  const receiversMs = cpuMsOfAll(env.receivers.pids) - receiversBefore;
  child.kill();
  return {
    requests,
    in_flight: IN_FLIGHT,
    per_s: perSecond(done.total, done.ms),
    errors: done.errors,
    cpu_per_request: { client_ms: round(done.cpu_ms / done.total, 3), receivers_ms: round(receiversMs / done.total, 3) },
  };
}

export interface RateCapResult {
  cap_per_s: number;
  worker_processes: number;
  events: number;
  neighbours: number;
  /** Requests the capped endpoint received in each one-second window from its first arrival. */
  capped_per_window: number[];
  /** The most it received in any one second (windows starting at each of its arrivals). */
  capped_busiest_second: number;
  /** The same over the attempts' start times as the workers logged them. */
  capped_busiest_second_at_sender: number;
  capped_rate_per_s: number;
  /** The neighbours together, over their own drain; and when the last of them had its backlog. */
  neighbours_per_s: number;
  neighbours_done_ms: number;
  capped_done_ms: number;
}

/**
 * One endpoint capped at `cap` requests a second beside `neighbours` uncapped ones, the same
 * backlog for each, drained by `workers` worker processes: what the capped one receives per
 * second at the receiver, and whether its neighbours run at full speed meanwhile.
 */
export async function rateCap(
  env: Env,
  o: { cap: number; neighbours: number; events: number; workers: number; timeoutMs: number },
): Promise<RateCapResult> {
  const db = await scratch(env, true);
  try {
    const urls = Array.from({ length: o.neighbours + 1 }, (_, i) => env.receivers.url(i));
    const { merchantId, endpoints } = await setupPlatform(env, db, urls);
    const setup = await openDatabase({ databaseUrl: db.url, dataDir: undefined, poolSize: 1 });
    await setup.query('UPDATE webhook_endpoints SET max_requests_per_second = $1 WHERE id = $2', [o.cap, endpoints[0]!.id]);
    await setup.close();
    await publish(env, { mode: 'burst', target: 'payhooks', databaseUrl: db.url, merchantId, events: o.events, batch: 50, concurrency: 4 });
    const a = env.receivers.arrivals;
    a.reset();
    const t0 = performance.timeOrigin + performance.now();
    const workers = await startWorkers(env, db, o.workers, DEFAULT_WORKER_ENV);
    const all = o.events * (o.neighbours + 1);
    if (!(await a.waitFor(all, o.timeoutMs))) throw new Error(`ratecap: ${a.count} of ${all} deliveries arrived`);
    await Promise.all(workers.map((w) => w.kill()));
    // The same at the sender: each attempt's start as its worker logged it.
    const database = await openDatabase({ databaseUrl: db.url, dataDir: undefined, poolSize: 1 });
    const started = (
      await database.query<{ ms: number }>(
        `SELECT extract(epoch FROM a.started_at) * 1000 AS ms FROM delivery_attempts a
         JOIN webhook_deliveries d ON d.id = a.delivery_id AND d.created_at = a.delivery_created_at
         WHERE d.endpoint_id = $1 ORDER BY a.started_at`,
        [endpoints[0]!.id],
      )
    ).map((r) => Number(r.ms));
    await database.close();
    const busiest = (ts: number[]) => Math.max(...ts.map((t) => ts.filter((u) => u >= t && u < t + 1000).length));
    const cappedPath = new URL(urls[0]!).pathname;
    const capped: number[] = [];
    const others: number[] = [];
    for (const [key, at] of a.at) (key.endsWith(`|${cappedPath}`) ? capped : others).push(at);
    capped.sort((x, y) => x - y);
    others.sort((x, y) => x - y);
    const windows: number[] = [];
    for (const t of capped) {
      const w = Math.floor((t - capped[0]!) / 1000);
      windows[w] = (windows[w] ?? 0) + 1;
    }
    return {
      cap_per_s: o.cap,
      worker_processes: o.workers,
      events: o.events,
      neighbours: o.neighbours,
      capped_per_window: Array.from(windows, (n) => n ?? 0),
      capped_busiest_second: busiest(capped),
      capped_busiest_second_at_sender: busiest(started),
      capped_rate_per_s: round((capped.length - 1) / ((capped.at(-1)! - capped[0]!) / 1000), 2),
      neighbours_per_s: perSecond(others.length - 1, others.at(-1)! - others[0]!),
      neighbours_done_ms: Math.round(others.at(-1)! - t0),
      capped_done_ms: Math.round(capped.at(-1)! - t0),
    };
  } finally {
    await drop(env, db);
  }
}

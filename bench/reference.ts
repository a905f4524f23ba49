/**
 * The reference benchmark (`npm run bench`): payhooks against the ceiling (a bare undici client,
 * no database) and the baseline (graphile-worker, a job per delivery, tuned per its docs), every
 * figure in the same run, on real PostgreSQL, with the worker(s) as real `payhooks worker`
 * processes, five receiver processes and a publisher process. bench/README.md says what each
 * figure is and how it is measured.
 *
 *   npm run bench [-- --quick] [-- --json]
 *
 * --quick: small sizes, the whole run in about a minute (a smoke run, not figures to quote).
 * --json: print one JSON object on stdout instead of the table (progress goes to stderr).
 * --only publish,latency,...: only these scenarios (publish, recording-ceiling, backlog1, backlog100, baseline,
 *   pipeline, latency, latency-baseline, isolation, fanout, publish-http, fleet, growth), their
 *   figures as JSON on stdout; growth (costs against stored history, bench/growth/) runs only
 *   this way: 5 k, 1 M and 5 M deliveries (--long adds 20 M; GROWTH_SIZES=a,b,c picks others);
 *   nothing is written. For working on one figure. --rate N: the second rate of the latency
 *   scenarios (payhooks, and the baseline with latency-baseline; default 1,600/s).
 * Results: bench/results/<YYYY-MM-DD>.json and .svg (`-quick` suffix with --quick).
 * PostgreSQL: $BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres); scratch
 * databases are created on it and dropped at the end.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { renderChart } from './reference/chart.ts';
import { machineInfo } from './reference/machine.ts';
import { forkTs, killAll, runMigrate } from './reference/processes.ts';
import { startReceivers } from './reference/receivers.ts';
import { startBrokerSinks } from './reference/brokers.ts';
import { startOtlpSink } from './reference/otlp-sink.ts';
import {
  backlog,
  BENCH_WORKER_ENV,
  ceiling,
  fanout,
  IN_FLIGHT,
  isolation,
  latency,
  pipeline,
  publishRate,
  rateCap,
  type CeilingResult,
  type DrainResult,
  type Env,
} from './reference/scenarios.ts';
import { now, round } from './reference/stats.ts';
import { publishHttp, scaleOut } from './reference/fleet.ts';
import { growth, GROWTH_SIZES, GROWTH_SIZES_LONG } from './growth/scenario.ts';

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    only: { type: 'string' },
    rate: { type: 'string' },
    cap: { type: 'string' },
    long: { type: 'boolean', default: false },
  },
});
const QUICK = args.quick!;
const RECEIVERS = 5;

/** Sizes: full run (figures) and --quick (smoke). Deliveries = events x endpoints. */
const SIZE = QUICK
  ? {
      ceiling: 3000,
      backlog1: 1000,
      backlog10: 0,
      backlog100: 60,
      pipeline: 100,
      latencyS: 2,
      warmupS: 1,
      isoEvents: 200,
      isoRate: 250,
      isoS: 2,
      isoRounds: 1,
      fanoutRuns: 1,
      publish: 1000,
      publishHttp: 500,
      fleetEvents: 100,
      timeoutMs: 60_000,
    }
  : {
      ceiling: 20_000,
      backlog1: 20_000,
      backlog10: 2000,
      backlog100: 200,
      pipeline: 2000,
      latencyS: 15,
      warmupS: 5,
      isoEvents: 2000,
      isoRate: 250,
      isoS: 10,
      isoRounds: 2,
      fanoutRuns: 3,
      publish: 5000,
      publishHttp: 5000,
      fleetEvents: 1000,
      timeoutMs: 180_000,
    };

const T0 = performance.now();
const log = (line: string) => process.stderr.write(`[${((performance.now() - T0) / 1000).toFixed(1).padStart(5)} s] ${line}\n`);

async function main() {
  const started = now();
  const adminUrl = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  const { rows } = await admin.query<{ server_version: string }>('SHOW server_version');
  const machine = machineInfo(rows[0]!.server_version);
  log(
    `reference benchmark${QUICK ? ' (--quick)' : ''}: ${machine.cpu}, ${machine.cores} cores, load ${machine.load_average_start.join(' ')}`,
  );

  const template = `payhooks_bench_tpl_${randomBytes(5).toString('hex')}`;
  const env: Env = {
    admin,
    adminUrl,
    template,
    receivers: await startReceivers(RECEIVERS),
    publisher: forkTs('./publisher.ts', { PGAPPNAME: 'bench-publisher' }),
    encryptionKey: randomBytes(32),
    log,
    databases: [],
  };
  const cleanup = async () => {
    env.receivers.stop();
    killAll(); // the publisher, and workers of a scenario that failed
    for (const name of [...env.databases, template]) await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
    await admin.end();
  };
  process.once('SIGINT', () => void cleanup().finally(() => process.exit(130)));
  try {
    await admin.query(`CREATE DATABASE ${template} TEMPLATE template0`);
    const tplUrl = new URL(adminUrl);
    tplUrl.pathname = `/${template}`;
    await runMigrate(tplUrl.toString()); // `payhooks migrate`: whatever schema this checkout has

    const run = runners(env);
    if (args.only) {
      process.stdout.write(`${JSON.stringify(await focused(run, args.only.split(',')), null, 2)}\n`);
      return;
    }

    log('publish rate: publishEvent alone');
    const { endpoints_1: publish1, endpoints_10: publish10 } = await run.publish();
    log('publish rate over HTTP: a payment core in another process, 8 publishers');
    const publishOverHttp = await run['publish-http']();
    log('backlog: 1 endpoint');
    const b1 = await run.backlog1();
    // (not in --quick: it is the one figure the others don't need)
    if (!QUICK) log('backlog: 10 endpoints');
    const b10 = QUICK ? null : await backlog(env, { target: 'payhooks', endpoints: 10, events: SIZE.backlog10, timeoutMs: SIZE.timeoutMs });
    // The three headline throughputs, each measured twice in mirrored order (ceiling, payhooks,
    // baseline, baseline, payhooks, ceiling), back to back: a drift of the shared machine's speed
    // during this minute then weighs on all three alike instead of on whichever ran last, and the
    // ratios are taken between the means. (One pass each let the ratio to the baseline move by
    // a third between runs minutes apart.)
    log('ceiling: bare undici client, no database (1 of 2)');
    const ceil = await ceiling(env, { requests: SIZE.ceiling });
    log('recording ceiling: the same client, each outcome written to PostgreSQL 100 rows per INSERT');
    const recording = await run['recording-ceiling']();
    log('backlog: 100 endpoints (1 of 2)');
    const b100 = await run.backlog100();
    log('baseline: graphile-worker, 100 endpoints (1 of 2)');
    const base100 = await run.baseline();
    log('baseline: graphile-worker, 100 endpoints (2 of 2)');
    const base100b = await run.baseline();
    log('backlog: 100 endpoints (2 of 2)');
    const b100b = await run.backlog100();
    log('ceiling: bare undici client, no database (2 of 2)');
    const ceilB = await ceiling(env, { requests: SIZE.ceiling });
    const paired = pairedHeadline([ceil, ceilB], [b100, b100b], [base100, base100b]);
    log('backlog: 100 endpoints with per-object ordering (2 runs)');
    const ordered = [await run['backlog100-ordered'](), await run['backlog100-ordered']()];
    log('scale-out: 100 endpoints, 2 worker processes');
    const b100x2 = await run.backlog100(2);
    log('pipeline: publisher process + worker, 10 endpoints');
    const pipe = await run.pipeline();
    const half = Math.max(100, Math.round(paired.throughput_per_s / 2 / 10) * 10);
    log(`latency: 100/s and ${half}/s (half the 100-endpoint backlog throughput), 10 endpoints per event`);
    const lat = await run.latency('payhooks', half);
    log('latency: baseline at the same rates');
    const baseLat = await run.latency('graphile', half);
    log('isolation: 5 healthy endpoints, alone and beside one that never answers');
    const iso = await run.isolation();
    log('fan-out: one event to 1,000 endpoints');
    const fan = await run.fanout();
    log('destinations: 10 endpoints over HTTP, RabbitMQ and NATS JetStream');
    const brokers = await run.brokers();
    log('tracing: 10 endpoints with OTEL_* (OTLP/HTTP to a local sink) and without, mirrored');
    const traced = await run.tracing();

    machine.load_average_end = loadavg().map((l) => +l.toFixed(2));
    const bound = cpuBound(machine.cores, paired);
    const workerRss = Math.max(b1.worker_peak_rss_mib, b10?.worker_peak_rss_mib ?? 0, b100.worker_peak_rss_mib, b100x2.worker_peak_rss_mib);
    const latHalf = lat[1]!;
    const result = {
      date: new Date().toISOString(),
      quick: QUICK,
      duration_s: round((now() - started) / 1000, 1),
      machine,
      setup: {
        receivers: RECEIVERS,
        in_flight: IN_FLIGHT,
        worker_env: BENCH_WORKER_ENV,
        note: 'Everything (PostgreSQL, receivers, publisher, workers) shares this machine; figures are indicative and compare only within one run.',
      },
      // The headline figures (the --json contract).
      ceiling_per_s: paired.ceiling_per_s,
      throughput_per_s: paired.throughput_per_s,
      baseline_per_s: paired.baseline_per_s,
      throughput_vs_ceiling: round(paired.throughput_per_s / paired.ceiling_per_s, 2),
      throughput_vs_baseline: round(paired.throughput_per_s / paired.baseline_per_s, 2),
      // The same client recording each outcome in PostgreSQL (100 rows per INSERT), one pass.
      recording_ceiling_per_s: recording.per_s,
      throughput_vs_recording_ceiling: round(paired.throughput_per_s / recording.per_s, 2),
      latency_ms: { p50: latHalf.latency_ms.p50, p95: latHalf.latency_ms.p95, p99: latHalf.latency_ms.p99 },
      latency_at_per_s: half,
      publish_per_s: publish1.batched_events_per_s,
      publish_http_per_s: publishOverHttp.single.per_s,
      // A rise from 100/s to half load: seconds until each quarter-second's p99 stays under 50 ms for a second.
      step_response_s: lat[1]?.step?.settle_s ?? null,
      isolation_throughput_loss: iso.throughput_loss,
      fanout_1000_ms: fan.last_arrival_ms,
      worker_rss_mb: workerRss,
      cpu_ms_per_delivery: paired.cpu_per_delivery,
      cpu_bound: bound,
      // Issue 26's four targets, read off this run: the worker's CPU per delivery over the bare
      // client's per request (<= 1.5), PostgreSQL's CPU per delivery (<= 0.15 ms on the
      // reference machine), one-event publishEvent transactions per second (>= 2,000) and p50
      // at half load (<= 5 ms, latency_ms above).
      worker_vs_client: round(paired.cpu_per_delivery.worker_ms / paired.ceiling_cpu_per_request.client_ms, 2),
      postgres_cpu_ms_per_delivery: paired.cpu_per_delivery.postgres_ms,
      // The same over the bare client's CPU per request: how fast this machine is cancels out
      // (on one machine the absolute figure doubled within two hours; this stayed within 0.76-1.03).
      postgres_vs_client: round(paired.cpu_per_delivery.postgres_ms / paired.ceiling_cpu_per_request.client_ms, 2),
      publish_single_per_s: publish1.single_events_per_s,
      // Per-object ordering on every endpoint (each event its own payment, so nothing waits)
      // against the headline backlog: what the ordering check costs (issue 25 item 1).
      ordering: {
        off_per_s: paired.throughput_per_s,
        on_per_s: round((ordered[0]!.throughput_per_s + ordered[1]!.throughput_per_s) / 2),
        off_worker_cpu_ms: round((b100.cpu_per_delivery.worker_ms + b100b.cpu_per_delivery.worker_ms) / 2, 3),
        on_worker_cpu_ms: round((ordered[0]!.cpu_per_delivery.worker_ms + ordered[1]!.cpu_per_delivery.worker_ms) / 2, 3),
        off_postgres_cpu_ms: round((b100.cpu_per_delivery.postgres_ms + b100b.cpu_per_delivery.postgres_ms) / 2, 3),
        on_postgres_cpu_ms: round((ordered[0]!.cpu_per_delivery.postgres_ms + ordered[1]!.cpu_per_delivery.postgres_ms) / 2, 3),
      },
      // The same 10-endpoint backlog delivered over HTTP, to RabbitMQ (publisher confirms) and to
      // NATS JetStream (stream acks): deliveries/s and the worker's CPU per delivery (issue 25 item 3).
      destinations: Object.fromEntries(
        Object.entries(brokers).map(([kind, r]) => [kind, { per_s: r.throughput_per_s, worker_cpu_ms: r.cpu_per_delivery.worker_ms }]),
      ),
      // The worker tracing to a local OTLP sink against no OTEL_* at all (issue 25 item 4).
      tracing: {
        off_per_s: traced.off_per_s,
        on_per_s: traced.on_per_s,
        off_worker_cpu_ms: traced.off_worker_cpu_ms,
        on_worker_cpu_ms: traced.on_worker_cpu_ms,
      },
      // Every figure.
      figures: {
        destinations: brokers,
        tracing: traced,
        ceiling: ceil,
        // Both passes of the three headline figures, in the order they ran.
        headline_passes: paired.passes,
        publish: { endpoints_1: publish1, endpoints_10: publish10, http: publishOverHttp },
        backlog: { endpoints_1: b1, endpoints_10: b10, endpoints_100: b100, endpoints_100_second: b100b, endpoints_100_ordered: ordered },
        // Against the second 100-endpoint pass, the one nearest in time.
        scale_out: { one_process: b100b, two_processes: b100x2, ratio: round(b100x2.throughput_per_s / b100b.throughput_per_s, 2) },
        baseline: {
          backlog_endpoints_100: base100,
          backlog_endpoints_100_second: base100b,
          cpu_per_delivery: paired.baseline_cpu_per_delivery,
          latency: baseLat,
        },
        pipeline: pipe,
        latency: lat,
        isolation: iso,
        fanout: fan,
      },
    };

    const day = result.date.slice(0, 10);
    const stem = `${day}${QUICK ? '-quick' : ''}`;
    const dir = new URL('./results/', import.meta.url);
    mkdirSync(dir, { recursive: true });
    writeFileSync(new URL(`${stem}.json`, dir), `${JSON.stringify(result, null, 2)}\n`);
    const svg = renderChart(
      `payhooks reference benchmark, ${day}${QUICK ? ' (quick)' : ''}`,
      `${machine.cpu}, ${machine.cores} cores, PostgreSQL ${machine.postgres}, node ${machine.node}, commit ${machine.git_commit.slice(0, 7)}, load ${machine.load_average_start.join('/')}; ${IN_FLIGHT} in flight; indicative`,
      [
        { label: 'ceiling (no database)', value: paired.ceiling_per_s, kind: 'ceiling' },
        { label: 'backlog, 1 endpoint', value: b1.throughput_per_s, kind: 'payhooks' },
        ...(b10 ? [{ label: 'backlog, 10 endpoints', value: b10.throughput_per_s, kind: 'payhooks' as const }] : []),
        { label: 'backlog, 100 endpoints', value: paired.throughput_per_s, kind: 'payhooks' },
        { label: 'backlog, 100 ep., 2 workers', value: b100x2.throughput_per_s, kind: 'payhooks' },
        { label: 'pipeline, 10 endpoints', value: pipe.throughput_per_s, kind: 'payhooks' },
        { label: 'baseline, 100 endpoints', value: paired.baseline_per_s, kind: 'baseline' },
      ],
      lat.map((l, i) => ({ label: `${l.offered_deliveries_per_s}/s`, payhooks: l.latency_ms, baseline: baseLat[i]?.latency_ms })),
    );
    writeFileSync(new URL(`${stem}.svg`, dir), svg);

    if (args.json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else process.stdout.write(`${table(result)}\nbench/results/${stem}.json, bench/results/${stem}.svg (${result.duration_s} s)\n`);
  } finally {
    await cleanup();
  }
}

/**
 * The headline figures from their two mirrored passes: each the mean of its two, CPU per
 * delivery the mean of the two drains'; `passes` keeps every pass for the record.
 */
function pairedHeadline(ceilings: CeilingResult[], payhooks: DrainResult[], baselines: DrainResult[]) {
  const mean = (xs: number[]) => Math.round(xs.reduce((a, b) => a + b, 0) / xs.length);
  const avg = (xs: number[]) => round(xs.reduce((a, b) => a + b, 0) / xs.length, 3);
  const meanCpu = (ds: DrainResult[]) => ({
    worker_ms: avg(ds.map((d) => d.cpu_per_delivery.worker_ms)),
    postgres_ms: avg(ds.map((d) => d.cpu_per_delivery.postgres_ms)),
    receivers_ms: avg(ds.map((d) => d.cpu_per_delivery.receivers_ms)),
  });
  return {
    ceiling_per_s: mean(ceilings.map((c) => c.per_s)),
    ceiling_cpu_per_request: {
      client_ms: avg(ceilings.map((c) => c.cpu_per_request.client_ms)),
      receivers_ms: avg(ceilings.map((c) => c.cpu_per_request.receivers_ms)),
    },
    throughput_per_s: mean(payhooks.map((d) => d.throughput_per_s)),
    baseline_per_s: mean(baselines.map((d) => d.throughput_per_s)),
    cpu_per_delivery: meanCpu(payhooks),
    baseline_cpu_per_delivery: meanCpu(baselines),
    passes: {
      order: ['ceiling', 'payhooks', 'baseline', 'baseline', 'payhooks', 'ceiling'],
      ceiling_per_s: ceilings.map((c) => c.per_s),
      throughput_per_s: payhooks.map((d) => d.throughput_per_s),
      baseline_per_s: baselines.map((d) => d.throughput_per_s),
    },
  };
}

/**
 * What the machine's cores allow at most, from the 100-endpoint drain's measured CPU per
 * delivery: the worker, its PostgreSQL backends and the receivers (which the ceiling pays for
 * too), and nothing else (not PostgreSQL's WAL writer, not the harness). At full use of every
 * core, deliveries/s can't pass cores x 1000 / that; as a fraction of the ceiling it is the most
 * `throughput_vs_ceiling` could be on this machine, an optimistic bound. The ceiling's own CPU
 * per request (client and receivers) is beside it.
 */
function cpuBound(cores: number, paired: ReturnType<typeof pairedHeadline>) {
  const c = paired.cpu_per_delivery;
  const perDelivery = c.worker_ms + c.postgres_ms + c.receivers_ms;
  const maxPerS = Math.round((cores * 1000) / perDelivery);
  const ceilingMs = paired.ceiling_cpu_per_request.client_ms + paired.ceiling_cpu_per_request.receivers_ms;
  return {
    cores,
    cpu_ms_per_delivery: round(perDelivery, 3),
    max_per_s: maxPerS,
    max_vs_ceiling: round(maxPerS / paired.ceiling_per_s, 2),
    ceiling_cpu_ms_per_request: round(ceilingMs, 3),
    ceiling_cpu_per_request: paired.ceiling_cpu_per_request,
  };
}

/** Each scenario at this run's sizes: the full run and `--only` call the same ones. */
function runners(env: Env) {
  const timeoutMs = SIZE.timeoutMs;
  return {
    publish: async () => ({
      endpoints_1: await publishRate(env, { endpoints: 1, events: SIZE.publish }),
      endpoints_10: await publishRate(env, { endpoints: 10, events: Math.round(SIZE.publish / 2) }),
    }),
    /** The ceiling client recording each outcome in PostgreSQL, 100 rows per INSERT (one pass). */
    'recording-ceiling': () => ceiling(env, { requests: SIZE.ceiling, record: true }),
    backlog1: () => backlog(env, { target: 'payhooks', endpoints: 1, events: SIZE.backlog1, timeoutMs }),
    backlog100: (workers = 1) => backlog(env, { target: 'payhooks', endpoints: 100, events: SIZE.backlog100, workers, timeoutMs }),
    /** The same backlog with every endpoint `per_object` (each event a payment of its own, so nothing waits: the check's cost). */
    'backlog100-ordered': () => backlog(env, { target: 'payhooks', endpoints: 100, events: SIZE.backlog100, timeoutMs, ordered: true }),
    baseline: () => backlog(env, { target: 'graphile', endpoints: 100, events: SIZE.backlog100, timeoutMs }),
    pipeline: () => pipeline(env, { endpoints: 10, events: SIZE.pipeline, timeoutMs }),
    latency: (target: 'payhooks' | 'graphile', halfPerS: number) =>
      latency(env, { target, endpoints: 10, ratesPerS: [100, halfPerS], seconds: SIZE.latencyS, warmupS: SIZE.warmupS }),
    isolation: () =>
      isolation(env, {
        healthy: 5,
        events: SIZE.isoEvents,
        ratePerS: SIZE.isoRate,
        seconds: SIZE.isoS,
        rounds: SIZE.isoRounds,
        timeoutMs,
      }),
    fanout: () => fanout(env, { endpoints: 1000, runs: SIZE.fanoutRuns, timeoutMs }),
    /** One endpoint capped at 5/s beside 9 uncapped ones, 100 events each, two worker processes. */
    ratecap: () => rateCap(env, { cap: Number(args.cap ?? 5), neighbours: 9, events: 100, workers: 2, timeoutMs }),
    'publish-http': () => publishHttp(env, { events: SIZE.publishHttp, apis: 1, batch: 50 }),
    fleet: () => scaleOut(env, { apis: [1, 2], workers: [1, 2, 4], events: SIZE.fleetEvents, endpoints: 10, timeoutMs }),
    /** Costs against stored history (bench/growth/scenario.ts): minutes, so only with --only. */
    growth: () =>
      growth(env, {
        sizes: process.env.GROWTH_SIZES
          ? process.env.GROWTH_SIZES.split(',').map(Number)
          : QUICK
            ? [2000, 20_000, 100_000]
            : args.long
              ? GROWTH_SIZES_LONG
              : GROWTH_SIZES,
        timeoutMs,
      }),
    /**
     * The 10-endpoint backlog with the worker tracing every claim, attempt and record to a local
     * OTLP/HTTP sink (protobuf, the default) and without OTEL_* at all, in mirrored order.
     */
    tracing: async () => {
      const sink = await startOtlpSink();
      try {
        const events = SIZE.backlog10 || 300;
        const traced = { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_SERVICE_NAME: 'payhooks-bench' };
        const drain = (workerEnv?: Record<string, string>) =>
          backlog(env, { target: 'payhooks', endpoints: 10, events, timeoutMs, ...(workerEnv ? { workerEnv } : {}) });
        const off = [await drain()];
        const on = [await drain(traced), await drain(traced)];
        off.push(await drain());
        const mean = (rs: typeof off, f: (r: (typeof off)[number]) => number) => round(rs.reduce((a, r) => a + f(r), 0) / rs.length, 3);
        return {
          off_per_s: mean(off, (r) => r.throughput_per_s),
          on_per_s: mean(on, (r) => r.throughput_per_s),
          off_worker_cpu_ms: mean(off, (r) => r.cpu_per_delivery.worker_ms),
          on_worker_cpu_ms: mean(on, (r) => r.cpu_per_delivery.worker_ms),
          otlp_received: sink.spans(),
          runs: { off, on },
        };
      } finally {
        await sink.close();
      }
    },
    /** The 10-endpoint backlog over HTTP, RabbitMQ (publisher confirms) and NATS JetStream, back to back. */
    brokers: async () => {
      const sinks = await startBrokerSinks(env.receivers.arrivals);
      try {
        const events = SIZE.backlog10 || 300;
        const http = await backlog(env, { target: 'payhooks', endpoints: 10, events, timeoutMs });
        // The broker server's own CPU over the run (it is idle while the backlog is published).
        const viaBroker = async (kind: 'amqp' | 'nats') => {
          const before = sinks.serverCpuMs(kind);
          const r = await backlog(env, { target: 'payhooks', endpoints: 10, events, timeoutMs, broker: { kind, sinks } });
          return { ...r, broker_server_cpu_ms_per_delivery: round((sinks.serverCpuMs(kind) - before) / r.deliveries, 3) };
        };
        const amqp = await viaBroker('amqp');
        const nats = await viaBroker('nats');
        return { http, amqp, nats };
      } finally {
        await sinks.close();
      }
    },
  };
}

/** `--only`: the chosen scenarios at full size, one after the other (latency and latency-baseline at 100/s and --rate). */
async function focused(run: ReturnType<typeof runners>, only: string[]): Promise<Record<string, unknown>> {
  const pick: Record<string, () => Promise<unknown>> = {
    publish: run.publish,
    'recording-ceiling': run['recording-ceiling'],
    backlog1: run.backlog1,
    backlog100: () => run.backlog100(),
    'backlog100-ordered': run['backlog100-ordered'],
    baseline: run.baseline,
    pipeline: run.pipeline,
    latency: () => run.latency('payhooks', Number(args.rate ?? 1600)),
    'latency-baseline': () => run.latency('graphile', Number(args.rate ?? 1600)),
    isolation: run.isolation,
    fanout: run.fanout,
    'publish-http': run['publish-http'],
    fleet: run.fleet,
    brokers: run.brokers,
    tracing: run.tracing,
    ratecap: run.ratecap,
    growth: run.growth,
  };
  const unknown = only.filter((o) => !(o in pick));
  if (unknown.length) throw new Error(`--only: unknown scenario(s) ${unknown.join(', ')}; choose from ${Object.keys(pick).join(', ')}`);
  const out: Record<string, unknown> = { load_average_start: loadavg().map((l) => +l.toFixed(2)) };
  for (const name of only) {
    log(`--only: ${name}`);
    out[name] = await pick[name]!();
  }
  out.load_average_end = loadavg().map((l) => +l.toFixed(2));
  return out;
}

type Result = Record<string, any>;

function table(r: Result): string {
  const f = r.figures;
  const passes = f.headline_passes;
  const lat = (l: { p50: number; p95: number; p99: number }) => `${l.p50} / ${l.p95} / ${l.p99} ms`;
  const cpu = (c: { worker_ms: number; postgres_ms: number; receivers_ms: number }) =>
    `worker ${c.worker_ms} ms, PostgreSQL ${c.postgres_ms} ms, receivers ${c.receivers_ms} ms`;
  const b = r.cpu_bound;
  const rows: [string, string][] = [
    ['ceiling: bare undici, 50 in flight, 5 receivers', `${r.ceiling_per_s}/s (passes ${passes.ceiling_per_s.join(', ')})`],
    [
      'recording ceiling: the same, 100 rows per INSERT',
      `${r.recording_ceiling_per_s}/s; the 100-endpoint backlog ${r.throughput_vs_recording_ceiling} of it`,
    ],
    ['baseline: graphile-worker (tuned), 100 endpoints', `${r.baseline_per_s}/s (passes ${passes.baseline_per_s.join(', ')})`],
    ['backlog, 1 endpoint', `${f.backlog.endpoints_1.throughput_per_s}/s (${f.backlog.endpoints_1.deliveries} deliveries)`],
    ...(f.backlog.endpoints_10
      ? [
          ['backlog, 10 endpoints', `${f.backlog.endpoints_10.throughput_per_s}/s (${f.backlog.endpoints_10.deliveries})`] as [
            string,
            string,
          ],
        ]
      : []),
    [
      'backlog, 100 endpoints (throughput)',
      `${r.throughput_per_s}/s (passes ${passes.throughput_per_s.join(', ')}; ${f.backlog.endpoints_100.deliveries} each): ${r.throughput_vs_ceiling} of ceiling, ${r.throughput_vs_baseline}x baseline`,
    ],
    [
      'scale-out: 2 worker processes, 100 endpoints',
      `${f.scale_out.two_processes.throughput_per_s}/s (${f.scale_out.ratio}x one), ${f.scale_out.two_processes.duplicates} duplicates`,
    ],
    ['pipeline: publisher process + worker, 10 endpoints', `${f.pipeline.throughput_per_s}/s, latency ${lat(f.pipeline.latency_ms)}`],
    ...f.latency.map((l: Result, i: number): [string, string] => [
      `latency p50/p95/p99 at ${l.offered_deliveries_per_s}/s`,
      `payhooks ${lat(l.latency_ms)}; baseline ${lat(f.baseline.latency[i].latency_ms)}`,
    ]),
    [
      'publishEvent, 1 endpoint/event',
      `${f.publish.endpoints_1.batched_events_per_s} events/s (50/tx), ${f.publish.endpoints_1.single_events_per_s} (1/tx), ${f.publish.endpoints_1.sql_function_events_per_s} through the SQL function (1/tx)`,
    ],
    [
      'publishEvent, 10 endpoints/event',
      `${f.publish.endpoints_10.batched_events_per_s} events/s (50/tx), ${f.publish.endpoints_10.single_events_per_s} (1/tx), ${f.publish.endpoints_10.sql_function_events_per_s} through the SQL function (1/tx)`,
    ],
    [
      'publishing over HTTP, 8 publishers, 1 endpoint/event',
      `${f.publish.http.single.per_s} events/s one per request (${f.publish.http.single.cpu_per_event.total_ms} ms CPU each)${
        f.publish.http.batched ? `, ${f.publish.http.batched.per_s} in batches of ${f.publish.http.batched.batch}` : ''
      }; in-process ${f.publish.http.in_process_single_per_s} (1/tx)`,
    ],
    [
      'step response: 100/s -> half load',
      r.step_response_s === null
        ? `latency not back under 50 ms in the phase (worst quarter-second p99 ${f.latency[1]?.step?.peak_window_p99_ms} ms)`
        : `${r.step_response_s} s until p99 < 50 ms (worst quarter-second p99 ${f.latency[1]?.step?.peak_window_p99_ms} ms)`,
    ],
    [
      'isolation: healthy throughput alone / beside',
      `${f.isolation.alone.healthy_throughput_per_s}/s / ${f.isolation.beside_never_answering.healthy_throughput_per_s}/s (loss ${round(r.isolation_throughput_loss * 100, 1)}%)`,
    ],
    [
      'isolation: healthy p99 alone / beside',
      `${f.isolation.alone.healthy_latency_ms.p99} / ${f.isolation.beside_never_answering.healthy_latency_ms.p99} ms`,
    ],
    ['fan-out: 1 event to 1,000 endpoints, last arrival', `${r.fanout_1000_ms} ms (first ${f.fanout.first_arrival_ms} ms)`],
    ['worker peak RSS (VmHWM)', `${r.worker_rss_mb} MiB`],
    ['CPU per delivery, 100-endpoint backlog (both passes)', cpu(r.cpu_ms_per_delivery)],
    [
      'CPU bound: cores / CPU per delivery',
      `${b.cores} x 1000 / ${b.cpu_ms_per_delivery} ms = ${b.max_per_s}/s at most, ${b.max_vs_ceiling} of the ceiling (ceiling: ${b.ceiling_cpu_ms_per_request} ms per request, client ${b.ceiling_cpu_per_request.client_ms} + receivers ${b.ceiling_cpu_per_request.receivers_ms})`,
    ],
    ['CPU per delivery, baseline backlog (both passes)', cpu(f.baseline.cpu_per_delivery)],
    [
      'CPU per delivery, latency run at half load',
      `${cpu(f.latency[1].cpu_per_delivery)}; baseline ${cpu(f.baseline.latency[1].cpu_per_delivery)}`,
    ],
  ];
  const w = Math.max(...rows.map(([k]) => k.length));
  const m = r.machine;
  return [
    `payhooks reference benchmark ${r.date}${r.quick ? ' (--quick: smoke sizes)' : ''}`,
    `${m.cpu}, ${m.cores} cores, ${m.memory_gib} GiB, node ${m.node}, PostgreSQL ${m.postgres}, commit ${m.git_commit.slice(0, 10)}${m.git_dirty ? '+dirty' : ''}`,
    `load average ${m.load_average_start.join(' ')} at start, ${m.load_average_end.join(' ')} at end (shared machine: indicative figures)`,
    '',
    ...rows.map(([k, v]) => `${k.padEnd(w)}  ${v}`),
  ].join('\n');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

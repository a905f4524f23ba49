/**
 * The fleet scenarios of the reference benchmark (issue 23): publishing over HTTP from a payment
 * core in another process, and scale-out across worker and API processes. Every part is a real
 * process on this machine: `payhooks serve --no-worker` API processes, `payhooks worker`
 * processes, the HTTP publisher (http-publisher.ts), the five receivers and PostgreSQL.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { ask, forkTs, startApi, type Child } from './processes.ts';
import type { HttpPublishRequest } from './http-publisher.ts';
import { BENCH_WORKER_ENV, drop, publish, scratch, setupPlatform, startWorkers, type Env, type Scratch } from './scenarios.ts';
import { perSecond, round, sleep } from './stats.ts';

/** The internal API's token in the scenarios' API processes. */
const TOKEN = randomBytes(24).toString('hex');
/** Concurrent publishers, each waiting for its answer before sending the next request. */
export const HTTP_PUBLISHERS = 8;

interface HttpDone {
  published: number;
  errors: number;
  firstError: string;
  ms: number;
  t0: number;
  cpu_ms: number;
}

/** One run of the HTTP publisher; its commits (answer times) by event id. */
async function publishOverHttp(client: ChildProcess, req: HttpPublishRequest): Promise<HttpDone & { commits: Map<string, number> }> {
  const commits = new Map<string, number>();
  const done = await ask<HttpDone>(client, req, 'done', (m) => {
    if (m?.type === 'commits') for (const [id, t] of m.list as [string, number][]) commits.set(id, t);
  });
  if (done.errors) throw new Error(`${done.errors} of ${req.events} events were refused over HTTP, e.g. ${done.firstError}`);
  return { ...done, commits };
}

async function startApis(env: Env, db: Scratch, count: number): Promise<Array<Child & { url: string }>> {
  const apis = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      startApi({ databaseUrl: db.url, encryptionKeyHex: env.encryptionKey.toString('hex'), token: TOKEN, name: String(i) }),
    ),
  );
  for (const a of apis) db.sampler.addApi(a.pid);
  return apis;
}

/** CPU ms per event or delivery, by kind of process. */
export interface FleetCpu {
  api_ms: number;
  /** The PostgreSQL backends serving the API processes. */
  api_postgres_ms: number;
  /** The publishing client (the payment core's side of HTTP). */
  client_ms: number;
  worker_ms?: number;
  worker_postgres_ms?: number;
  receivers_ms?: number;
  total_ms: number;
}

export interface HttpPublishPhase {
  events: number;
  per_s: number;
  cpu_per_event: FleetCpu;
}

export interface HttpPublishResult {
  api_processes: number;
  publishers: number;
  /** One event per request to POST /internal/v1/events. */
  single: HttpPublishPhase;
  /** POST /internal/v1/events/batch, `batch` events per request; null when the API has no batch route. */
  batched: (HttpPublishPhase & { batch: number }) | null;
  /** The same machine, same run: `publishEvent` in-process, one event per transaction, 8 at a time. */
  in_process_single_per_s: number;
}

/**
 * A payment core publishing over HTTP: 8 concurrent publishers, one endpoint per event, no worker
 * running (publishing alone). First one event per request, then batches of 50, then, for
 * comparison, in-process `publishEvent` one event per transaction on the same database.
 */
export async function publishHttp(env: Env, o: { events: number; apis: number; batch: number }): Promise<HttpPublishResult> {
  const db = await scratch(env, true);
  const client = forkTs('./http-publisher.ts', { PGAPPNAME: 'bench-client' });
  try {
    const { merchantId } = await setupPlatform(env, db, [env.receivers.url(0)]);
    db.sampler.start([]);
    const apis = await startApis(env, db, o.apis);
    const urls = apis.map((a) => a.url);
    const base = { urls, token: TOKEN, merchantId, concurrency: HTTP_PUBLISHERS };
    env.log(`  warm-up: ${Math.min(1000, o.events)} events over HTTP`);
    await publishOverHttp(client, { ...base, events: Math.min(1000, o.events), batch: 0 });
    const phase = async (batch: number): Promise<HttpPublishPhase> => {
      await sleep(200);
      await db.sampler.sample();
      const r = await publishOverHttp(client, { ...base, events: o.events, batch });
      await db.sampler.sample();
      const w = db.sampler.window(r.t0, r.t0 + r.ms);
      const per = (ms: number) => round(ms / r.published, 3);
      const cpu: FleetCpu = { api_ms: per(w.api), api_postgres_ms: per(w.pgApi), client_ms: per(r.cpu_ms), total_ms: 0 };
      cpu.total_ms = round(cpu.api_ms + cpu.api_postgres_ms + cpu.client_ms, 3);
      return { events: r.published, per_s: perSecond(r.published, r.ms), cpu_per_event: cpu };
    };
    env.log(`  ${o.events} events, one per request, ${HTTP_PUBLISHERS} publishers, ${o.apis} API process(es)`);
    const single = await phase(0);
    env.log(`  ${o.events} events in batches of ${o.batch}`);
    let batched: HttpPublishResult['batched'] = null;
    try {
      batched = { ...(await phase(o.batch)), batch: o.batch };
    } catch (err) {
      env.log(`  ! batches not measured: ${(err as Error).message.slice(0, 200)}`);
    }
    env.log(`  in-process publishEvent, one per transaction, 8 at a time (the same database)`);
    const inProcess = await publish(env, {
      mode: 'burst',
      target: 'payhooks',
      databaseUrl: db.url,
      merchantId,
      events: o.events,
      batch: 1,
      concurrency: 8,
    });
    await Promise.all(apis.map((a) => a.kill()));
    return {
      api_processes: o.apis,
      publishers: HTTP_PUBLISHERS,
      single,
      batched,
      in_process_single_per_s: perSecond(inProcess.published, inProcess.ms),
    };
  } finally {
    client.kill();
    await drop(env, db);
  }
}

export interface FleetRun {
  api_processes: number;
  worker_processes: number;
  events: number;
  deliveries: number;
  /** Events/s the HTTP publishers got through. */
  publish_per_s: number;
  /** Deliveries from the first request to the last arrival at the receivers. */
  deliveries_per_s: number;
  duplicates: number;
  cpu_per_delivery: FleetCpu;
}

/**
 * The whole fleet at work: 8 HTTP publishers spread over `apis` API processes, one event per
 * request, each event to `endpoints` endpoints, delivered by `workers` worker processes, for
 * every combination asked. Deliveries/s from the first request to the last arrival, and the CPU
 * per delivery of every process taking part (API, its PostgreSQL backends, the client, workers,
 * theirs, receivers).
 */
export async function scaleOut(
  env: Env,
  o: { apis: number[]; workers: number[]; events: number; endpoints: number; timeoutMs: number },
): Promise<FleetRun[]> {
  const out: FleetRun[] = [];
  for (const apiCount of o.apis) {
    for (const workerCount of o.workers) {
      const db = await scratch(env, true);
      const client = forkTs('./http-publisher.ts', { PGAPPNAME: 'bench-client' });
      try {
        const urls = Array.from({ length: o.endpoints }, (_, i) => env.receivers.url(i));
        const { merchantId } = await setupPlatform(env, db, urls);
        db.sampler.start([]);
        const apis = await startApis(env, db, apiCount);
        const workers = await startWorkers(env, db, workerCount, BENCH_WORKER_ENV);
        for (const w of workers) db.sampler.addWorker(w.pid);
        const total = o.events * o.endpoints;
        env.log(`  ${apiCount} API, ${workerCount} worker process(es): ${o.events} events x ${o.endpoints} endpoints over HTTP`);
        env.receivers.arrivals.reset();
        await db.sampler.sample();
        const pub = await publishOverHttp(client, {
          urls: apis.map((a) => a.url),
          token: TOKEN,
          merchantId,
          events: o.events,
          concurrency: HTTP_PUBLISHERS,
          batch: 0,
        });
        const a = env.receivers.arrivals;
        if (!(await a.waitFor(total, o.timeoutMs))) env.log(`  ! only ${a.count} of ${total} deliveries arrived`);
        await sleep(300);
        await db.sampler.sample();
        const w = db.sampler.window(pub.t0, a.last);
        const per = (ms: number) => round(ms / Math.max(1, a.count), 3);
        const cpu: FleetCpu = {
          api_ms: per(w.api),
          api_postgres_ms: per(w.pgApi),
          client_ms: per(pub.cpu_ms),
          worker_ms: per(w.worker),
          worker_postgres_ms: per(w.pgWorker),
          receivers_ms: per(w.receivers),
          total_ms: 0,
        };
        cpu.total_ms = round(
          w.api / a.count + w.pgApi / a.count + pub.cpu_ms / a.count + w.worker / a.count + w.pgWorker / a.count + w.receivers / a.count,
          3,
        );
        out.push({
          api_processes: apiCount,
          worker_processes: workerCount,
          events: o.events,
          deliveries: total,
          publish_per_s: perSecond(pub.published, pub.ms),
          deliveries_per_s: perSecond(a.count, a.last - pub.t0),
          duplicates: a.duplicates,
          cpu_per_delivery: cpu,
        });
        await Promise.all([...apis, ...workers].map((c) => c.kill()));
      } finally {
        client.kill();
        await drop(env, db);
      }
    }
  }
  return out;
}

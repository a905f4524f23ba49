/**
 * End-to-end delivery benchmark: publish events through the transactional outbox, let real
 * workers sign and POST them to a real receiver process, and measure throughput, end-to-end
 * latency (publish commit -> receiver got the request) and memory.
 *
 *   npx tsx bench/delivery.ts [--db postgres|pglite] [--events 2000] [--endpoints 5]
 *                             [--workers 1] [--publishers 4] [--mode pipeline|backlog]
 *                             [--receiver-delay-ms 0] [--save name]
 *
 * pipeline: workers run while PUBLISHERS concurrent transactions publish 50 events each.
 * backlog: everything is published first; then the clock starts and workers drain it.
 *
 * PostgreSQL: a scratch database is created on $BENCH_PG_URL (default
 * postgres://postgres@127.0.0.1:5432/postgres) and dropped afterwards.
 */
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { openDatabase } from '../packages/server/src/db/client.ts';
import { migrate } from '../packages/server/src/db/migrate.ts';
import { loadConfig } from '../packages/server/src/config.ts';
import { systemClock } from '../packages/server/src/clock.ts';
import { createContext } from '../packages/server/src/context.ts';
import { createPlatform } from '../packages/server/src/tenancy/platforms.ts';
import { publishEvent } from '../packages/server/src/events/publish.ts';
import { createPgDatabase } from '../packages/server/test/helpers/database.ts';

const { values: args } = parseArgs({
  options: {
    db: { type: 'string', default: 'postgres' },
    events: { type: 'string', default: '2000' },
    endpoints: { type: 'string', default: '5' },
    workers: { type: 'string', default: '1' },
    publishers: { type: 'string', default: '4' },
    mode: { type: 'string', default: 'pipeline' },
    'receiver-delay-ms': { type: 'string', default: '0' },
    rate: { type: 'string' },
    save: { type: 'string' },
  },
});
const EVENTS = Number(args.events);
const ENDPOINTS = Number(args.endpoints);
const WORKERS = Number(args.workers);
const TOTAL = EVENTS * ENDPOINTS;
const PUBLISHERS = Number(args.publishers);
/** pipeline: workers run while events are published. backlog: publish all, then start workers. */
const MODE = args.mode === 'backlog' ? 'backlog' : 'pipeline';
/** pipeline only: publish one event per transaction at this many events/s (latency at a set load). */
const RATE = args.rate === undefined ? undefined : Number(args.rate);

const claimsOf = (w: object) => Number((w as { claims?: number }).claims ?? (w as { claimSeq?: number }).claimSeq);
const now = () => performance.timeOrigin + performance.now();
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

async function main() {
  let databaseUrl: string | undefined;
  let dropDb = async () => {};
  if (args.db === 'postgres') {
    // The same scratch-database helper the integration tests use.
    const scratch = await createPgDatabase(process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', 'payhooks_bench');
    databaseUrl = scratch.url;
    dropDb = scratch.drop;
  }
  const database = await openDatabase({ databaseUrl, dataDir: undefined, poolSize: 20 });
  await migrate(database);
  const config = loadConfig({}, { databaseUrl, allowPrivateUrls: true, logLevel: 'silent', pollIntervalMs: 100 });
  const ctx = createContext({ config, database, clock: systemClock, logger: pino({ level: 'silent' }), encryptionKey: randomBytes(32) });

  const receiver = fork(new URL('./receiver.mjs', import.meta.url), {
    env: { ...process.env, BENCH_RECEIVER_DELAY_MS: args['receiver-delay-ms'] },
  });
  const port = await new Promise<number>((resolve) => receiver.once('message', (m: { port: number }) => resolve(m.port)));
  const arrivals = new Map<string, number[]>();
  let received = 0;
  let allReceived: () => void;
  const done = new Promise<void>((r) => (allReceived = r));
  receiver.on('message', (m: { arrivals?: [string, string, number][] }) => {
    for (const [id, , at] of m.arrivals ?? []) {
      arrivals.set(id, [...(arrivals.get(id) ?? []), at]);
      if (++received >= TOTAL) allReceived();
    }
  });

  const p = await createPlatform(database.db, 'bench');
  const scope = { platformId: p.platform_id, environment: 'sandbox' as const, actor: { type: 'operator' as const, id: 'bench' } };
  for (let i = 0; i < ENDPOINTS; i++) await ctx.endpoints.create(scope, { url: `http://127.0.0.1:${port}/e${i}`, enabled_events: ['*'] });

  const workers = Array.from({ length: WORKERS }, () => ctx.createWorker());
  if (MODE === 'pipeline') await Promise.all(workers.map((w) => w.start()));
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);

  const published = new Map<string, number>();
  const tPublish = now();
  let next = 0;
  const publisher = async () => {
    for (;;) {
      const from = next;
      if (from >= EVENTS) return;
      next = Math.min(EVENTS, from + 50);
      const to = next;
      const ids: string[] = [];
      await database.db.transaction(async (tx) => {
        for (let i = from; i < to; i++) {
          const r = await publishEvent(
            tx,
            {
              type: 'payment.succeeded',
              merchantId: p.merchant_id,
              environment: 'sandbox',
              object: {
                id: `pay_${i}`,
                object: 'payment',
                status: 'succeeded',
                amount: '10.00',
                asset_code: 'USDC.ETH',
                metadata: { order: `ord_${i}` },
              },
            },
            new Date(),
          );
          ids.push(r.event.id);
        }
      });
      const committed = now();
      for (const id of ids) published.set(id, committed);
    }
  };
  const publishOne = async (i: number) => {
    const r = await database.db.transaction((tx) =>
      publishEvent(
        tx,
        {
          type: 'payment.succeeded',
          merchantId: p.merchant_id,
          environment: 'sandbox',
          object: {
            id: `pay_${i}`,
            object: 'payment',
            status: 'succeeded',
            amount: '10.00',
            asset_code: 'USDC.ETH',
            metadata: { order: `ord_${i}` },
          },
        },
        new Date(),
      ),
    );
    published.set(r.event.id, now());
  };
  /** Paced publishing: event i is published at tPublish + i / RATE, each in its own transaction. */
  const paced = async () => {
    const inFlight = new Set<Promise<void>>();
    for (let i = 0; i < EVENTS; i++) {
      const wait = tPublish + (i * 1000) / RATE! - now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      const p1 = publishOne(i).finally(() => inFlight.delete(p1));
      inFlight.add(p1);
    }
    await Promise.all(inFlight);
  };
  const cpu0 = MODE === 'backlog' ? null : process.cpuUsage();
  const claimsBefore = workers.reduce((n, w) => n + claimsOf(w), 0);
  if (RATE !== undefined && MODE === 'pipeline') await paced();
  else await Promise.all(Array.from({ length: PUBLISHERS }, publisher));
  const publishMs = now() - tPublish;
  const t0 = MODE === 'backlog' ? now() : tPublish;
  if (MODE === 'backlog') {
    for (const id of published.keys()) published.set(id, t0); // latency = time in the backlog
    await Promise.all(workers.map((w) => w.start()));
  }
  const cpuStart = cpu0 ?? process.cpuUsage();
  const claims0 = MODE === 'backlog' ? workers.reduce((n, w) => n + claimsOf(w), 0) : claimsBefore;
  await done;
  const totalMs = now() - t0;
  const cpu = process.cpuUsage(cpuStart);
  const claims = workers.reduce((n, w) => n + claimsOf(w), 0) - claims0;
  clearInterval(sampler);
  await Promise.all(workers.map((w) => w.stop()));

  const latencies: number[] = [];
  let duplicates = 0;
  for (const [id, ats] of arrivals) {
    const at = published.get(id)!;
    for (const a of ats) latencies.push(a - at);
    duplicates += ats.length - ENDPOINTS;
  }
  latencies.sort((a, b) => a - b);
  const [{ n: attempts }] = (await database.query<{ n: string }>('SELECT count(*) AS n FROM delivery_attempts', [])) as [{ n: string }];
  const result = {
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, cpu: cpus()[0]?.model, memory_gib: Math.round(totalmem() / 2 ** 30), node: process.version },
    params: {
      db: args.db,
      mode: MODE,
      rate: RATE ?? null,
      events: EVENTS,
      endpoints: ENDPOINTS,
      deliveries: TOTAL,
      workers: WORKERS,
      publishers: PUBLISHERS,
      receiver_delay_ms: Number(args['receiver-delay-ms']),
    },
    publish_events_per_s: Math.round(EVENTS / (publishMs / 1000)),
    /** pipeline: from the first publish to the last arrival; backlog: from worker start. */
    deliveries_per_s: Math.round(TOTAL / (totalMs / 1000)),
    total_s: +(totalMs / 1000).toFixed(2),
    latency_ms: {
      p50: Math.round(pct(latencies, 50)),
      p95: Math.round(pct(latencies, 95)),
      p99: Math.round(pct(latencies, 99)),
      max: Math.round(latencies.at(-1)!),
    },
    duplicates,
    attempts_logged: Number(attempts),
    peak_rss_mib: Math.round(peakRss / 2 ** 20),
    /** CPU of this process (user + system) per delivery while delivering: the workers' cost (backlog); with publishing too (pipeline). */
    cpu_ms_per_delivery: +((cpu.user + cpu.system) / 1000 / TOTAL).toFixed(3),
    /** Claim statements per delivery while delivering (older workers don't count them: null). */
    claims_per_delivery: Number.isNaN(claims) ? null : +(claims / TOTAL).toFixed(3),
    load_average: loadavg().map((l) => +l.toFixed(2)),
  };
  console.log(JSON.stringify(result, null, 2));
  if (args.save) {
    mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
    writeFileSync(new URL(`./results/${args.save}.json`, import.meta.url), `${JSON.stringify(result, null, 2)}\n`);
  }
  receiver.send('stop');
  await ctx.close();
  await database.close();
  await dropDb();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

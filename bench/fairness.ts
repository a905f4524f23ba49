/**
 * Fair sharing benchmark: the latency of one healthy endpoint of Platform B, alone and then
 * beside 100 dead endpoints (they take the request and never answer) of Platform A that keep
 * receiving events. Real PostgreSQL, a real worker, receivers in their own process, the
 * contract's 10 s deadline, default concurrency settings.
 *
 *   npx tsx bench/fairness.ts [--rate 50] [--seconds 20] [--dead 100] [--dead-rate 20] [--save name]
 *
 * Both phases publish B's events at --rate per second for --seconds; the second phase also
 * publishes --dead-rate events per second to A (each fans out to every dead endpoint).
 * Latency: B's publish commit -> the receiver has the request.
 */
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
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
    rate: { type: 'string', default: '50' },
    seconds: { type: 'string', default: '20' },
    dead: { type: 'string', default: '100' },
    'dead-rate': { type: 'string', default: '20' },
    save: { type: 'string' },
  },
});
const RATE = Number(args.rate);
const SECONDS = Number(args.seconds);
const DEAD = Number(args.dead);
const DEAD_RATE = Number(args['dead-rate']);

const now = () => performance.timeOrigin + performance.now();
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const scratch = await createPgDatabase(process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', 'payhooks_bench');
  const database = await openDatabase({ databaseUrl: scratch.url, dataDir: undefined, poolSize: 20 });
  await migrate(database);
  const config = loadConfig({}, { databaseUrl: scratch.url, allowPrivateUrls: true, logLevel: 'silent' });
  const ctx = createContext({ config, database, clock: systemClock, logger: pino({ level: 'silent' }), encryptionKey: randomBytes(32) });

  const receiver = fork(new URL('./receiver.mjs', import.meta.url));
  const port = await new Promise<number>((resolve) => receiver.once('message', (m: { port: number }) => resolve(m.port)));
  const arrivals = new Map<string, number>();
  receiver.on('message', (m: { arrivals?: [string, string, number][] }) => {
    for (const [id, , at] of m.arrivals ?? []) arrivals.set(id, at);
  });

  const a = await createPlatform(database.db, 'noisy');
  const b = await createPlatform(database.db, 'quiet');
  const scopeOf = (platformId: string) => ({
    platformId,
    environment: 'sandbox' as const,
    actor: { type: 'operator' as const, id: 'bench' },
  });
  await ctx.endpoints.create(scopeOf(b.platform_id), { url: `http://127.0.0.1:${port}/healthy`, enabled_events: ['*'] });

  const worker = ctx.createWorker();
  await worker.start();

  let seq = 0;
  const publishOne = async (merchantId: string) => {
    const i = seq++;
    const r = await database.db.transaction((tx) =>
      publishEvent(
        tx,
        {
          type: 'payment.succeeded',
          merchantId,
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
    return { id: r.event.id, committed: now() };
  };
  /** Publishes to `merchantId` at `rate`/s for SECONDS; resolves to (event id, commit time). */
  const steady = async (merchantId: string, rate: number) => {
    const out: Array<{ id: string; committed: number }> = [];
    const start = now();
    for (let i = 0; i < rate * SECONDS; i++) {
      const due = start + (i * 1000) / rate;
      if (due > now()) await sleep(due - now());
      out.push(await publishOne(merchantId));
    }
    return out;
  };
  const latencyOf = async (events: Array<{ id: string; committed: number }>) => {
    const deadline = now() + 30_000;
    while (events.some((e) => !arrivals.has(e.id)) && now() < deadline) await sleep(50);
    const lat = events.map((e) => (arrivals.get(e.id) ?? Infinity) - e.committed).sort((x, y) => x - y);
    return {
      events: events.length,
      delivered: lat.filter(Number.isFinite).length,
      p50: Math.round(pct(lat, 50)),
      p95: Math.round(pct(lat, 95)),
      p99: Math.round(pct(lat, 99)),
      max: Math.round(lat.at(-1)!),
    };
  };

  const alone = await latencyOf(await steady(b.merchant_id, RATE));

  for (let i = 0; i < DEAD; i++)
    await ctx.endpoints.create(scopeOf(a.platform_id), { url: `http://127.0.0.1:${port}/dead/${i}`, enabled_events: ['*'] });
  const [, quiet] = await Promise.all([steady(a.merchant_id, DEAD_RATE), steady(b.merchant_id, RATE)]);
  const besideDead = await latencyOf(quiet);
  // (null when run against a version without the circuit breaker, for a before/after comparison)
  const throttled = await database
    .query<{ n: string }>('SELECT count(*) AS n FROM webhook_endpoints WHERE throttled_at IS NOT NULL', [])
    .then(
      (rows) => Number(rows[0]!.n),
      () => null,
    );

  const result = {
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, cpu: cpus()[0]?.model, node: process.version },
    params: {
      rate: RATE,
      seconds: SECONDS,
      dead_endpoints: DEAD,
      dead_rate: DEAD_RATE,
      worker_concurrency: config.workerConcurrency,
      endpoint_concurrency: config.endpointConcurrency,
      platform_share: config.platformShare,
      attempt_timeout_ms: config.attemptTimeoutMs,
    },
    healthy_alone_ms: alone,
    healthy_beside_dead_ms: besideDead,
    p99_ratio: +(besideDead.p99 / alone.p99).toFixed(2),
    dead_endpoints_throttled_at_end: throttled,
  };
  console.log(JSON.stringify(result, null, 2));
  if (args.save) {
    mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
    writeFileSync(new URL(`./results/${args.save}.json`, import.meta.url), `${JSON.stringify(result, null, 2)}\n`);
  }
  receiver.kill('SIGKILL'); // cuts the held connections, so the worker's drain doesn't wait on them
  await worker.stop();
  await ctx.close();
  await database.close();
  await scratch.drop();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

/**
 * The `growth` scenario of the reference benchmark (`npm run bench -- --only growth`): what the
 * hot paths and the background jobs cost against stored history, at several sizes of it, each
 * with its ratio to the smallest. For each size, in a scratch database cloned from the migrated
 * template:
 *
 * 1. history is seeded in SQL (`seed.ts`: four weekly partitions, 20 Platforms, 100 endpoints);
 * 2. reads through the API (in-process, `app.inject`: routing, auth, the query and the JSON, no
 *    network), each the median of `READS` requests: the delivery log's first page (100 rows)
 *    and a deep page (the 51st page of 100, or the last one a shorter history has) by endpoint
 *    (the busiest endpoint; an endpoint of the Platform with the smallest share) and by Platform
 *    (the largest and the smallest); the events list by type, by object, by `delivery_success=
 *    false` and by a day's `created` range; the endpoint stats (an endpoint's last 24 hours, 7 days
 *    by hour and 30 days by day; the largest Platform's 24 hours and 30 days), on a stats table
 *    at its steady size (each endpoint's 8 days of hours and 30 days);
 * 3. one-event publishing in-process (`publishEvent`, one per transaction, 8 at a time, to a
 *    Platform of its own with one endpoint), without and with an idempotency key, alternated;
 * 4. a backlog drain: 200 events x 100 endpoints published by the publisher process, then one
 *    `payhooks worker` (the reference drain's settings); deliveries/s at the receivers;
 * 5. retention (`maintainPartitions`) with nothing to drop (the default 30-day window; the median
 *    of 3 runs after one that made the weeks ahead), then with the oldest seeded week expired
 *    (it is dropped: a quarter of the history).
 */
import { pino } from 'pino';
import { openDatabase, type Database } from '../../packages/server/src/db/client.ts';
import { loadConfig } from '../../packages/server/src/config.ts';
import { systemClock } from '../../packages/server/src/clock.ts';
import { createContext } from '../../packages/server/src/context.ts';
import { buildApp } from '../../packages/server/src/api/app.ts';
import { createApiKey, createPlatform } from '../../packages/server/src/tenancy/platforms.ts';
import { webhookEndpoints } from '../../packages/server/src/db/schema.ts';
import { publishEvent } from '../../packages/server/src/events/publish.ts';
import { maintainPartitions } from '../../packages/server/src/db/retention.ts';
import { samplePayment } from '../reference/sample-payment.ts';
import { BENCH_WORKER_ENV, drop, publish, scratch, setupPlatform, startWorkers, type Env } from '../reference/scenarios.ts';
import { perSecond, round, sleep } from '../reference/stats.ts';
import { seedHistory, type SeedResult } from './seed.ts';

/** Stored deliveries of each size: the default run, and `--long`. */
export const GROWTH_SIZES = [5_000, 1_000_000, 5_000_000];
export const GROWTH_SIZES_LONG = [...GROWTH_SIZES, 20_000_000];
const READS = 15;
const DEEP_PAGES = 50;
const PAGE = 100;
const DAY = 86_400_000;

export interface GrowthSize {
  deliveries_stored: number;
  seeded: { events: number; deliveries: number; attempts: number; idempotency_keys: number; seconds: number };
  /** Bytes of each history table (heap, indexes, TOAST), and per stored delivery all tables together. */
  sizes: SeedResult['sizes'];
  bytes_per_delivery: number;
  /** Median ms of one request; `depth`: rows before the page. */
  log: Record<string, { first_ms: number; deep_ms: number; depth: number }>;
  events_list_ms: Record<string, number>;
  /** Median ms of a stats read (GET /webhook_endpoints/{id}/stats, GET /webhook_stats). */
  stats_ms: Record<string, number>;
  publish_per_s: { plain: number; keyed: number };
  drain_per_s: number;
  retention_ms: { nothing_to_drop: number; drop_oldest_week: number; dropped: string[] };
}

export async function growth(
  env: Env,
  o: { sizes: number[]; timeoutMs: number },
): Promise<{ sizes: GrowthSize[]; ratios: unknown[]; table: string }> {
  const results: GrowthSize[] = [];
  for (const size of o.sizes) {
    env.log(`  growth: ${size.toLocaleString('en')} deliveries of history`);
    results.push(await oneSize(env, size, o.timeoutMs));
    env.log(`  growth ${size}: ${JSON.stringify(results.at(-1))}`); // kept if a later size fails or is stopped
  }
  const ratios = results.map((r) => ratioTo(results[0]!, r));
  return { sizes: results, ratios, table: table(results) };
}

async function oneSize(env: Env, size: number, timeoutMs: number): Promise<GrowthSize> {
  const db = await scratch(env, true);
  try {
    const seeded = await seedHistory(db.url, { deliveries: size, log: env.log });
    const database = await openDatabase({ databaseUrl: db.url, dataDir: undefined, poolSize: 10 });
    try {
      const log = await logReads(env, database, db.url, seeded);
      const events_list_ms = await eventReads(database, db.url, seeded);
      const stats_ms = await statsReads(database, db.url, seeded);
      const publish_per_s = await publishRates(database);
      const drain_per_s = await drain(env, db, timeoutMs);
      const retention_ms = await retention(database, seeded);
      const bytes = Object.values(seeded.sizes).reduce((a, s) => a + s.table + s.indexes + s.toast, 0);
      return {
        deliveries_stored: seeded.deliveries,
        seeded: {
          events: seeded.events,
          deliveries: seeded.deliveries,
          attempts: seeded.attempts,
          idempotency_keys: seeded.idempotencyKeys,
          seconds: round(seeded.ms / 1000, 1),
        },
        sizes: seeded.sizes,
        bytes_per_delivery: Math.round(bytes / seeded.deliveries),
        log,
        events_list_ms,
        stats_ms,
        publish_per_s,
        drain_per_s,
        retention_ms,
      };
    } finally {
      await database.close();
    }
  } finally {
    await drop(env, db);
  }
}

/** An in-process API on the scratch database, and a live key of each Platform asked for. */
async function api(database: Database, url: string) {
  const config = loadConfig({}, { databaseUrl: url, allowPrivateUrls: true, logLevel: 'silent' });
  const ctx = createContext({
    config,
    database,
    clock: systemClock,
    logger: pino({ level: 'silent' }),
    encryptionKey: Buffer.alloc(32, 7),
  });
  const app = await buildApp(ctx);
  const keys = new Map<string, string>();
  return {
    async get(platformId: string, path: string): Promise<{ ms: number; body: { data: { id: string }[]; has_more: boolean } }> {
      let key = keys.get(platformId);
      if (!key) {
        key = (await createApiKey(database.db, platformId, 'live')).key;
        keys.set(platformId, key);
      }
      const t0 = performance.now();
      const res = await app.inject({ method: 'GET', url: path, headers: { authorization: `Bearer ${key}` } });
      const ms = performance.now() - t0;
      if (res.statusCode !== 200) throw new Error(`growth: GET ${path} answered ${res.statusCode}: ${res.body.slice(0, 300)}`);
      return { ms, body: res.json() };
    },
    close: () => app.close(),
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function timedMedian(fn: () => Promise<{ ms: number }>): Promise<number> {
  await fn(); // the statement prepared, the pages cached
  const ms: number[] = [];
  for (let i = 0; i < READS; i++) ms.push((await fn()).ms);
  return round(median(ms), 2);
}

async function logReads(env: Env, database: Database, url: string, seeded: SeedResult): Promise<GrowthSize['log']> {
  const a = await api(database, url);
  try {
    const largest = seeded.platforms[0]!;
    const smallest = seeded.platforms.at(-1)!;
    const busiest = seeded.endpoints.find((e) => e.platformId === largest.id && e.environment === 'live')!;
    const quiet = seeded.endpoints.find((e) => e.platformId === smallest.id && e.environment === 'live')!;
    const cases: [string, string, string][] = [
      ['endpoint, busiest', largest.id, `endpoint_id=${busiest.id}&`],
      ['endpoint, smallest Platform', smallest.id, `endpoint_id=${quiet.id}&`],
      ['Platform, largest', largest.id, ''],
      ['Platform, smallest', smallest.id, ''],
    ];
    const out: GrowthSize['log'] = {};
    for (const [name, platformId, filter] of cases) {
      const base = `/api/v1/webhook_deliveries?${filter}limit=${PAGE}`;
      const first_ms = await timedMedian(() => a.get(platformId, base));
      // Walk to the 51st page (or the last one there is).
      let after: string | undefined;
      let depth = 0;
      for (let p = 0; p < DEEP_PAGES; p++) {
        const page = await a.get(platformId, after ? `${base}&starting_after=${after}` : base);
        if (!page.body.has_more) break;
        after = page.body.data.at(-1)!.id;
        depth += page.body.data.length;
      }
      const deep_ms = await timedMedian(() => a.get(platformId, after ? `${base}&starting_after=${after}` : base));
      out[name] = { first_ms, deep_ms, depth };
      env.log(`    log by ${name}: first ${first_ms} ms, ${depth} rows deep ${deep_ms} ms`);
    }
    return out;
  } finally {
    await a.close();
  }
}

async function eventReads(database: Database, url: string, seeded: SeedResult): Promise<Record<string, number>> {
  const a = await api(database, url);
  try {
    const platformId = seeded.platforms[0]!.id;
    const [obj] = await database.query<{ object_id: string }>(
      `SELECT object_id FROM events WHERE platform_id = $1 AND environment = 'live' AND object_id IS NOT NULL ORDER BY created_at DESC LIMIT 1 OFFSET 50`,
      [platformId],
    );
    const week = new Date(Date.parse(`${seeded.weeks[2]!.replace(/(\d{4})(\d{2})(\d{2})/, '$1-$2-$3')}T00:00:00Z`) + 2 * DAY);
    const iso = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');
    const day = `created[gte]=${iso(week)}&created[lt]=${iso(new Date(week.getTime() + DAY))}`;
    const out: Record<string, number> = {};
    for (const [name, query] of [
      ['type', 'type=payment.succeeded'],
      ['object_id', `object_id=${obj?.object_id ?? 'pay_none'}`],
      ['delivery_success=false', 'delivery_success=false'],
      ['created range (a day)', day],
    ] as const) {
      out[name] = await timedMedian(() => a.get(platformId, `/api/v1/events?${query}&limit=${PAGE}`));
    }
    return out;
  } finally {
    await a.close();
  }
}

/**
 * The stats table as it stands once a deployment has run for a while: every endpoint's hours of
 * the last 8 days and days of the 30-day window, with a few attempts and answer times each (what
 * a read costs depends on the buckets, not on their counts). Then the reads the portal makes.
 */
async function statsReads(database: Database, url: string, seeded: SeedResult): Promise<Record<string, number>> {
  const HOUR = 3_600_000;
  const now = Math.floor(Date.now() / HOUR) * HOUR;
  for (const e of seeded.endpoints)
    await database.query(
      `INSERT INTO endpoint_stats (endpoint_id, period, start, platform_id, environment, attempts, successes, failed_timeout,
         failed_connection, failed_tls, failed_http_4xx, failed_http_429, failed_http_5xx, failed_disabled, failed_other, latency)
       SELECT $1, p.period, p.start, $2, $3, 40, 38, 1, 0, 0, 0, 0, 1, 0, 0,
              array_fill(0, ARRAY[22]) || ARRAY[12, 15, 8, 3] || array_fill(0, ARRAY[38])
       FROM (SELECT 'hour' AS period, to_timestamp(($4::float8 - h * ${HOUR}) / 1000) AS start FROM generate_series(0, 8 * 24 - 1) AS h
             UNION ALL
             SELECT 'day', to_timestamp((floor($4::float8 / ${DAY}) * ${DAY} - d * ${DAY}::float8) / 1000) FROM generate_series(0, 29) AS d) p`,
      [e.id, e.platformId, e.environment, now],
    );
  await database.query('ANALYZE endpoint_stats', []);
  const a = await api(database, url);
  try {
    const largest = seeded.platforms[0]!;
    const busiest = seeded.endpoints.find((e) => e.platformId === largest.id && e.environment === 'live')!;
    const out: Record<string, number> = {};
    for (const [name, path] of [
      ['endpoint, 24 hours', `/api/v1/webhook_endpoints/${busiest.id}/stats`],
      ['endpoint, 7 days by hour', `/api/v1/webhook_endpoints/${busiest.id}/stats?from=${iso(now + HOUR - 7 * DAY)}`],
      ['endpoint, 30 days by day', `/api/v1/webhook_endpoints/${busiest.id}/stats?granularity=day`],
      ['Platform, 24 hours', '/api/v1/webhook_stats'],
      ['Platform, 30 days by day', '/api/v1/webhook_stats?granularity=day'],
    ] as const)
      out[name] = await timedMedian(() => a.get(largest.id, path));
    return out;
  } finally {
    await a.close();
  }
}

const iso = (t: number) => new Date(t).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** One-event transactions, 8 at a time, plain and keyed alternated (plain, keyed, keyed, plain). */
async function publishRates(database: Database): Promise<GrowthSize['publish_per_s']> {
  const p = await createPlatform(database.db, 'growth-publish', { passwordCost: { N: 1024, r: 8, p: 1 } });
  await database.db.insert(webhookEndpoints).values({
    id: `we_growthpub${p.platform_id.slice(-8)}`,
    platformId: p.platform_id,
    environment: 'sandbox',
    url: 'http://127.0.0.1:9/growth',
    enabledEvents: ['*'],
    secretCiphertext: 'x',
    status: 'enabled',
  } as never);
  let seq = 0;
  const run = async (events: number, keyed: boolean) => {
    let left = events;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (left-- > 0) {
          const i = seq++;
          await database.db.transaction((tx) =>
            publishEvent(
              tx,
              {
                type: 'payment.succeeded',
                merchantId: p.merchant_id,
                environment: 'sandbox',
                object: samplePayment(i),
                ...(keyed ? { idempotencyKey: `growth-${i}` } : {}),
              },
              new Date(),
            ),
          );
        }
      }),
    );
    return performance.now() - t0;
  };
  await run(500, false);
  await run(500, true);
  const n = 1500;
  const plain = [await run(n, false)];
  const keyed = [await run(n, true), await run(n, true)];
  plain.push(await run(n, false));
  const rate = (ms: number[]) =>
    perSecond(
      n * ms.length,
      ms.reduce((x, y) => x + y, 0),
    );
  // The queue rows these left would be the drain's: take them out (no worker ever sees them).
  await database.query(`DELETE FROM delivery_queue WHERE platform_id = $1`, [p.platform_id]);
  return { plain: rate(plain), keyed: rate(keyed) };
}

async function drain(env: Env, db: Awaited<ReturnType<typeof scratch>>, timeoutMs: number): Promise<number> {
  const urls = Array.from({ length: 100 }, (_, i) => env.receivers.url(i));
  const { merchantId, endpoints } = await setupPlatform(env, db, urls);
  const events = 200;
  await publish(env, { mode: 'burst', target: 'payhooks', databaseUrl: db.url, merchantId, endpoints, events, batch: 5, concurrency: 4 });
  env.receivers.arrivals.reset();
  const workers = await startWorkers(env, db, 1, BENCH_WORKER_ENV);
  try {
    const a = env.receivers.arrivals;
    const total = events * urls.length;
    if (!(await a.waitFor(total, timeoutMs))) env.log(`  ! growth drain: only ${a.count} of ${total} arrived`);
    await sleep(200);
    return perSecond(a.count - 1, a.last - a.first);
  } finally {
    await Promise.all(workers.map((w) => w.kill()));
  }
}

async function retention(database: Database, seeded: SeedResult): Promise<GrowthSize['retention_ms']> {
  const now = new Date();
  const window = 30 * DAY;
  await maintainPartitions(database, { now, retentionMs: window }); // weeks ahead, if any are missing
  const nothing: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    const r = await maintainPartitions(database, { now, retentionMs: window });
    nothing.push(performance.now() - t0);
    if (r.dropped.length) throw new Error(`growth: a run meant to have nothing to drop dropped ${r.dropped.join(', ')}`);
  }
  // The oldest seeded week just past the window: it goes, the three after it stay.
  const oldestEnd = Date.parse(`${seeded.weeks[0]!.replace(/(\d{4})(\d{2})(\d{2})/, '$1-$2-$3')}T00:00:00Z`) + 7 * DAY;
  const t0 = performance.now();
  const r = await maintainPartitions(database, { now, retentionMs: now.getTime() - oldestEnd });
  const dropMs = performance.now() - t0;
  return { nothing_to_drop: round(median(nothing), 1), drop_oldest_week: round(dropMs, 1), dropped: r.dropped };
}

/** Each figure of `r` over the same figure of `base` (times: larger is slower; rates: smaller is slower). */
function ratioTo(base: GrowthSize, r: GrowthSize) {
  const q = (x: number, y: number) => (y > 0 ? round(x / y, 2) : null);
  return {
    deliveries_stored: r.deliveries_stored,
    log: Object.fromEntries(
      Object.entries(r.log).map(([k, v]) => [k, { first: q(v.first_ms, base.log[k]!.first_ms), deep: q(v.deep_ms, base.log[k]!.deep_ms) }]),
    ),
    events_list: Object.fromEntries(Object.entries(r.events_list_ms).map(([k, v]) => [k, q(v, base.events_list_ms[k]!)])),
    stats: Object.fromEntries(Object.entries(r.stats_ms).map(([k, v]) => [k, q(v, base.stats_ms[k]!)])),
    publish: { plain: q(r.publish_per_s.plain, base.publish_per_s.plain), keyed: q(r.publish_per_s.keyed, base.publish_per_s.keyed) },
    drain: q(r.drain_per_s, base.drain_per_s),
    retention: {
      nothing_to_drop: q(r.retention_ms.nothing_to_drop, base.retention_ms.nothing_to_drop),
      drop_oldest_week: q(r.retention_ms.drop_oldest_week, base.retention_ms.drop_oldest_week),
    },
  };
}

/** A Markdown table: one row per figure, one column per size, each with its ratio to the smallest. */
function table(rs: GrowthSize[]): string {
  const base = rs[0]!;
  const cell = (v: number, b: number, unit: string) => `${v}${unit}${rs.length > 1 && b > 0 && v !== b ? ` (${round(v / b, 2)}x)` : ''}`;
  const rows: [string, (r: GrowthSize) => string][] = [
    ['events / deliveries / attempts stored', (r) => `${r.seeded.events} / ${r.seeded.deliveries} / ${r.seeded.attempts}`],
    ['bytes per stored delivery (all four tables)', (r) => String(r.bytes_per_delivery)],
    ['backlog drain, 100 endpoints (deliveries/s)', (r) => cell(r.drain_per_s, base.drain_per_s, '')],
    ['publishEvent, 1 per tx, 8 at a time (events/s)', (r) => cell(r.publish_per_s.plain, base.publish_per_s.plain, '')],
    ['the same with an idempotency key', (r) => cell(r.publish_per_s.keyed, base.publish_per_s.keyed, '')],
    ...Object.keys(base.log).flatMap((k): [string, (r: GrowthSize) => string][] => [
      [`log by ${k}: first page`, (r) => cell(r.log[k]!.first_ms, base.log[k]!.first_ms, ' ms')],
      [`log by ${k}: deep page`, (r) => `${cell(r.log[k]!.deep_ms, base.log[k]!.deep_ms, ' ms')} at ${r.log[k]!.depth}`],
    ]),
    ...Object.keys(base.events_list_ms).map((k): [string, (r: GrowthSize) => string] => [
      `events list by ${k}`,
      (r) => cell(r.events_list_ms[k]!, base.events_list_ms[k]!, ' ms'),
    ]),
    ...Object.keys(base.stats_ms).map((k): [string, (r: GrowthSize) => string] => [
      `stats: ${k}`,
      (r) => cell(r.stats_ms[k]!, base.stats_ms[k]!, ' ms'),
    ]),
    ['retention, nothing to drop', (r) => cell(r.retention_ms.nothing_to_drop, base.retention_ms.nothing_to_drop, ' ms')],
    ['retention, the oldest week dropped', (r) => cell(r.retention_ms.drop_oldest_week, base.retention_ms.drop_oldest_week, ' ms')],
  ];
  const head = `| stored deliveries | ${rs.map((r) => r.deliveries_stored.toLocaleString('en')).join(' | ')} |`;
  return [head, `|---|${rs.map(() => '---').join('|')}|`, ...rows.map(([k, f]) => `| ${k} | ${rs.map(f).join(' | ')} |`)].join('\n');
}

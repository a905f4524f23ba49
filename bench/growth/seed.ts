/**
 * Stored history, seeded fast: set-based SQL (`generate_series`) writing straight into the real
 * tables of a migrated payhooks database, whatever schema this checkout has (its indexes,
 * constraints and partitions are the ones that take the rows).
 *
 *   import { seedHistory } from './growth/seed.ts';
 *   const seeded = await seedHistory(databaseUrl, { deliveries: 5_000_000 });
 *
 * What it writes, over the `weeks` (4) whole weeks before the current one (each week its own
 * partitions, created here as the retention job would name them), evenly in time, oldest first:
 *
 * - 20 Platforms (`plt_growth01`..), 5 merchants each, 5 endpoints each (4 live, 1 sandbox;
 *   100 in all) with the subscriptions a merchant would pick (`*`, payments' outcomes, payments'
 *   progress, checkout sessions), so one event fans out to 1 to 4 of them (2.4 on average);
 * - skew like a payment service's tenants: Platform *i*'s share of events is that of a power law
 *   (`floor(20 * u^2.2)`): the largest about 26 %, the smallest about 2 %; 85 % of events live;
 *   event types in a payment flow's proportions (created, processing, succeeded, failed, ...);
 *   about 3 events per payment (`object_id`), so `events_object_idx` sees real cardinalities;
 * - events whose `body` is the envelope publishing writes (spec 2.1: a full Payment as
 *   `data.object`, metadata of varying length), 600-900 bytes, stored inline like real ones;
 *   1 in 200 carries a large metadata (about 3 KB) and goes to TOAST as a real one would;
 * - `keyedShare` (half) of events with an idempotency key (`pay_…:succeeded:1`, a payment's
 *   transition as payment flows publish them) and its `event_idempotency_keys` row;
 * - deliveries finished as history is: 96.5 % delivered (88 % at the first attempt, the rest at
 *   the second or third), 3 % exhausted (5 attempts), 0.5 % cancelled (none); none in the queue;
 * - attempts as record.ts writes them: status, duration, a capped response body, error kind and
 *   message on failures, the `Service-Signature` header sent.
 *
 * Why it is faithful: the same tables, the same indexes (never dropped and rebuilt: rows go in
 * through them in time order, one day at a time, so the indexes grow as they do in production,
 * page splits included, and their sizes are real), the same row widths (ids of the same length,
 * real bodies, TOAST where a real body would be toasted), then `VACUUM ANALYZE`, so the planner
 * has the statistics autovacuum would have given it. Two shortcuts, neither changing what is
 * stored: foreign-key triggers are off during the load (`session_replication_role = replica`:
 * the rows are consistent by construction), and the load is one statement per table per day
 * instead of one per event.
 */
import pg from 'pg';

export interface SeedOptions {
  /** Deliveries to write, about (events = deliveries / the mean fan-out). */
  deliveries: number;
  /** The history ends at the start of this instant's week. */
  now?: Date;
  /** Whole weeks of history (each its own partitions). */
  weeks?: number;
  /** Events that carry an idempotency key. */
  keyedShare?: number;
  log?: (line: string) => void;
}

export interface SeededEndpoint {
  id: string;
  platformId: string;
  environment: 'live' | 'sandbox';
  deliveries: number;
}

export interface SeedResult {
  events: number;
  deliveries: number;
  attempts: number;
  idempotencyKeys: number;
  /** Mondays (YYYYMMDD) of the seeded weeks, oldest first. */
  weeks: string[];
  /** Platforms by share of deliveries, largest first, with their merchants. */
  platforms: { id: string; merchantIds: string[]; deliveries: number }[];
  /** Every seeded endpoint, most deliveries first. */
  endpoints: SeededEndpoint[];
  ms: number;
  /** Bytes of each history table: heap, indexes and TOAST, summed over its partitions. */
  sizes: Record<string, { table: number; indexes: number; toast: number }>;
}

/** Mean deliveries per event with the subscriptions and the type mix below (measured: 2.39). */
const MEAN_FANOUT = 2.39;
const PLATFORMS = 20;
const DAY_MS = 86_400_000;
const WEEK_MS = 7 * DAY_MS;
/** Tables partitioned by week that history goes into (the keys' table once it is partitioned too). */
const WEEKLY = ['events', 'webhook_deliveries', 'delivery_attempts', 'event_idempotency_keys'];

/** Monday 00:00 UTC of the week holding `t` (as db/retention.ts). */
function weekStart(t: Date): Date {
  const day = new Date(Date.UTC(t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate()));
  return new Date(day.getTime() - ((day.getUTCDay() + 6) % 7) * DAY_MS);
}
const suffix = (d: Date) => d.toISOString().slice(0, 10).replace(/-/g, '');
const lit = (d: Date) => `'${d.toISOString()}'::timestamptz`;

export const platformId = (i: number) => `plt_growth${String(i + 1).padStart(2, '0')}`;

export async function seedHistory(databaseUrl: string, options: SeedOptions): Promise<SeedResult> {
  const t0 = performance.now();
  const log = options.log ?? (() => {});
  const weeks = options.weeks ?? 4;
  const keyedShare = options.keyedShare ?? 0.5;
  const current = weekStart(options.now ?? new Date());
  const from = new Date(current.getTime() - weeks * WEEK_MS);
  const events = Math.max(1, Math.round(options.deliveries / MEAN_FANOUT));
  const days = weeks * 7;
  const client = new pg.Client({ connectionString: databaseUrl, application_name: 'bench-growth-seed' });
  await client.connect();
  const q = async (text: string) => (await client.query(text)).rows as Record<string, unknown>[];
  try {
    // The weeks' partitions, for every table partitioned by week (named as the retention job names them).
    const { rows: partitioned } = await client.query<{ relname: string; key: string }>(
      `SELECT c.relname, a.attname AS key FROM pg_partitioned_table p JOIN pg_class c ON c.oid = p.partrelid
         JOIN pg_attribute a ON a.attrelid = p.partrelid AND a.attnum = p.partattrs[0]
        WHERE c.relname = ANY($1) AND c.relnamespace = 'public'::regnamespace`,
      [WEEKLY],
    );
    const weekList: string[] = [];
    for (let w = 0; w < weeks; w++) {
      const start = new Date(from.getTime() + w * WEEK_MS);
      const end = new Date(start.getTime() + WEEK_MS);
      weekList.push(suffix(start));
      for (const t of partitioned) {
        await q(
          `CREATE TABLE IF NOT EXISTS ${t.relname}_p${suffix(start)} PARTITION OF ${t.relname} FOR VALUES FROM (${lit(start)}) TO (${lit(end)})`,
        );
      }
    }

    await q(`INSERT INTO platforms (id, name) SELECT 'plt_growth' || lpad(p::text, 2, '0'), 'Growth ' || p FROM generate_series(1, ${PLATFORMS}) p
             ON CONFLICT DO NOTHING`);
    await q(`INSERT INTO merchants (id, platform_id, name)
             SELECT 'mch_growth' || lpad(p::text, 2, '0') || m, 'plt_growth' || lpad(p::text, 2, '0'), 'Shop ' || p || '-' || m
             FROM generate_series(1, ${PLATFORMS}) p, generate_series(1, 5) m ON CONFLICT DO NOTHING`);
    // Endpoint k of a Platform: 0 everything, 1 payments' outcomes, 2 payments' progress, 3 checkout, 4 sandbox.
    await q(`INSERT INTO webhook_endpoints (id, platform_id, environment, url, enabled_events, status, secret_ciphertext, created_at, updated_at)
             SELECT 'we_growth' || lpad(p::text, 2, '0') || k, 'plt_growth' || lpad(p::text, 2, '0'),
                    CASE WHEN k = 4 THEN 'sandbox' ELSE 'live' END,
                    'https://shop' || p || '.example/webhooks/' || k,
                    CASE k WHEN 0 THEN '{*}'::text[] WHEN 1 THEN '{payment.succeeded,payment.failed}'
                           WHEN 2 THEN '{payment.created,payment.processing,payment.succeeded}'
                           WHEN 3 THEN '{checkout_session.completed,checkout_session.expired,payment.succeeded}' ELSE '{*}' END,
                    'enabled', 'v1.' || md5('s' || p || k) || md5('t' || p || k) || md5('u' || p || k), ${lit(from)}, ${lit(from)}
             FROM generate_series(1, ${PLATFORMS}) p, generate_series(0, 4) k ON CONFLICT DO NOTHING`);

    // Since migration 0028 a key carries the week it belongs to (its event's).
    const [weekColumn] = await q(
      `SELECT 1 FROM information_schema.columns WHERE table_name = 'event_idempotency_keys' AND column_name = 'week'`,
    );
    await q(`SET session_replication_role = replica`);
    await q(`SELECT setseed(0.37)`);
    const perDay = Math.ceil(events / days);
    let written = 0;
    for (let d = 0; d < days; d++) {
      const n = Math.min(perDay, events - written);
      if (n <= 0) break;
      const dayStart = new Date(from.getTime() + d * DAY_MS);
      const step = DAY_MS / n;
      const g0 = written;
      await q(daySql(g0, n, dayStart, step, keyedShare, weekColumn !== undefined));
      written += n;
      if (d % 7 === 6) log(`  seeded ${weekList[Math.floor(d / 7)]}: ${written} events so far (${Math.round(performance.now() - t0)} ms)`);
    }
    await q(`SET session_replication_role = DEFAULT`);
    for (const t of ['events', 'webhook_deliveries', 'delivery_attempts', 'event_idempotency_keys']) await q(`VACUUM ANALYZE ${t}`);

    const [counts] = await q(`SELECT
        (SELECT count(*) FROM events WHERE platform_id LIKE 'plt_growth%') AS events,
        (SELECT count(*) FROM webhook_deliveries WHERE platform_id LIKE 'plt_growth%') AS deliveries,
        (SELECT count(*) FROM delivery_attempts WHERE delivery_id LIKE 'whd_g%') AS attempts,
        (SELECT count(*) FROM event_idempotency_keys WHERE platform_id LIKE 'plt_growth%') AS keys`);
    const perEndpoint = await q(`SELECT w.id, w.platform_id, w.environment, count(d.id) AS n
        FROM webhook_endpoints w LEFT JOIN webhook_deliveries d ON d.endpoint_id = w.id
        WHERE w.platform_id LIKE 'plt_growth%' GROUP BY w.id, w.platform_id, w.environment ORDER BY n DESC, w.id`);
    const endpoints: SeededEndpoint[] = perEndpoint.map((r) => ({
      id: String(r.id),
      platformId: String(r.platform_id),
      environment: r.environment as 'live' | 'sandbox',
      deliveries: Number(r.n),
    }));
    const byPlatform = new Map<string, number>();
    for (const e of endpoints) byPlatform.set(e.platformId, (byPlatform.get(e.platformId) ?? 0) + e.deliveries);
    const platforms = [...byPlatform.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([id, deliveries]) => ({ id, deliveries, merchantIds: [1, 2, 3, 4, 5].map((m) => `mch_growth${id.slice(-2)}${m}`) }));
    const result: SeedResult = {
      events: Number(counts!.events),
      deliveries: Number(counts!.deliveries),
      attempts: Number(counts!.attempts),
      idempotencyKeys: Number(counts!.keys),
      weeks: weekList,
      platforms,
      endpoints,
      ms: Math.round(performance.now() - t0),
      sizes: await historySizes(client),
    };
    log(
      `  seeded ${result.events} events, ${result.deliveries} deliveries, ${result.attempts} attempts, ${result.idempotencyKeys} keys in ${result.ms} ms`,
    );
    return result;
  } finally {
    await client.end();
  }
}

/** Heap, indexes and TOAST of each history table, summed over its partitions (a partitioned parent holds nothing itself). */
export async function historySizes(client: pg.Client): Promise<Record<string, { table: number; indexes: number; toast: number }>> {
  const { rows } = await client.query<{ t: string; table: string; indexes: string; toast: string }>(
    `SELECT t,
            coalesce(sum(pg_relation_size(p.relid)), 0) AS table,
            coalesce(sum(pg_indexes_size(p.relid)), 0) AS indexes,
            coalesce(sum(pg_total_relation_size(p.relid) - pg_relation_size(p.relid) - pg_indexes_size(p.relid)), 0) AS toast
       FROM unnest($1::text[]) t,
            LATERAL (SELECT relid FROM pg_partition_tree(t::regclass) WHERE isleaf
                     UNION SELECT t::regclass WHERE (SELECT relkind FROM pg_class WHERE oid = t::regclass) = 'r') p
      GROUP BY t`,
    [WEEKLY],
  );
  return Object.fromEntries(rows.map((r) => [r.t, { table: Number(r.table), indexes: Number(r.indexes), toast: Number(r.toast) }]));
}

/**
 * One day of history in one statement, each table's rows in time order: `n` events from `g0`,
 * `step` ms apart, their keys, their deliveries and the deliveries' attempts. Per event: its
 * Platform (power law), merchant, environment, type, payment (about 3 events each) and key,
 * drawn with random() under the seed set above, then the envelope as events/envelope.ts writes it.
 * Each event goes to its Platform's endpoints of its environment subscribed to its type; an
 * attempt is the last and successful one of a delivered delivery, a failed one otherwise.
 */
function daySql(g0: number, n: number, dayStart: Date, step: number, keyedShare: number, keyWeek: boolean): string {
  return `
WITH ev AS (
INSERT INTO events (id, platform_id, environment, merchant_id, type, body, idempotency_key, created_at, object_id)
SELECT e.id, e.platform_id, e.environment, e.merchant_id, e.type,
       '{"id":"' || e.id || '","object":"event","type":"' || e.type || '","api_version":"v1","environment":"' || e.environment ||
       '","merchant_id":"' || e.merchant_id || '","created_at":"' || to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') ||
       '","data":{"object":{"id":"' || e.object_id || '","object":"payment","status":"' || split_part(e.type, '.', 2) ||
       '","amount":"' || (e.r3 * 500)::numeric(10, 2) || '","asset_code":"' || (ARRAY['USDC.ETH', 'USDC-E.ARB', 'USDT.TRX', 'EURC.SOL'])[1 + (e.r3 * 4)::int % 4] ||
       '","metadata":{"order":"ord_' || substr(md5(e.object_id), 1, 12) || '","customer":"cus_' || substr(md5(e.merchant_id || e.object_id), 1, 16) || '"' ||
       CASE WHEN e.r4 < 0.3 THEN ',"cart":"' || repeat(substr(md5(e.id), 1, 8) || ',', 1 + (e.r4 * 40)::int) || '"' ELSE '' END ||
       CASE WHEN e.r4 > 0.995 THEN ',"notes":"' || (SELECT string_agg(md5(e.id || i), ' ') FROM generate_series(1, 90) i) || '"' ELSE '' END ||
       '},"description":' || CASE WHEN e.r3 < 0.6 THEN '"Order ' || substr(md5(e.id), 1, 6) || ' at Shop"' ELSE 'null' END ||
       ',"merchant_id":"' || e.merchant_id || '","environment":"' || e.environment || '","checkout_session":' ||
       CASE WHEN e.r3 < 0.4 THEN '"cs_' || substr(md5(e.object_id || 'cs'), 1, 24) || '"' ELSE 'null' END ||
       ',"created_at":"' || to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') ||
       '","updated_at":"' || to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || '"}}}',
       CASE WHEN e.r5 < ${keyedShare} THEN e.object_id || ':' || split_part(e.type, '.', 2) || ':' || e.seq END,
       e.created_at, e.object_id
FROM (
  SELECT 'evt_g' || substr(md5('e' || g), 1, 23) AS id,
         'plt_growth' || lpad(p::text, 2, '0') AS platform_id,
         'mch_growth' || lpad(p::text, 2, '0') || (1 + (random() * 4.999)::int) AS merchant_id,
         CASE WHEN random() < 0.85 THEN 'live' ELSE 'sandbox' END AS environment,
         CASE WHEN t < 0.25 THEN 'payment.created' WHEN t < 0.40 THEN 'payment.processing' WHEN t < 0.75 THEN 'payment.succeeded'
              WHEN t < 0.83 THEN 'payment.failed' WHEN t < 0.88 THEN 'payment.requires_action' WHEN t < 0.95 THEN 'checkout_session.completed'
              WHEN t < 0.98 THEN 'checkout_session.expired' ELSE 'payment.cancelled' END AS type,
         'pay_g' || substr(md5('p' || (g / 3)), 1, 23) AS object_id, g % 3 AS seq,
         ${lit(dayStart)} + ((g - ${g0}) * ${step}) * interval '1 millisecond' AS created_at,
         random() AS r3, random() AS r4, random() AS r5
  FROM (SELECT g, 1 + floor(${PLATFORMS} * power(random(), 2.2))::int AS p, random() AS t FROM generate_series(${g0}, ${g0 + n - 1}) g) s
) e
ORDER BY e.created_at
RETURNING id, platform_id, environment, type, idempotency_key, created_at
), k AS (
INSERT INTO event_idempotency_keys (platform_id, environment, idempotency_key, event_id, event_created_at${keyWeek ? ', week' : ''})
SELECT platform_id, environment, idempotency_key, id, created_at${keyWeek ? ", date_trunc('week', created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'" : ''}
FROM ev WHERE idempotency_key IS NOT NULL ORDER BY created_at
), d AS (
INSERT INTO webhook_deliveries (id, event_id, endpoint_id, copy, platform_id, environment, state, attempt_count, automatic_attempts,
                                next_attempt_at, last_attempt_at, created_at, updated_at, event_type)
SELECT x.id, x.event_id, x.endpoint_id, 1, x.platform_id, x.environment, x.state, x.attempts, x.attempts, NULL,
       CASE WHEN x.attempts > 0 THEN x.created_at + (x.attempts - 1) * interval '7 minutes' + interval '80 milliseconds' END,
       x.created_at, x.created_at + greatest(x.attempts - 1, 0) * interval '7 minutes' + interval '80 milliseconds', x.type
FROM (
  SELECT 'whd_g' || substr(md5(e.id || w.id), 1, 23) AS id, e.id AS event_id, w.id AS endpoint_id, e.platform_id, e.environment, e.created_at, e.type,
         CASE WHEN r < 0.965 THEN 'delivered' WHEN r < 0.995 THEN 'exhausted' ELSE 'cancelled' END AS state,
         CASE WHEN r < 0.85 THEN 1 WHEN r < 0.93 THEN 2 WHEN r < 0.965 THEN 3 WHEN r < 0.995 THEN 5 ELSE 0 END AS attempts
  FROM (SELECT ev.*, random() AS r FROM ev) e
  JOIN webhook_endpoints w ON w.platform_id = e.platform_id AND w.environment = e.environment
   AND ('*' = ANY (w.enabled_events) OR e.type = ANY (w.enabled_events))
) x
ORDER BY x.created_at, x.endpoint_id
RETURNING id, created_at, state, attempt_count
)
INSERT INTO delivery_attempts (id, delivery_id, attempt_number, trigger, succeeded, started_at, duration_ms, status_code, response_body,
                               error_kind, error_message, delivery_created_at, request_signature)
SELECT 'wha_g' || substr(md5(d.id || k), 1, 23), d.id, k, 'automatic', ok, d.created_at + (k - 1) * interval '7 minutes',
       CASE WHEN ok THEN 40 + (random() * 200)::int ELSE 10000 END,
       CASE WHEN ok THEN 200 ELSE 503 END,
       CASE WHEN ok THEN '{"received":true}' ELSE '<html><body><h1>503 Service Unavailable</h1>No server is available to handle this request.</body></html>' END,
       CASE WHEN ok THEN NULL ELSE 'http_status' END,
       CASE WHEN ok THEN NULL ELSE 'The endpoint answered HTTP 503.' END,
       d.created_at,
       't=' || extract(epoch FROM d.created_at)::bigint || ',v1=' || md5(d.id || k) || md5(k || d.id)
FROM (SELECT d.*, generate_series(1, d.attempt_count) AS k FROM d) d,
     LATERAL (SELECT d.state = 'delivered' AND d.k = d.attempt_count AS ok) o
ORDER BY d.created_at, d.id, k`;
}

/**
 * From the command line, into an existing migrated database:
 *   npx tsx bench/growth/seed.ts postgres://postgres@127.0.0.1:5432/mydb 5000000 [weeks, 4 by default]
 */
if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const [url, deliveries, weeks] = process.argv.slice(2);
  if (!url || !deliveries) throw new Error('usage: npx tsx bench/growth/seed.ts <database url> <deliveries> [weeks]');
  const seeded = await seedHistory(url, {
    deliveries: Number(deliveries),
    ...(weeks ? { weeks: Number(weeks) } : {}),
    log: (l) => process.stderr.write(`${l}\n`),
  });
  process.stdout.write(`${JSON.stringify({ ...seeded, endpoints: seeded.endpoints.length }, null, 2)}\n`);
}

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENDPOINT_STATS, PLATFORM_STATS } from '../../src/delivery/stats.ts';
import { startService, type TestService } from '../helpers/service.ts';
import { ExplainingClient, buffersOf, planNodes, rowsReadOfTable } from '../helpers/plan.ts';

/**
 * Endpoint stats are read by bucket (delivery/stats.ts): an endpoint's range by its primary key,
 * a Platform's by (platform_id, environment, period, start), whatever else the table holds. The
 * table here: 600 endpoints of three Platforms, each with 8 days of hours and 200 days, about
 * 235,000 buckets (a fleet's worth; the delivery history behind them is never read). Bounds are
 * on rows and buffers read, never on time.
 */
const ENDPOINTS = 600;
const HOURS = 8 * 24;
const DAYS = 200;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const now = Math.floor(Date.now() / HOUR) * HOUR;

let svc: TestService;
let client: ExplainingClient;
let platform: string;

/** Endpoint i belongs to Platform i % 3; every bucket has a few attempts and answer times. */
const SEED = `
INSERT INTO endpoint_stats (endpoint_id, period, start, platform_id, environment, attempts, successes, failed_timeout,
  failed_connection, failed_tls, failed_http_4xx, failed_http_429, failed_http_5xx, failed_disabled, failed_other, latency)
SELECT 'we_plan' || e, p.period, p.start, CASE e % 3 WHEN 0 THEN $1 WHEN 1 THEN $2 ELSE $3 END, 'live',
       10, 9, 0, 0, 0, 0, 0, 1, 0, 0, array_fill(0, ARRAY[20]) || ARRAY[10] || array_fill(0, ARRAY[43])
FROM generate_series(0, $4::int - 1) AS e
CROSS JOIN LATERAL (
  SELECT 'hour' AS period, to_timestamp(($5::float8 - h * ${HOUR}) / 1000) AS start FROM generate_series(0, ${HOURS - 1}) AS h
  UNION ALL
  SELECT 'day', to_timestamp((floor($5::float8 / ${DAY}) * ${DAY} - d * ${DAY}::float8) / 1000) FROM generate_series(0, ${DAYS - 1}) AS d
) p`;

beforeAll(async () => {
  svc = await startService({});
  const [a, b, c] = [await svc.platform('A'), await svc.platform('B'), await svc.platform('C')];
  platform = a.platform_id;
  await svc.ctx.database.query(SEED, [a.platform_id, b.platform_id, c.platform_id, ENDPOINTS, now]);
  await svc.ctx.database.query('ANALYZE endpoint_stats', []);
  client = new ExplainingClient({ connectionString: svc.testDb.databaseUrl });
  await client.connect();
}, 180_000);
afterAll(async () => {
  await client?.end();
  await svc?.close();
});

async function explain(text: string, params: unknown[]) {
  client.plans = [];
  const rows = (await client.query(text, params)).rows;
  const { plan } = client.plans[0]!;
  return { rows, plan, read: rowsReadOfTable(plan, 'endpoint_stats'), buffers: buffersOf(plan), nodes: planNodes(plan) };
}

describe('endpoint stats read the buckets they return among ~235,000', () => {
  it("an endpoint's 7 days of hours: 168 rows by the primary key", async () => {
    const from = new Date(now - 167 * HOUR);
    const r = await explain(
      ENDPOINT_STATS.text,
      ENDPOINT_STATS.bind({
        endpoint_id: 'we_plan3',
        period: 'hour',
        from,
        until: new Date(now + HOUR),
        platform_id: platform,
        environment: 'live',
      }),
    );
    expect(r.rows).toHaveLength(168);
    const scans = r.nodes.filter((n) => n['Relation Name'] === 'endpoint_stats');
    expect(scans.map((n) => n['Index Name'])).toEqual(['endpoint_stats_pkey']);
    expect(r.read).toBeLessThanOrEqual(168);
    // A few index pages and the rows' heap pages (a bucket row is ~350 bytes: ~20 to a page).
    expect(r.buffers, JSON.stringify(r.plan)).toBeLessThanOrEqual(40);
  });

  it("an endpoint's 200 days", async () => {
    const r = await explain(
      ENDPOINT_STATS.text,
      ENDPOINT_STATS.bind({
        endpoint_id: 'we_plan3',
        period: 'day',
        from: new Date(now - 400 * DAY),
        until: new Date(now + DAY),
        platform_id: platform,
        environment: 'live',
      }),
    );
    expect(r.rows).toHaveLength(DAYS);
    expect(r.read).toBeLessThanOrEqual(DAYS);
    expect(r.buffers).toBeLessThanOrEqual(40);
  });

  it("a Platform's last 24 hours over its 200 endpoints: its buckets and no other Platform's", async () => {
    const r = await explain(
      PLATFORM_STATS.text,
      PLATFORM_STATS.bind({
        platform_id: platform,
        environment: 'live',
        period: 'hour',
        from: new Date(now - 23 * HOUR),
        until: new Date(now + HOUR),
      }),
    );
    const expected = (ENDPOINTS / 3) * 24;
    expect(r.rows).toHaveLength(expected);
    // Through the Platform's index (an index scan, or a bitmap of it): only its rows are read.
    const indexes = r.nodes.map((n) => n['Index Name']).filter(Boolean);
    expect(indexes, JSON.stringify(r.plan).slice(0, 2000)).toEqual(['endpoint_stats_platform_idx']);
    expect(r.nodes.some((n) => n['Node Type'] === 'Seq Scan')).toBe(false);
    // At worst a heap page per row, against the ~10,000 pages the table fills.
    expect(r.buffers).toBeLessThanOrEqual(expected + 50);
    expect(r.read).toBeLessThanOrEqual(expected);
  });
});

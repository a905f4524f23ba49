import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeliveryService } from '../../src/delivery/service.ts';
import { WEEK_MS, weekStart, weekSuffix } from '../../src/db/retention.ts';
import { startService, type TestService } from '../helpers/service.ts';
import { ExplainingClient, buffersOf, explainedReads, planNodes, rowsReadOfTable } from '../helpers/plan.ts';
import type { Scope } from '../../src/scope.ts';

/**
 * The delivery log (the API's `GET /webhook_deliveries` and the portal's log, both
 * DeliveryService.list) reads index entries in proportion to the page, for every filter, on the
 * first page and deep in the log, whatever the share of the history the endpoint or the Platform
 * has. The history: 120,000 deliveries over four weekly partitions and three Platforms, skewed so
 * that one endpoint is 2 % of the biggest Platform (the shape on which PostgreSQL, multiplying
 * the Platform's and the endpoint's selectivities, chose a bitmap scan of every partition and a
 * sort). Every statement the service issues is explained with its real values; the bounds are on
 * rows and buffers read, never on time.
 */
const TOTAL = 120_000;
const LIMIT = 100;
/** The deep page starts after this many deliveries of the filtered log. */
const DEPTH = 50 * LIMIT;

let svc: TestService;
let client: ExplainingClient;
let deliveries: DeliveryService;
let scope: Scope;
const ep: Record<'big' | 'small' | 'other' | 'third', string> = { big: '', small: '', other: '', third: '' };
const end = Date.now() - 3_600_000;
const start = weekStart(new Date(end)).getTime() - 3 * WEEK_MS;
const step = (end - start) / TOTAL;

/*
 * Row i of the history, by i % 100: 0-59 the big endpoint of Platform A, 60-61 its small one
 * (2 % of the history, 3 % of A's), 62-94 Platform B, 95-99 Platform C. By i % 50: 7 exhausted,
 * 23 failed_retrying (out of the queue: parked), the rest delivered. One event in five of A is a
 * payment.failed, one in 100 a checkout_session.completed. Events exist for A's deliveries of the
 * last 20,000 rows, twenty to an object (the portal's filter by object reads events).
 */
const SEED = `
INSERT INTO webhook_deliveries (id, event_id, endpoint_id, platform_id, environment, state, attempt_count, automatic_attempts,
                                created_at, updated_at, event_type)
SELECT 'whd_' || lpad(i::text, 7, '0'), 'evt_' || lpad(i::text, 7, '0'),
       CASE WHEN i % 100 < 60 THEN $1 WHEN i % 100 < 62 THEN $2 WHEN i % 100 < 95 THEN $3 ELSE $4 END,
       CASE WHEN i % 100 < 62 THEN $5 WHEN i % 100 < 95 THEN $6 ELSE $7 END, 'sandbox',
       CASE i % 50 WHEN 7 THEN 'exhausted' WHEN 23 THEN 'failed_retrying' ELSE 'delivered' END, 1, 1,
       date_trunc('milliseconds', $8::timestamptz + i * $9::float8 * interval '1 millisecond'), now(),
       CASE WHEN i % 100 = 11 THEN 'checkout_session.completed' WHEN i % 5 = 0 THEN 'payment.failed' ELSE 'payment.succeeded' END
FROM generate_series(1, $10::int) AS i`;
const SEED_EVENTS = `
INSERT INTO events (id, platform_id, environment, merchant_id, type, body, created_at, object_id)
SELECT 'evt_' || lpad(i::text, 7, '0'), $1, 'sandbox', $2, 'payment.succeeded', '{}',
       date_trunc('milliseconds', $3::timestamptz + i * $4::float8 * interval '1 millisecond'), 'pay_' || (i / 20)
FROM generate_series($5::int - 20000, $5::int) AS i WHERE i % 100 < 62`;
const at = (i: number) => new Date(start + i * step);
const idOf = (i: number) => `whd_${String(i).padStart(7, '0')}`;

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true });
  const [a, b, c] = [await svc.platform('Big'), await svc.platform('Second'), await svc.platform('Third')];
  const operator = { type: 'operator' as const, id: 'test' };
  scope = { platformId: a.platform_id, environment: 'sandbox', actor: operator };
  const endpoint = async (platformId: string, path: string) =>
    (
      await svc.ctx.endpoints.create(
        { platformId, environment: 'sandbox', actor: operator },
        { url: `http://127.0.0.1:9/${path}`, enabled_events: ['*'] },
      )
    ).id;
  ep.big = await endpoint(a.platform_id, 'big');
  ep.small = await endpoint(a.platform_id, 'small');
  ep.other = await endpoint(b.platform_id, 'other');
  ep.third = await endpoint(c.platform_id, 'third');
  // The four weeks as partitions of their own (a fresh database has the current week onwards).
  for (let w = 0; w < 4; w++) {
    const week = new Date(start + w * WEEK_MS);
    const next = new Date(week.getTime() + WEEK_MS);
    for (const table of ['webhook_deliveries', 'events'])
      await svc.ctx.database.query(
        `CREATE TABLE IF NOT EXISTS ${table}_p${weekSuffix(week)} PARTITION OF ${table} FOR VALUES FROM ('${week.toISOString()}') TO ('${next.toISOString()}')`,
        [],
      );
  }
  await svc.ctx.database.query(SEED, [
    ep.big,
    ep.small,
    ep.other,
    ep.third,
    a.platform_id,
    b.platform_id,
    c.platform_id,
    new Date(start).toISOString(),
    step,
    TOTAL,
  ]);
  await svc.ctx.database.query(SEED_EVENTS, [a.platform_id, a.merchant_id, new Date(start).toISOString(), step, TOTAL]);
  await svc.ctx.database.query('ANALYZE webhook_deliveries', []);
  await svc.ctx.database.query('ANALYZE events', []);

  client = new ExplainingClient({ connectionString: svc.testDb.databaseUrl });
  await client.connect();
  ({ deliveries } = explainedReads(svc, client));
}, 180_000);
afterAll(async () => {
  await client?.end();
  await svc?.close();
});

type Filters = Omit<Parameters<DeliveryService['list']>[1], 'limit' | 'startingAfter'>;

/** A page of the log, with every statement's deliveries rows and buffers read. */
async function page(filters: Filters, startingAfter?: string) {
  client.plans = [];
  const result = await deliveries.list(scope, { ...filters, limit: LIMIT, startingAfter });
  const statements = client.plans.map(({ text, plan }) => ({
    text,
    plan,
    rows: rowsReadOfTable(plan, 'webhook_deliveries'),
    buffers: buffersOf(plan),
  }));
  return { result, statements };
}

/**
 * Rows read: the page and the one after it (LIMIT + 1), plus one entry per weekly partition that
 * Merge Append opens (six: four weeks, the current one and the default), plus slack. Buffers: an
 * index descent per partition and one heap page per row at worst.
 */
const ROWS_BOUND = 2 * (LIMIT + 1) + 20;
const BUFFERS_BOUND = 3 * (LIMIT + 1) + 60;

function expectProportional(statements: Awaited<ReturnType<typeof page>>['statements']) {
  expect(statements.length).toBeGreaterThan(0);
  for (const s of statements) {
    const what = `${s.text.slice(0, 400)}\n${JSON.stringify(s.plan).slice(0, 3000)}`;
    expect(s.rows, `deliveries rows read by: ${what}`).toBeLessThanOrEqual(ROWS_BOUND);
    expect(s.buffers, `buffers read by: ${what}`).toBeLessThanOrEqual(BUFFERS_BOUND);
  }
}

/** The list statement's plan: an ordered index scan per partition under Merge Append, no sort of the history. */
function expectOrderedScan(statements: Awaited<ReturnType<typeof page>>['statements']) {
  const list = statements.find((s) => /order by/i.test(s.text) && /limit/i.test(s.text) && /webhook_deliveries/.test(s.text));
  expect(list, 'the page statement').toBeDefined();
  const nodes = planNodes(list!.plan).map((n) => n['Node Type']);
  expect(nodes, JSON.stringify(list!.plan).slice(0, 3000)).not.toContain('Sort');
  expect(nodes).not.toContain('Bitmap Heap Scan');
  expect(nodes.some((n) => n === 'Merge Append' || n === 'Append' || n === 'Index Scan')).toBe(true);
}

/**
 * Walks the filtered log (no EXPLAIN) and returns the id after which a page starts DEPTH
 * deliveries deep, or half-way down a shorter log (the rest of which is still many pages).
 */
async function idAtDepth(filters: Filters): Promise<string> {
  const seen: string[] = [];
  let after: string | undefined;
  while (seen.length < 2 * DEPTH) {
    const next = await svc.ctx.deliveries.list(scope, { ...filters, limit: LIMIT, startingAfter: after });
    seen.push(...next.data.map((d) => d.id));
    if (!next.has_more) break;
    after = seen.at(-1);
  }
  const depth = Math.min(DEPTH, Math.floor(seen.length / 2 / LIMIT) * LIMIT);
  expect(depth, 'the filtered log has at least two pages').toBeGreaterThanOrEqual(LIMIT);
  return seen[depth - 1]!;
}

const logs: Array<[string, Filters]> = [
  ['the whole log of a Platform', {}],
  ["the big endpoint's log (60 % of the history)", { endpointId: '' }],
  ["the small endpoint's log (2 % of the history, 3 % of its Platform's)", { endpointId: '' }],
  ['state exhausted (2 %)', { state: 'exhausted' }],
  ['state failed_retrying (2 %)', { state: 'failed_retrying' }],
  ['state delivered (96 %)', { state: 'delivered' }],
  ['type payment.failed (20 %)', { type: 'payment.failed' }],
  ['type checkout_session.completed (1 %)', { type: 'checkout_session.completed' }],
  ['a created range in the second week', { createdGte: at(40_000), createdLt: at(70_000) }],
  ['created before the last week', { createdLt: at(90_000) }],
];
function resolve(name: string, filters: Filters): Filters {
  if (name.startsWith("the big endpoint's")) return { ...filters, endpointId: ep.big };
  if (name.startsWith("the small endpoint's")) return { ...filters, endpointId: ep.small };
  return filters;
}

describe('the delivery log reads in proportion to the page among 120,000 deliveries in four weeks', () => {
  it.each(logs)(
    '%s: the first page and a page 50 pages deep each read about one page of index entries, in order',
    async (name, f) => {
      const filters = resolve(name, f);
      const first = await page(filters);
      expect(first.result.data).toHaveLength(LIMIT);
      expectProportional(first.statements);
      expectOrderedScan(first.statements);

      const after = await idAtDepth(filters);
      const deep = await page(filters, after);
      expect(deep.result.data).toHaveLength(LIMIT);
      expect(deep.result.data[0]!.id < after).toBe(true);
      expectProportional(deep.statements);
      expectOrderedScan(deep.statements);
    },
    60_000,
  );

  it("an event's deliveries, and the portal's filter by object, read that event's or object's deliveries only", async () => {
    const event = await page({ eventId: 'evt_0119960' });
    expect(event.result.data.map((d) => d.id)).toEqual([idOf(119_960)]);
    expectProportional(event.statements);
    const object = await page({ objectId: 'pay_5500' });
    // pay_5500: events 110000-110019, all of Platform A.
    expect(object.result.data.map((d) => d.id)).toEqual(Array.from({ length: 20 }, (_, k) => idOf(110_019 - k)));
    expectProportional(object.statements);
  });

  it('the cursor is an index condition: the page statement compares (created_at, id) in the index, filtering nothing away', async () => {
    const after = await idAtDepth({});
    const deep = await page({}, after);
    const list = deep.statements.find((s) => /order by/i.test(s.text) && /limit/i.test(s.text))!;
    const scans = planNodes(list.plan).filter((n) => n['Index Cond'] !== undefined && n['Relation Name']?.startsWith('webhook_deliveries'));
    expect(scans.length).toBeGreaterThan(0);
    for (const scan of scans) {
      expect(scan['Index Cond']).toMatch(/ROW\(created_at, id\) <|\(created_at, id\) </);
      expect(scan['Rows Removed by Filter'] ?? 0).toBe(0);
    }
  }, 60_000);
});

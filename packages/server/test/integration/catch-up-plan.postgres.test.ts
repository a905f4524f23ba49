import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/client.ts';
import { EventService } from '../../src/events/service.ts';
import type { DeliveryService } from '../../src/delivery/service.ts';
import { startService, type TestService } from '../helpers/service.ts';
import { ExplainingClient, explainedReads, rowsRead } from '../helpers/plan.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { Scope } from '../../src/scope.ts';

/**
 * Issue 25 item 2: the catch-up filters find a page by index, whatever the number of events.
 * 60,000 events of one merchant (one delivery each, all delivered but the 30 oldest, which are
 * exhausted) beside 20,000 undelivered ones of another Platform; every filter's statements, run
 * by the services themselves, read a few dozen rows, not the table.
 */
const EVENTS = 60_000;
const OTHER = 20_000;
/** Rows a page of 20 may read (index entries that match, plus a little slack), far below EVENTS. */
const BOUND = 200;

let svc: TestService;
let p: CreatedPlatform;
let client: ExplainingClient;
let events: EventService;
let deliveries: DeliveryService;
let scope: Scope;
const base = Date.now() - 5 * 86_400_000;
const at = (i: number) => new Date(base + i * 2_000); // event i, 2 s apart: 60,000 events over ~1.4 days
const stamp = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true });
  p = await svc.platform('Many events');
  const q = await svc.platform('Other Platform');
  scope = { platformId: p.platform_id, environment: 'sandbox', actor: { type: 'operator' as const, id: 'test' } };
  const ep = await svc.ctx.endpoints.create(scope, { url: 'http://127.0.0.1:9/many', enabled_events: ['*'] });
  const other = await svc.ctx.endpoints.create(
    { platformId: q.platform_id, environment: 'sandbox', actor: { type: 'operator' as const, id: 'test' } },
    { url: 'http://127.0.0.1:9/other', enabled_events: ['*'] },
  );
  const fill = async (platform: CreatedPlatform, endpointId: string, n: number, prefix: string, state: (i: string) => string) => {
    await svc.ctx.database.query(
      `INSERT INTO events (id, platform_id, environment, merchant_id, type, body, created_at, object_id)
       SELECT '${prefix}' || i, $1, 'sandbox', $2, CASE WHEN i % 4 = 0 THEN 'payment.failed' ELSE 'payment.succeeded' END,
              '{"id":"${prefix}' || i || '"}', $3::timestamptz + i * interval '2 seconds', 'pay_${prefix}' || (i / 2)
       FROM generate_series(1, $4::int) AS i`,
      [platform.platform_id, platform.merchant_id, new Date(base).toISOString(), n],
    );
    await svc.ctx.database.query(
      `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, platform_id, environment, state, attempt_count, automatic_attempts,
                                       created_at, updated_at, event_type)
       SELECT 'whd_${prefix}' || i, '${prefix}' || i, $1, $2, 'sandbox', ${state('i')}, 1, 1,
              $3::timestamptz + i * interval '2 seconds', now(), CASE WHEN i % 4 = 0 THEN 'payment.failed' ELSE 'payment.succeeded' END
       FROM generate_series(1, $4::int) AS i`,
      [endpointId, platform.platform_id, new Date(base).toISOString(), n],
    );
  };
  await fill(p, ep.id, EVENTS, 'evt_many', (i) => `CASE WHEN ${i} <= 30 THEN 'exhausted' ELSE 'delivered' END`);
  await fill(q, other.id, OTHER, 'evt_other', () => `'pending'`);
  await svc.ctx.database.query('ANALYZE events', []);
  await svc.ctx.database.query('ANALYZE webhook_deliveries', []);

  client = new ExplainingClient({ connectionString: svc.testDb.databaseUrl });
  await client.connect();
  let db: Db;
  ({ db, deliveries } = explainedReads(svc, client));
  events = new EventService({ db });
}, 180_000);
afterAll(async () => {
  await client?.end();
  await svc?.close();
});

/** Runs `list`, then checks every statement it ran read at most BOUND rows of each table. */
async function readsFew<T>(list: () => Promise<T>): Promise<T> {
  client.plans = [];
  const result = await list();
  expect(client.plans.length).toBeGreaterThan(0);
  for (const { text, plan } of client.plans) {
    for (const table of ['events', 'webhook_deliveries']) {
      const partitions = JSON.stringify(plan).match(new RegExp(`"Relation Name":"(${table}_[a-z0-9_]+)"`, 'g')) ?? [];
      const names = [table, ...new Set(partitions.map((m) => m.split(':')[1]!.replace(/"/g, '')))];
      const read = names.reduce((sum, name) => sum + rowsRead(plan, name), 0);
      expect(read, `${table} rows read by: ${text.slice(0, 300)}`).toBeLessThanOrEqual(BOUND);
    }
  }
  return result;
}
const ids = (page: { data: Array<{ id: string }> }) => page.data.map((e) => e.id);

describe('catch-up filters read a page by index among 60,000 events', () => {
  it('delivery_success=false finds the 30 undelivered (the oldest) through the partial index, not by scanning delivered events', async () => {
    const page = await readsFew(() => events.list(scope, { limit: 20, deliverySuccess: false }));
    expect(ids(page)).toEqual(Array.from({ length: 20 }, (_, k) => `evt_many${30 - k}`));
    expect(page.has_more).toBe(true);
    const next = await readsFew(() => events.list(scope, { limit: 20, deliverySuccess: false, startingAfter: 'evt_many11' }));
    expect(ids(next)).toEqual(Array.from({ length: 10 }, (_, k) => `evt_many${10 - k}`));
    expect(next.has_more).toBe(false);
  });

  it('delivery_success=true, created ranges, type and object_id each read one page', async () => {
    expect(ids(await readsFew(() => events.list(scope, { limit: 20, deliverySuccess: true })))[0]).toBe(`evt_many${EVENTS}`);
    const window = await readsFew(() =>
      events.list(scope, { limit: 20, createdGte: at(30_000), createdLt: at(35_000), deliverySuccess: true }),
    );
    expect(ids(window)[0]).toBe('evt_many34999');
    const failed = await readsFew(() => events.list(scope, { limit: 20, type: 'payment.failed', createdLt: at(25_000) }));
    expect(ids(failed)[0]).toBe('evt_many24996');
    const object = await readsFew(() => events.list(scope, { limit: 20, objectId: 'pay_evt_many15000' }));
    expect(ids(object)).toEqual(['evt_many30001', 'evt_many30000']);
    const objectUndelivered = await readsFew(() => events.list(scope, { limit: 20, objectId: 'pay_evt_many10', deliverySuccess: false }));
    expect(ids(objectUndelivered)).toEqual(['evt_many21', 'evt_many20']);
  });

  it('the delivery log by type and created range reads one page', async () => {
    const page = await readsFew(() =>
      deliveries.list(scope, { limit: 20, type: 'payment.failed', createdGte: at(50_000), createdLt: at(55_000) }),
    );
    expect(page.data[0]!.event_id).toBe('evt_many54996');
    expect(page.data).toHaveLength(20);
    expect(stamp(new Date(page.data[0]!.created_at))).toBe(stamp(at(54_996)));
  });

  it("the delivery log by event id reads that event's deliveries by the unique key's leading column (migration 0019 dropped the index that repeated it)", async () => {
    const page = await readsFew(() => deliveries.list(scope, { limit: 20, eventId: 'evt_many40000' }));
    expect(page.data.map((d) => d.event_id)).toEqual(['evt_many40000']);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { drainUntil } from '../helpers/portal.ts';
import { publishEvent } from '../../src/events/publish.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';
import type { Scope } from '../../src/scope.ts';

/**
 * The catch-up filters a merchant uses after an outage (issue 25 item 2), through the public
 * API on this run's database: `GET /api/v1/events` by delivery success, created range and the
 * object an event is about; `GET /api/v1/webhook_deliveries` by event type and created range.
 * The plans behind them are in catch-up-plan.postgres.test.ts.
 */

let svc: TestService;
let a: CreatedPlatform;
let b: CreatedPlatform;
let worker: DeliveryWorker;
let receiver: TestReceiver;
const ids: Record<string, string> = {};
const HOUR = 3_600_000;
const base = Math.floor(Date.now() / 1000) * 1000 - 5 * HOUR;
const at = (hours: number) => new Date(base + hours * HOUR);
const stamp = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');
const scopeA = (): Scope => ({ platformId: a.platform_id, environment: 'sandbox', actor: { type: 'operator' as const, id: 'test' } });

const payment = (id: string, status: string) => ({ id, object: 'payment', status, amount: '5.00', asset_code: 'USDC.ETH', metadata: {} });
const publishAt = (name: string, type: string, object: Record<string, unknown>, when: Date, merchantId = a.merchant_id) =>
  svc.ctx.database.db
    .transaction((tx) => publishEvent(tx, { type, merchantId, environment: 'sandbox', object }, when))
    .then((r) => {
      ids[name] = r.event.id;
    });

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true, retryScheduleMs: [1, 1] });
  [a, b] = [await svc.platform('Catch-up A'), await svc.platform('Catch-up B')];
  worker = svc.ctx.createWorker();
  receiver = await startReceiver((req) => (req.path.endsWith('?down') ? { status: 503, body: 'down' } : { status: 200, body: 'ok' }));
  const ok = await svc.ctx.endpoints.create(scopeA(), { url: `${receiver.url}?up`, enabled_events: ['*'] });
  const down = await svc.ctx.endpoints.create(scopeA(), { url: `${receiver.url}?down`, enabled_events: ['payment.failed'] });
  await svc.ctx.endpoints.create(
    { platformId: b.platform_id, environment: 'sandbox', actor: { type: 'operator' as const, id: 'test' } },
    { url: `${receiver.url}?b`, enabled_events: ['*'] },
  );
  await publishAt('succeededA', 'payment.succeeded', payment('pay_catchA', 'succeeded'), at(0));
  await publishAt('failedA', 'payment.failed', payment('pay_catchA', 'failed'), at(1));
  await publishAt('succeededB', 'payment.succeeded', payment('pay_catchB', 'succeeded'), at(2));
  await publishAt('failedC', 'payment.failed', payment('pay_catchC', 'failed'), at(3));
  await publishAt('otherPlatform', 'payment.failed', payment('pay_catchA', 'failed'), at(3), b.merchant_id);
  await drainUntil(svc.ctx, worker, scopeA(), ok.id, 'delivered', 4);
  await drainUntil(svc.ctx, worker, scopeA(), down.id, 'exhausted', 2);
  // The newest event's delivery is still pending (no worker runs again): not delivered either.
  await publishAt('pending', 'payment.succeeded', payment('pay_catchD', 'succeeded'), at(4));
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

async function eventIds(query: string, key = a.keys.sandbox): Promise<string[]> {
  const r = await svc.api(key, 'GET', `/api/v1/events?${query}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data.map((e: { id: string }) => e.id);
}
const named = (...names: string[]) => names.map((n) => ids[n]);

describe('GET /api/v1/events catch-up filters', () => {
  it('delivery_success=false: events with a delivery not delivered (exhausted or still pending), newest first', async () => {
    expect(await eventIds('delivery_success=false')).toEqual(named('pending', 'failedC', 'failedA'));
  });

  it('delivery_success=true: events every delivery of which was delivered', async () => {
    expect(await eventIds('delivery_success=true')).toEqual(named('succeededB', 'succeededA'));
  });

  it('pages of delivery_success=false and =true follow starting_after like every list', async () => {
    const first = await svc.api(a.keys.sandbox, 'GET', '/api/v1/events?delivery_success=false&limit=2');
    expect(first.body.data.map((e: { id: string }) => e.id)).toEqual(named('pending', 'failedC'));
    expect(first.body.has_more).toBe(true);
    const second = await svc.api(a.keys.sandbox, 'GET', `/api/v1/events?delivery_success=false&limit=2&starting_after=${ids.failedC}`);
    expect(second.body.data.map((e: { id: string }) => e.id)).toEqual(named('failedA'));
    expect(second.body.has_more).toBe(false);
    const truePage = await svc.api(a.keys.sandbox, 'GET', `/api/v1/events?delivery_success=true&limit=1&starting_after=${ids.succeededB}`);
    expect(truePage.body.data.map((e: { id: string }) => e.id)).toEqual(named('succeededA'));
    expect(truePage.body.has_more).toBe(false);
  });

  it('created[gte] and created[lt] bound the range in the timestamp form of created_at, alone and with the other filters', async () => {
    expect(await eventIds(`created[gte]=${stamp(at(1))}&created[lt]=${stamp(at(3))}`)).toEqual(named('succeededB', 'failedA'));
    expect(await eventIds(`created[lt]=${stamp(at(1))}`)).toEqual(named('succeededA'));
    expect(await eventIds(`created[gte]=${stamp(at(3))}&delivery_success=false`)).toEqual(named('pending', 'failedC'));
    expect(await eventIds(`created[lt]=${stamp(at(3))}&delivery_success=false`)).toEqual(named('failedA'));
    expect(await eventIds(`type=payment.failed&delivery_success=false`)).toEqual(named('failedC', 'failedA'));
    expect(await eventIds(`type=payment.succeeded&delivery_success=false`)).toEqual(named('pending'));
  });

  it("object_id: one payment's events, alone and with delivery_success", async () => {
    expect(await eventIds('object_id=pay_catchA')).toEqual(named('failedA', 'succeededA'));
    expect(await eventIds('object_id=pay_catchA&delivery_success=false')).toEqual(named('failedA'));
    expect(await eventIds('object_id=pay_catchA&delivery_success=true')).toEqual(named('succeededA'));
    expect(await eventIds('object_id=pay_nothing')).toEqual([]);
  });

  it("spec 4.1 rule 1: another Platform's filters never reach these events", async () => {
    expect(await eventIds('object_id=pay_catchA', b.keys.sandbox)).toEqual(named('otherPlatform'));
    expect(await eventIds('delivery_success=false', b.keys.sandbox)).toEqual([]);
    expect(await eventIds('delivery_success=true', b.keys.sandbox)).toEqual(named('otherPlatform'));
    const cursor = await svc.api(b.keys.sandbox, 'GET', `/api/v1/events?delivery_success=false&starting_after=${ids.failedC}`);
    expect(cursor.status).toBe(400);
    expect(cursor.body.error.param).toBe('starting_after');
  });

  it('bad filters get 400 naming the parameter', async () => {
    for (const [query, param] of [
      ['delivery_success=maybe', 'delivery_success'],
      ['created[gte]=2026-13-01T00:00:00Z', 'created[gte]'],
      ['created[lt]=yesterday', 'created[lt]'],
      ['object_id=', 'object_id'],
    ] as const) {
      const r = await svc.api(a.keys.sandbox, 'GET', `/api/v1/events?${query}`);
      expect(r.status, query).toBe(400);
      expect(r.body.error.param, query).toBe(param);
    }
  });
});

describe('GET /api/v1/webhook_deliveries catch-up filters', () => {
  it('type and the created range select deliveries, newest first', async () => {
    const list = async (query: string) => {
      const r = await svc.api(a.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?${query}`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body.data.map((d: { event_id: string; state: string }) => `${d.event_id}:${d.state}`).sort();
    };
    expect(await list('type=payment.failed')).toEqual(
      [`${ids.failedA}:delivered`, `${ids.failedA}:exhausted`, `${ids.failedC}:delivered`, `${ids.failedC}:exhausted`].sort(),
    );
    expect(await list(`created[gte]=${stamp(at(2))}&created[lt]=${stamp(at(4))}&type=payment.succeeded`)).toEqual([
      `${ids.succeededB}:delivered`,
    ]);
    expect(await list(`created[gte]=${stamp(at(4))}`)).toEqual([`${ids.pending}:pending`]);
    const bad = await svc.api(a.keys.sandbox, 'GET', '/api/v1/webhook_deliveries?type=payment.lost');
    expect(bad.status).toBe(400);
    expect(bad.body.error.param).toBe('type');
  });
});

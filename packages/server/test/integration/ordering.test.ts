import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_ATTEMPTS, RETRY_DELAYS_MS } from '@payhooks/contract';
import { ManualClock, startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { payment, publish } from '../helpers/publish.ts';
import { publishEventsAlone } from '../../src/events/publish.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';

/**
 * Issue 25 item 1: per-object ordering, opt-in per endpoint (`delivery_order: "per_object"`).
 * The events about one object go one at a time, in publish order: a later one waits while an
 * earlier one is retrying and goes once it is delivered or exhausted; other objects never wait.
 * The default (`unordered`) is unchanged: spec 6.2 tells receivers not to rely on order.
 */
const clock = new ManualClock(Date.UTC(2026, 10, 25, 12, 0, 0));
let svc: TestService;
let p: CreatedPlatform;
let worker: DeliveryWorker;
let receiver: TestReceiver;
/** Paths whose requests fail (500) while listed. */
const failing = new Set<string>();
/** The receiver's origin (its URL without the path). */
const base = () => new URL(receiver.url).origin;

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true }, { clock });
  p = await svc.platform();
  worker = svc.ctx.createWorker();
  receiver = await startReceiver((req) =>
    failing.has(`${req.path} ${JSON.parse(req.raw.toString()).data.object.id}`) ? { status: 500 } : { status: 200 },
  );
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

async function endpoint(path: string, order?: string): Promise<string> {
  const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
    url: `${base()}${path}`,
    enabled_events: ['*'],
    ...(order ? { delivery_order: order } : {}),
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.id;
}

async function deliveryOf(eventId: string, endpointId: string) {
  const r = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?event_id=${eventId}&endpoint_id=${endpointId}`);
  expect(r.body.data).toHaveLength(1);
  return r.body.data[0];
}

/** The objects' ids in the order `path` received their events. */
const arrivals = (path: string) =>
  receiver.requests
    .filter((r) => r.path === path)
    .map((r) => `${JSON.parse(r.raw.toString()).data.object.id}:${JSON.parse(r.raw.toString()).type}`);

const publishAbout = (id: string, type: string, status: string) =>
  publish(svc.ctx, p.merchant_id, { type, object: payment({ id, status }) });

describe('delivery_order on the endpoint (API)', () => {
  it('defaults to unordered, takes per_object on create and update, and refuses anything else with 400 naming the field', async () => {
    const plain = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url: `${base()}/plain`,
      enabled_events: ['*'],
    });
    expect(plain.body.delivery_order).toBe('unordered');
    const ordered = await endpoint('/ordered-api', 'per_object');
    expect((await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${ordered}`)).body.delivery_order).toBe('per_object');
    const back = await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${ordered}`, { delivery_order: 'unordered' });
    expect(back.status).toBe(200);
    expect(back.body.delivery_order).toBe('unordered');
    const bad = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url: `${base()}/bad`,
      enabled_events: ['*'],
      delivery_order: 'fifo',
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.param).toBe('delivery_order');
  });
});

describe('per_object ordering (issue 25)', () => {
  it('a later event about the same payment waits while the earlier one is failed_retrying, says what it waits for, and goes once the earlier one is delivered; other payments are not held up', async () => {
    const ep = await endpoint('/ordered', 'per_object');
    failing.add('/ordered pay_ordA');
    const a1 = await publishAbout('pay_ordA', 'payment.processing', 'processing');
    const a2 = await publishAbout('pay_ordA', 'payment.succeeded', 'succeeded');
    const b1 = await publishAbout('pay_ordB', 'payment.succeeded', 'succeeded');
    const a3 = await publishAbout('pay_ordA', 'payment.expired', 'expired');
    await worker.drain();
    // A1 failed and waits for its retry; B went; A2 and A3 were not sent.
    expect(arrivals('/ordered')).toEqual(['pay_ordA:payment.processing', 'pay_ordB:payment.succeeded']);
    expect((await deliveryOf(a1.event.id, ep)).state).toBe('failed_retrying');
    const waiting = await deliveryOf(a2.event.id, ep);
    expect(waiting.state).toBe('pending');
    const first = await deliveryOf(a1.event.id, ep);
    expect(waiting.waiting_for).toEqual({ delivery_id: first.id, event_id: a1.event.id });
    expect((await deliveryOf(a3.event.id, ep)).waiting_for).toEqual({ delivery_id: first.id, event_id: a1.event.id });
    expect((await deliveryOf(b1.event.id, ep)).waiting_for).toBeNull();
    expect(first.waiting_for).toBeNull();

    // Still failing at its retry: the others keep waiting.
    clock.advance(RETRY_DELAYS_MS[0]!);
    await worker.drain();
    expect(arrivals('/ordered')).toEqual(['pay_ordA:payment.processing', 'pay_ordB:payment.succeeded', 'pay_ordA:payment.processing']);

    // It recovers: A1, then A2, then A3, in publish order.
    failing.delete('/ordered pay_ordA');
    clock.advance(RETRY_DELAYS_MS[1]!);
    await worker.drain();
    expect(arrivals('/ordered').slice(3)).toEqual([
      'pay_ordA:payment.processing',
      'pay_ordA:payment.succeeded',
      'pay_ordA:payment.expired',
    ]);
    for (const e of [a1, a2, a3]) expect((await deliveryOf(e.event.id, ep)).state).toBe('delivered');
    expect((await deliveryOf(a3.event.id, ep)).waiting_for).toBeNull();
  });

  it('spec 8: when the earlier event is exhausted after its 8th attempt, the next one goes', async () => {
    const ep = await endpoint('/ordered-exhaust', 'per_object');
    failing.add('/ordered-exhaust pay_ordC');
    const c1 = await publishAbout('pay_ordC', 'payment.processing', 'processing');
    const c2 = await publishAbout('pay_ordC', 'payment.failed', 'failed');
    await worker.drain();
    for (const delay of RETRY_DELAYS_MS) {
      expect((await deliveryOf(c2.event.id, ep)).state).toBe('pending');
      clock.advance(delay);
      await worker.drain();
    }
    const exhausted = await deliveryOf(c1.event.id, ep);
    expect(exhausted.state).toBe('exhausted');
    expect(exhausted.attempt_count).toBe(MAX_ATTEMPTS);
    // c2 was attempted once c1 was exhausted (it fails too: the same object's path is failing).
    const next = await deliveryOf(c2.event.id, ep);
    expect(next.attempt_count).toBe(1);
    expect(next.waiting_for).toBeNull();
  });

  it('an unordered endpoint sends the later event while the earlier one is retrying (the default is unchanged)', async () => {
    const ep = await endpoint('/unordered');
    failing.add('/unordered pay_ordD');
    const d1 = await publishAbout('pay_ordD', 'payment.processing', 'processing');
    const d2 = await publishAbout('pay_ordD', 'payment.succeeded', 'succeeded');
    await worker.drain();
    expect((await deliveryOf(d1.event.id, ep)).state).toBe('failed_retrying');
    expect((await deliveryOf(d2.event.id, ep)).state).toBe('failed_retrying');
    expect((await deliveryOf(d2.event.id, ep)).waiting_for).toBeNull();
  });

  it('events published in one batch (POST /internal/v1/events/batch) keep their order too', async () => {
    const ep = await endpoint('/ordered-batch', 'per_object');
    failing.add('/ordered-batch pay_ordE');
    const results = await publishEventsAlone(
      svc.ctx.database,
      ['processing', 'succeeded'].map((status, i) => ({
        type: `payment.${status}`,
        merchantId: p.merchant_id,
        environment: 'sandbox' as const,
        object: payment({ id: 'pay_ordE', status }),
        idempotencyKey: `ordered-batch-${i}`,
      })),
      clock.now(),
    );
    const ids = results.map((r) => (r.ok ? r.result.event.id : ''));
    await worker.drain();
    const second = await deliveryOf(ids[1]!, ep);
    expect(second.state).toBe('pending');
    expect(second.waiting_for?.event_id).toBe(ids[0]);
  });

  it('switching an endpoint to per_object orders what is already queued; switching back releases it', async () => {
    const ep = await endpoint('/switched');
    failing.add('/switched pay_ordF');
    const f1 = await publishAbout('pay_ordF', 'payment.processing', 'processing');
    await worker.drain();
    expect((await deliveryOf(f1.event.id, ep)).state).toBe('failed_retrying');
    // Published while unordered, then the endpoint is switched before f2 is attempted.
    const f2 = await publishAbout('pay_ordF', 'payment.succeeded', 'succeeded');
    expect((await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${ep}`, { delivery_order: 'per_object' })).status).toBe(200);
    await worker.drain();
    expect((await deliveryOf(f2.event.id, ep)).state).toBe('pending');
    expect((await deliveryOf(f2.event.id, ep)).waiting_for?.event_id).toBe(f1.event.id);
    expect((await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${ep}`, { delivery_order: 'unordered' })).status).toBe(200);
    await worker.drain();
    expect((await deliveryOf(f2.event.id, ep)).state).toBe('failed_retrying');
  });

  it("events published with SELECT payhooks.publish_event(...) in the payment core's transaction are ordered too", async () => {
    const ep = await endpoint('/ordered-sql', 'per_object');
    failing.add('/ordered-sql pay_ordG');
    const ids: string[] = [];
    for (const status of ['processing', 'succeeded']) {
      const [row] = await svc.ctx.database.query<{ id: string }>('SELECT id FROM payhooks.publish_event($1, $2, $3, $4::json)', [
        `payment.${status}`,
        p.merchant_id,
        'sandbox',
        JSON.stringify(payment({ id: 'pay_ordG', status })),
      ]);
      ids.push(row!.id);
    }
    // payhooks.publish_event dates its rows by the database's clock, not the test's: the
    // injected clock must not lag it, or the rows are not yet due whatever day the suite runs.
    clock.set(Math.max(clock.now().getTime(), Date.now() + 1000));
    await worker.drain();
    expect((await deliveryOf(ids[0]!, ep)).state).toBe('failed_retrying');
    expect((await deliveryOf(ids[1]!, ep)).waiting_for?.event_id).toBe(ids[0]);
  });
});

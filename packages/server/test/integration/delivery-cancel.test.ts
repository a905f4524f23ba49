import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { payment, publish } from '../helpers/publish.ts';
import { drainUntil, portalSignIn, type PortalClient } from '../helpers/portal.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';
import type { Scope } from '../../src/scope.ts';

/**
 * The portal's "Cancel delivery": an unfinished delivery gets no more attempts. Over real HTTP on
 * this run's database, with a real receiver and the worker's own claims.
 */
let svc: TestService;
let a: CreatedPlatform;
let b: CreatedPlatform;
let portalA: PortalClient;
let portalB: PortalClient;
let worker: DeliveryWorker;
let receiver: TestReceiver;
let failing = true;
const scopeA = (): Scope => ({ platformId: a.platform_id, environment: 'sandbox', actor: { type: 'operator' as const, id: 'test' } });

beforeAll(async () => {
  // A retry an hour away: a failed delivery stays failed_retrying for the whole test.
  svc = await startService({ allowPrivateUrls: true, retryScheduleMs: [3_600_000] });
  [a, b] = [await svc.platform('Platform A'), await svc.platform('Platform B')];
  [portalA, portalB] = [
    await portalSignIn(svc.url, a.portal.email, a.portal.password),
    await portalSignIn(svc.url, b.portal.email, b.portal.password),
  ];
  worker = svc.ctx.createWorker();
  receiver = await startReceiver(() => (failing ? { status: 503, body: 'down' } : { status: 200, body: 'ok' }));
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

async function endpoint(path: string, extra: Record<string, unknown> = {}) {
  const r = await portalA.call('POST', '/endpoints', { url: `${receiver.url}?${path}`, enabled_events: ['*'], ...extra });
  expect(r.status, r.text).toBe(201);
  return r.body as { id: string };
}

async function deliveryOf(endpointId: string, eventId: string) {
  const page = await svc.ctx.deliveries.list(scopeA(), { limit: 10, endpointId, eventId });
  expect(page.data).toHaveLength(1);
  return page.data[0]!;
}

async function queued(deliveryId: string): Promise<number> {
  const [row] = await svc.ctx.database.query<{ n: number }>('SELECT count(*)::int AS n FROM delivery_queue WHERE delivery_id = $1', [
    deliveryId,
  ]);
  return Number(row!.n);
}

describe('Cancel delivery in the portal', () => {
  it('a retrying delivery is cancelled: no more attempts, out of the queue, reason manual; cancelling or replaying it again is refused', async () => {
    failing = true;
    const ep = await endpoint('retrying');
    const { event } = await publish(svc.ctx, a.merchant_id, { object: payment() });
    await drainUntil(svc.ctx, worker, scopeA(), ep.id, 'failed_retrying');
    const d = await deliveryOf(ep.id, event.id);
    expect(d.attempt_count).toBe(1);

    const r = await portalA.call('POST', `/deliveries/${d.id}/cancel`);
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ id: d.id, state: 'cancelled', cancel_reason: 'manual', next_attempt_at: null, attempt_count: 1 });
    expect(await queued(d.id)).toBe(0);

    // Even when its retry would be due and the endpoint answers, nothing more is sent.
    failing = false;
    await svc.ctx.database.query('UPDATE webhook_deliveries SET next_attempt_at = now() WHERE id = $1', [d.id]);
    const before = receiver.requests.length;
    await worker.drain();
    expect(receiver.requests.length).toBe(before);
    expect((await deliveryOf(ep.id, event.id)).attempt_count).toBe(1);

    const again = await portalA.call('POST', `/deliveries/${d.id}/cancel`);
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ code: 'delivery_not_cancellable', message: expect.stringContaining('this one is cancelled') });
    const replay = await portalA.call('POST', `/deliveries/${d.id}/replay`);
    expect(replay.status).toBe(409);
    expect(replay.body.error.code).toBe('delivery_not_replayable');
  });

  it('a delivered delivery is not cancellable, another Platform gets 404, and an attempt in flight is waited for', async () => {
    failing = false;
    const ep = await endpoint('delivered');
    const { event } = await publish(svc.ctx, a.merchant_id, { object: payment() });
    await drainUntil(svc.ctx, worker, scopeA(), ep.id, 'delivered');
    const done = await deliveryOf(ep.id, event.id);
    const refused = await portalA.call('POST', `/deliveries/${done.id}/cancel`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('delivery_not_cancellable');

    const { event: next } = await publish(svc.ctx, a.merchant_id, { object: payment() });
    const pending = await deliveryOf(ep.id, next.id);
    expect((await portalB.call('POST', `/deliveries/${pending.id}/cancel`)).status).toBe(404);
    // A worker holds its lease (an attempt on the wire): the cancel waits for its outcome.
    await svc.ctx.database.query(
      `UPDATE delivery_queue SET lease_token = 'held-by-a-worker', leased_at = now(), due_at = now() + interval '1 minute' WHERE delivery_id = $1`,
      [pending.id],
    );
    const inFlight = await portalA.call('POST', `/deliveries/${pending.id}/cancel`);
    expect(inFlight.status).toBe(409);
    expect(inFlight.body.error.code).toBe('delivery_in_flight');
    expect((await deliveryOf(ep.id, next.id)).state).toBe('pending');
    await svc.ctx.database.query(`UPDATE delivery_queue SET lease_token = NULL, leased_at = NULL, due_at = now() WHERE delivery_id = $1`, [
      pending.id,
    ]);
    const ok = await portalA.call('POST', `/deliveries/${pending.id}/cancel`);
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.state).toBe('cancelled');
  });

  it("on an endpoint with per-object ordering, cancelling an object's held-up event lets its later events go", async () => {
    failing = false;
    const ep = await endpoint('ordered', { delivery_order: 'per_object' });
    const object = payment();
    const first = await publish(svc.ctx, a.merchant_id, { type: 'payment.created', object });
    const second = await publish(svc.ctx, a.merchant_id, { type: 'payment.succeeded', object });
    const blocker = await deliveryOf(ep.id, first.event.id);
    const held = await deliveryOf(ep.id, second.event.id);
    expect((await svc.ctx.deliveries.get(scopeA(), held.id)).waiting_for).toMatchObject({ delivery_id: blocker.id });

    const r = await portalA.call('POST', `/deliveries/${blocker.id}/cancel`);
    expect(r.status, r.text).toBe(200);
    await drainUntil(svc.ctx, worker, scopeA(), ep.id, 'delivered');
    const after = await svc.ctx.deliveries.get(scopeA(), held.id);
    expect(after).toMatchObject({ state: 'delivered', waiting_for: null });
    expect((await svc.ctx.deliveries.get(scopeA(), blocker.id)).attempt_count).toBe(0);
    const got = receiver.requests.filter((q) => q.path.includes('?ordered')).map((q) => q.headers['service-event-id']);
    expect(got).toEqual([second.event.id]);
  });
});

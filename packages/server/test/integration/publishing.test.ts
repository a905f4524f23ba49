import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REQUIRED_LIVE_EVENT_TYPES } from '@payhooks/contract';
import { ManualClock, startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { checkoutSession, payment, publish } from '../helpers/publish.ts';
import { publishEvent } from '../../src/events/publish.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';

const INTERNAL_TOKEN = 'internal-token-for-tests-0123456789abcdef';
const clock = new ManualClock(Date.UTC(2026, 10, 22, 9, 30, 0));
let svc: TestService;
let p: CreatedPlatform;
let worker: DeliveryWorker;
let receiver: TestReceiver;

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true, internalToken: INTERNAL_TOKEN }, { clock });
  p = await svc.platform();
  worker = svc.ctx.createWorker();
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

const count = async (table: string) =>
  Number((await svc.ctx.database.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`, []))[0]!.n);

async function endpoint(key: string, events: string[], path = '/hook'): Promise<string> {
  const r = await svc.api(key, 'POST', '/api/v1/webhook_endpoints', { url: `${receiver.url}${path}`, enabled_events: events });
  expect(r.status).toBe(201);
  return r.body.id;
}

describe('publishing (transactional outbox)', () => {
  it('a publish rolled back with its transaction leaves no event and no delivery', async () => {
    await endpoint(p.keys.sandbox, ['*']);
    const [events, deliveries] = [await count('events'), await count('webhook_deliveries')];
    await expect(
      svc.ctx.database.db.transaction(async (tx) => {
        await publishEvent(
          tx,
          { type: 'payment.succeeded', merchantId: p.merchant_id, environment: 'sandbox', object: payment() },
          clock.now(),
        );
        throw new Error('payment write failed');
      }),
    ).rejects.toThrow('payment write failed');
    expect(await count('events')).toBe(events);
    expect(await count('webhook_deliveries')).toBe(deliveries);
    expect(await worker.drain()).toBe(0);
  });

  it('fans out only to enabled, undeleted endpoints of the same Platform and environment subscribed to the type or *', async () => {
    const q = await svc.platform('fan-out');
    const exact = await endpoint(q.keys.sandbox, ['payment.succeeded']);
    const wildcard = await endpoint(q.keys.sandbox, ['*']);
    await endpoint(q.keys.sandbox, ['checkout_session.completed']); // other type
    const liveEp = await svc.api(q.keys.live, 'POST', '/api/v1/webhook_endpoints', {
      url: 'https://live.example.com/h',
      enabled_events: [...REQUIRED_LIVE_EVENT_TYPES],
    });
    expect(liveEp.status).toBe(201);
    const disabled = await endpoint(q.keys.sandbox, ['*']);
    await svc.api(q.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${disabled}`, { status: 'disabled' });
    const deleted = await endpoint(q.keys.sandbox, ['*']);
    await svc.api(q.keys.sandbox, 'DELETE', `/api/v1/webhook_endpoints/${deleted}`);
    await endpoint(p.keys.sandbox, ['payment.succeeded'], '/other-platform');
    const { event, deliveries } = await publish(svc.ctx, q.merchant_id);
    expect(deliveries).toBe(2);
    const rows = await svc.ctx.database.query<{ endpoint_id: string }>('SELECT endpoint_id FROM webhook_deliveries WHERE event_id = $1', [
      event.id,
    ]);
    expect(rows.map((r) => r.endpoint_id).sort()).toEqual([exact, wildcard].sort());
    // A live event of the same Platform reaches its live endpoint only.
    const live = await publish(svc.ctx, q.merchant_id, { environment: 'live' });
    expect(live.deliveries).toBe(1);
    const liveRows = await svc.ctx.database.query<{ endpoint_id: string }>(
      'SELECT endpoint_id FROM webhook_deliveries WHERE event_id = $1',
      [live.event.id],
    );
    expect(liveRows.map((r) => r.endpoint_id)).toEqual([liveEp.body.id]);
    await svc.api(q.keys.live, 'DELETE', `/api/v1/webhook_endpoints/${liveEp.body.id}`);
  });

  it('a fan-out wider than the ids first generated is published whole: each delivery has its one queue row, for its own endpoint, with its object key where the endpoint orders per object', async () => {
    const q = await svc.platform('wide fan-out');
    const endpoints = [];
    for (let i = 0; i < 7; i++) endpoints.push(await endpoint(q.keys.sandbox, ['*'], `/wide${i}`));
    const ordered = endpoints[3]!;
    expect((await svc.api(q.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${ordered}`, { delivery_order: 'per_object' })).status).toBe(
      200,
    );
    for (const object of [payment({ id: 'pay_wide1' }), payment({ id: 'pay_wide2' })]) {
      const { event, deliveries } = await publish(svc.ctx, q.merchant_id, { object });
      expect(deliveries).toBe(7);
      const rows = await svc.ctx.database.query<{ id: string; endpoint_id: string; queued_for: string | null; order_key: string | null }>(
        `SELECT d.id, d.endpoint_id, q.endpoint_id AS queued_for, q.order_key
           FROM webhook_deliveries d LEFT JOIN delivery_queue q ON q.delivery_id = d.id WHERE d.event_id = $1`,
        [event.id],
      );
      expect(rows.map((r) => r.endpoint_id).sort()).toEqual([...endpoints].sort());
      expect(new Set(rows.map((r) => r.id)).size).toBe(7);
      for (const r of rows) {
        expect(r.queued_for).toBe(r.endpoint_id);
        expect(r.order_key).toBe(r.endpoint_id === ordered ? object.id : null);
      }
      const queued = await svc.ctx.database.query<{ n: string }>('SELECT count(*) AS n FROM delivery_queue WHERE event_id = $1', [
        event.id,
      ]);
      expect(Number(queued[0]!.n)).toBe(7);
    }
  });

  it('spec 3.2: a disabled endpoint gets no requests, its due attempt is recorded as failed (endpoint_disabled); enabled again, the next attempt runs on schedule', async () => {
    const q = await svc.platform('pause');
    const id = await endpoint(q.keys.sandbox, ['*'], '/paused');
    const { event } = await publish(svc.ctx, q.merchant_id);
    await svc.api(q.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${id}`, { status: 'disabled' });
    await worker.drain();
    expect(receiver.requests.filter((r) => r.path.endsWith('/paused'))).toHaveLength(0);
    const [failed] = (await svc.api(q.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?event_id=${event.id}`)).body.data;
    expect(failed).toMatchObject({
      state: 'failed_retrying',
      attempt_count: 1,
      next_attempt_at: new Date(clock.now().getTime() + 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    });
    await svc.api(q.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${id}`, { status: 'enabled' });
    const t0 = clock.now().getTime();
    clock.set(t0 + 60_000);
    try {
      await worker.drain();
    } finally {
      clock.set(t0); // the other tests of this file read the clock as it was
    }
    expect(receiver.requests.filter((r) => r.path.endsWith('/paused'))).toHaveLength(1);
    const d = await svc.api(q.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?event_id=${event.id}`);
    expect(d.body.data[0]).toMatchObject({ state: 'delivered', attempt_count: 2 });
  });

  it('a deleted endpoint gets no further attempts of its pending deliveries', async () => {
    const q = await svc.platform('deleted');
    const id = await endpoint(q.keys.sandbox, ['*'], '/deleted');
    await publish(svc.ctx, q.merchant_id);
    await svc.api(q.keys.sandbox, 'DELETE', `/api/v1/webhook_endpoints/${id}`);
    await worker.drain();
    expect(receiver.requests.filter((r) => r.path.endsWith('/deleted'))).toHaveLength(0);
    // Its log stays readable to its Platform.
    const d = await svc.api(q.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?endpoint_id=${id}`);
    expect(d.body.data).toHaveLength(1);
  });
});

describe('internal events API (POST /internal/v1/events)', () => {
  const body = (over: Record<string, unknown> = {}) => ({
    type: 'payment.succeeded',
    merchant_id: p.merchant_id,
    environment: 'sandbox',
    data: { object: payment() },
    ...over,
  });
  const post = (b: unknown, token = INTERNAL_TOKEN) => svc.api(token as never, 'POST', '/internal/v1/events', b);

  it('spec 2.1: publishes and answers 201 with the envelope', async () => {
    const b = body();
    const r = await post(b);
    expect(r.status).toBe(201);
    expect(r.body).toEqual({
      id: expect.stringMatching(/^evt_/),
      object: 'event',
      type: 'payment.succeeded',
      api_version: 'v1',
      environment: 'sandbox',
      merchant_id: p.merchant_id,
      created_at: '2026-11-22T09:30:00Z',
      data: b.data,
    });
  });

  it('the same idempotency_key publishes once', async () => {
    const b = body({ idempotency_key: 'pay_123:succeeded' });
    const first = await post(b);
    const second = await post(b);
    expect(second.status).toBe(201);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body.id).toBe(first.body.id);
    expect(await count(`events WHERE idempotency_key = 'pay_123:succeeded'`)).toBe(1);
  });

  it('needs the internal token, checked before the body', async () => {
    expect((await post(body(), 'wrong')).status).toBe(401);
    const r = await svc.api(undefined, 'POST', '/internal/v1/events', { nonsense: true });
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('invalid_internal_token');
  });

  it('spec 6.1, 6.1 rule 2: rejects unknown types and payment events without a full Payment', async () => {
    const unknown = await post(body({ type: 'payment.refunded' }));
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toMatchObject({ code: 'event_type_unknown', param: 'type' });
    const noMetadata = await post(body({ data: { object: { ...payment(), metadata: undefined } } }));
    expect(noMetadata.status).toBe(400);
    expect(noMetadata.body.error.param).toBe('data.object.metadata');
    const badAmount = await post(body({ data: { object: payment({ amount: 10 }) } }));
    expect(badAmount.body.error.param).toBe('data.object.amount');
    const noMerchant = await post(body({ merchant_id: 'mch_nope' }));
    expect(noMerchant.status).toBe(400);
    expect(noMerchant.body.error.param).toBe('merchant_id');
  });

  it('is disabled (404) when no internal token is configured', async () => {
    const other = await startService({});
    try {
      const r = await other.api(INTERNAL_TOKEN as never, 'POST', '/internal/v1/events', body());
      expect(r.status).toBe(404);
    } finally {
      await other.close();
    }
  });
});

describe('delivery log and events API (spec 2.4)', () => {
  it('spec 2.4: lists and retrieves deliveries with their attempts, filtered, scoped to the key', async () => {
    const q = await svc.platform('log');
    receiver.behave((req) => (req.path.endsWith('/log-fail') ? { status: 500, body: 'down' } : { status: 200, body: 'ok' }));
    const good = await endpoint(q.keys.sandbox, ['*'], '/log-ok');
    const bad = await endpoint(q.keys.sandbox, ['*'], '/log-fail');
    const { event } = await publish(svc.ctx, q.merchant_id);
    await worker.drain();
    const all = await svc.api(q.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?event_id=${event.id}`);
    expect(all.body.data).toHaveLength(2);
    const failed = await svc.api(q.keys.sandbox, 'GET', '/api/v1/webhook_deliveries?state=failed_retrying');
    expect(failed.body.data.map((d: { endpoint_id: string }) => d.endpoint_id)).toEqual([bad]);
    const one = await svc.api(q.keys.sandbox, 'GET', `/api/v1/webhook_deliveries/${failed.body.data[0].id}`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({
      id: expect.stringMatching(/^whd_/),
      object: 'webhook_delivery',
      event_id: event.id,
      endpoint_id: bad,
      state: 'failed_retrying',
      attempt_count: 1,
      next_attempt_at: '2026-11-22T09:31:00Z',
      last_attempt_at: '2026-11-22T09:30:00Z',
    });
    expect(one.body.attempts).toEqual([
      expect.objectContaining({
        attempt_number: 1,
        trigger: 'automatic',
        succeeded: false,
        status_code: 500,
        response_body: 'down',
        error_kind: 'http_status',
        started_at: '2026-11-22T09:30:00Z',
        duration_ms: expect.any(Number),
      }),
    ]);
    const byEndpoint = await svc.api(q.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?endpoint_id=${good}`);
    expect(byEndpoint.body.data[0].state).toBe('delivered');
    // Another Platform's key and the same Platform's live key see none of it.
    const stranger = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries/${one.body.id}`);
    expect(stranger.status).toBe(404);
    expect((await svc.api(q.keys.live, 'GET', `/api/v1/webhook_deliveries/${one.body.id}`)).status).toBe(404);
    expect((await svc.api(q.keys.live, 'GET', `/api/v1/webhook_deliveries`)).body.data).toHaveLength(0);
    expect((await svc.api(p.keys.sandbox, 'GET', `/api/v1/events/${event.id}`)).status).toBe(404);
    const bad2 = await svc.api(q.keys.sandbox, 'GET', '/api/v1/webhook_deliveries?state=lost');
    expect(bad2.status).toBe(400);
    receiver.behave(() => ({ status: 200, body: 'ok' }));
  });

  it('GET /api/v1/events/:id returns the exact bytes delivered; the list filters by type', async () => {
    const q = await svc.platform('events');
    await endpoint(q.keys.sandbox, ['*'], '/events-bytes');
    const { event } = await publish(svc.ctx, q.merchant_id, { object: payment({ metadata: { note: 'ä "quoted" </script>' } }) });
    await publish(svc.ctx, q.merchant_id, { type: 'checkout_session.completed', object: checkoutSession() });
    await worker.drain();
    const sent = receiver.requests.find((r) => r.path.endsWith('/events-bytes') && r.headers['service-event-id'] === event.id)!;
    const res = await fetch(`${svc.url}/api/v1/events/${event.id}`, { headers: { authorization: `Bearer ${q.keys.sandbox}` } });
    expect(Buffer.from(await res.arrayBuffer()).equals(sent.raw)).toBe(true);
    const list = await svc.api(q.keys.sandbox, 'GET', '/api/v1/events?type=checkout_session.completed');
    expect(list.body.data.map((e: { type: string }) => e.type)).toEqual(['checkout_session.completed']);
    expect((await svc.api(q.keys.sandbox, 'GET', '/api/v1/events')).body.data).toHaveLength(2);
  });

  it('exposes Prometheus metrics: attempts by outcome, duration, backlog, oldest due age, unfinished deliveries by state, claims and claimed rows, auto-disable and rotation counters', async () => {
    const res = await fetch(`${svc.url}/metrics`);
    const text = await res.text();
    expect(res.status).toBe(200);
    for (const name of [
      'payhooks_delivery_attempts_total{outcome="succeeded"',
      'payhooks_delivery_attempt_duration_seconds_bucket',
      'payhooks_delivery_backlog',
      'payhooks_delivery_oldest_due_age_seconds',
      'payhooks_deliveries{state="pending"}',
      'payhooks_deliveries{state="failed_retrying"}',
      'payhooks_endpoints_auto_disabled_total',
      'payhooks_secret_rotations_total',
    ]) {
      expect(text).toContain(name);
    }
    // Earlier tests in this file delivered through this process's worker: claims were counted.
    const value = (name: string) => Number(text.match(new RegExp(`^${name} (\\d+)$`, 'm'))?.[1]);
    expect(value('payhooks_delivery_claims_total')).toBeGreaterThan(0);
    expect(value('payhooks_delivery_claimed_total')).toBeGreaterThan(0);
  });
});

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RESOURCE_EVENT_TYPES } from '@payhooks/contract';
import { ManualClock, startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { parsedEvents, submitCheckout } from '../helpers/checkout.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';
import { publishEvent } from '../../src/events/publish.ts';

const INTERNAL_TOKEN = 'internal-token-for-tests-0123456789abcdef';
const clock = new ManualClock(Date.UTC(2026, 10, 22, 9, 30, 0));
let svc: TestService;
let p: CreatedPlatform;
let worker: DeliveryWorker;
let receiver: TestReceiver;

/** Metadata with non-ASCII, quotes and markup: it must come back, and be delivered, unchanged. */
const METADATA = { order_id: 'ord_1', account: 'acct_ü_日本', note: 'ä "quoted" </script> \u2028 end', emoji: '💸' };

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true, allowHttpUrls: true, internalToken: INTERNAL_TOKEN }, { clock });
  p = await svc.platform('Payments Shop');
  worker = svc.ctx.createWorker();
  receiver = await startReceiver();
  for (const key of [p.keys.sandbox, p.keys.live]) {
    const ep = await svc.api(key, 'POST', '/api/v1/webhook_endpoints', {
      url: `${receiver.url}/${key === p.keys.live ? 'live' : 'sandbox'}`,
      enabled_events: ['*'],
    });
    expect(ep.status).toBe(201);
  }
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});
beforeEach(async () => {
  await worker.drain();
  receiver.requests.length = 0;
});

const api = (...args: Parameters<TestService['api']>) => svc.api(...args);
const create = async (key = p.keys.sandbox, body: Record<string, unknown> = {}) => {
  const r = await api(key, 'POST', '/api/v1/payments', { amount: '25.00', asset_code: 'USDC.ETH', metadata: METADATA, ...body });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
};
const simulate = (id: string, status: string, extra: Record<string, unknown> = {}, key = p.keys.sandbox) =>
  api(key, 'POST', `/api/v1/sandbox/payments/${id}/simulate`, { status, ...extra });
const internal = (path: string, body: unknown) =>
  fetch(`${svc.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
const createSession = async (key = p.keys.sandbox, body: Record<string, unknown> = {}) => {
  const r = await api(key, 'POST', '/api/v1/checkout_sessions', {
    amount: '42.50',
    asset_code: 'USDC-E.ARB',
    metadata: METADATA,
    success_url: 'https://shop.example/success?from=checkout',
    cancel_url: 'https://shop.example/cart',
    ...body,
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
};

async function delivered(): Promise<ReturnType<typeof parsedEvents>> {
  await worker.drain();
  return parsedEvents(receiver.requests);
}

describe('payments API', () => {
  it('spec 2.2: creates a Payment with the spec fields and ours, and publishes payment.created with it as data.object', async () => {
    const pay = await create();
    expect(pay).toMatchObject({
      object: 'payment',
      status: 'created',
      amount: '25.00',
      asset_code: 'USDC.ETH',
      metadata: METADATA,
      merchant_id: p.merchant_id,
      environment: 'sandbox',
      checkout_session: null,
    });
    expect(pay.id).toMatch(/^pay_[0-9A-Za-z]{24}$/);
    expect(pay.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    const got = await api(p.keys.sandbox, 'GET', `/api/v1/payments/${pay.id}`);
    expect(got.body).toEqual(pay);
    const events = await delivered();
    expect(events.map((e) => e.type)).toEqual(['payment.created']);
    expect(events[0]!.data.object).toEqual(pay);
  });

  it('metadata is echoed back byte for byte, non-ASCII included, in the API answer and the delivered body', async () => {
    const pay = await create();
    const raw = await (
      await fetch(`${svc.url}/api/v1/payments/${pay.id}`, { headers: { authorization: `Bearer ${p.keys.sandbox}` } })
    ).text();
    expect(raw).toContain(`"metadata":${JSON.stringify(METADATA)}`);
    await worker.drain();
    expect(receiver.requests[0]!.raw.toString('utf8')).toContain(`"metadata":${JSON.stringify(METADATA)}`);
  });

  it('validation: amount with exactly two decimals, > 0, at most 999999999.99', async () => {
    for (const amount of ['0.00', '10', '10.5', '10.005', '-1.00', '1000000000.00', '01.00', 10]) {
      const r = await api(p.keys.sandbox, 'POST', '/api/v1/payments', { amount, asset_code: 'USDC.ETH' });
      expect(r.status, String(amount)).toBe(400);
      expect(r.body.error.param).toBe('amount');
      expect(r.body.error.message).toMatch(/amount/);
    }
    expect((await create(p.keys.sandbox, { amount: '999999999.99' })).amount).toBe('999999999.99');
    expect((await create(p.keys.sandbox, { amount: '0.01' })).amount).toBe('0.01');
  });

  it('validation: asset_code is <ASSET>.<NETWORK> upper-case (USDC-E.ARB valid, lower-case invalid)', async () => {
    expect((await create(p.keys.sandbox, { asset_code: 'USDC-E.ARB' })).asset_code).toBe('USDC-E.ARB');
    for (const asset_code of ['usdc.eth', 'USDC', 'USDC.eth', 'USDC_E.ARB', 'USDC..ETH']) {
      const r = await api(p.keys.sandbox, 'POST', '/api/v1/payments', { amount: '1.00', asset_code });
      expect(r.status, asset_code).toBe(400);
      expect(r.body.error.param).toBe('asset_code');
    }
  });

  it('validation: metadata limits are 50 keys, 40-character keys, 500-character values, strings only', async () => {
    const fifty = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`key_${i}`, 'x'.repeat(500)]));
    expect((await create(p.keys.sandbox, { metadata: fifty })).metadata).toEqual(fifty);
    expect((await create(p.keys.sandbox, { metadata: { ['ü'.repeat(40)]: '日'.repeat(500) } })).metadata).toEqual({
      ['ü'.repeat(40)]: '日'.repeat(500),
    });
    const bad = [{ ...fifty, one_more: 'x' }, { ['k'.repeat(41)]: 'v' }, { k: 'v'.repeat(501) }, { k: 5 }, { k: { nested: 'x' } }, ['a']];
    for (const metadata of bad) {
      const r = await api(p.keys.sandbox, 'POST', '/api/v1/payments', { amount: '1.00', asset_code: 'USDC.ETH', metadata });
      expect(r.status, JSON.stringify(metadata).slice(0, 60)).toBe(400);
      expect(r.body.error.param).toMatch(/^metadata/);
    }
    const unknown = await api(p.keys.sandbox, 'POST', '/api/v1/payments', { amount: '1.00', asset_code: 'USDC.ETH', currency: 'usd' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.code).toBe('parameter_unknown');
    const pay = await create();
    const typo = await api(p.keys.sandbox, 'POST', `/api/v1/payments/${pay.id}/cancel`, { reason: 'x' });
    expect(typo.status).toBe(400);
    expect(typo.body.error.code).toBe('parameter_unknown');
    expect((await api(p.keys.sandbox, 'POST', `/api/v1/payments/${pay.id}/cancel`, {})).status).toBe(200);
  });

  it('lists newest first, filters by status, pages with starting_after', async () => {
    const q = await svc.platform('lister');
    const a = await create(q.keys.sandbox);
    clock.advance(1000);
    const b = await create(q.keys.sandbox);
    clock.advance(1000);
    const c = await create(q.keys.sandbox);
    await api(q.keys.sandbox, 'POST', `/api/v1/payments/${b.id}/cancel`);
    const all = await api(q.keys.sandbox, 'GET', '/api/v1/payments?limit=2');
    expect(all.body.object).toBe('list');
    expect(all.body.data.map((x: { id: string }) => x.id)).toEqual([c.id, b.id]);
    expect(all.body.has_more).toBe(true);
    const next = await api(q.keys.sandbox, 'GET', `/api/v1/payments?limit=2&starting_after=${b.id}`);
    expect(next.body.data.map((x: { id: string }) => x.id)).toEqual([a.id]);
    expect(next.body.has_more).toBe(false);
    const cancelled = await api(q.keys.sandbox, 'GET', '/api/v1/payments?status=cancelled');
    expect(cancelled.body.data.map((x: { id: string }) => x.id)).toEqual([b.id]);
    expect((await api(q.keys.sandbox, 'GET', '/api/v1/payments?status=nope')).status).toBe(400);
  });

  it('Idempotency-Key on every POST: the same key and body returns the first answer and publishes once', async () => {
    const k = (s: string) => ({ 'idempotency-key': `${s}-${Date.now()}-${Math.random()}` });
    const h = k('create');
    const body = { amount: '5.00', asset_code: 'USDC.ETH', metadata: { a: 'b' } };
    const first = await api(p.keys.sandbox, 'POST', '/api/v1/payments', body, h);
    const again = await api(p.keys.sandbox, 'POST', '/api/v1/payments', body, h);
    expect(again.status).toBe(201);
    expect(again.body.id).toBe(first.body.id);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect((await api(p.keys.sandbox, 'POST', '/api/v1/payments', { ...body, amount: '6.00' }, h)).status).toBe(409);

    const hs = k('simulate');
    expect(
      (await api(p.keys.sandbox, 'POST', `/api/v1/sandbox/payments/${first.body.id}/simulate`, { status: 'processing' }, hs)).status,
    ).toBe(200);
    const simAgain = await api(p.keys.sandbox, 'POST', `/api/v1/sandbox/payments/${first.body.id}/simulate`, { status: 'processing' }, hs);
    expect(simAgain.status).toBe(200); // replayed, not a 409 for processing -> processing
    expect(simAgain.headers.get('idempotent-replayed')).toBe('true');

    const second = await create();
    const hc = k('cancel');
    expect((await api(p.keys.sandbox, 'POST', `/api/v1/payments/${second.id}/cancel`, undefined, hc)).status).toBe(200);
    expect(
      (await api(p.keys.sandbox, 'POST', `/api/v1/payments/${second.id}/cancel`, undefined, hc)).headers.get('idempotent-replayed'),
    ).toBe('true');

    const hsess = k('session');
    const sbody = { amount: '1.00', asset_code: 'USDC.ETH', success_url: 'https://shop.example/ok' };
    const s1 = await api(p.keys.sandbox, 'POST', '/api/v1/checkout_sessions', sbody, hsess);
    const s2 = await api(p.keys.sandbox, 'POST', '/api/v1/checkout_sessions', sbody, hsess);
    expect(s2.body.id).toBe(s1.body.id);
    const he = k('expire');
    expect((await api(p.keys.sandbox, 'POST', `/api/v1/checkout_sessions/${s1.body.id}/expire`, undefined, he)).status).toBe(200);
    expect((await api(p.keys.sandbox, 'POST', `/api/v1/checkout_sessions/${s1.body.id}/expire`, undefined, he)).status).toBe(200);

    const types = (await delivered()).map((e) => e.type).sort();
    expect(types).toEqual(
      [
        'checkout_session.expired',
        'payment.cancelled',
        'payment.created',
        'payment.created',
        'payment.created',
        'payment.expired',
        'payment.processing',
      ].sort(),
    );
  });
});

describe('OpenAPI', () => {
  it('documents the payment, checkout session and sandbox routes with their objects (not the internal ones)', async () => {
    const doc = (await api(undefined, 'GET', '/api/v1/openapi.json')).body;
    for (const path of [
      '/api/v1/payments',
      '/api/v1/payments/{id}',
      '/api/v1/payments/{id}/cancel',
      '/api/v1/sandbox/payments/{id}/simulate',
      '/api/v1/checkout_sessions',
      '/api/v1/checkout_sessions/{id}',
      '/api/v1/checkout_sessions/{id}/expire',
    ]) {
      expect(doc.paths[path], path).toBeDefined();
    }
    expect(Object.keys(doc.paths).some((k) => k.startsWith('/internal') || k.startsWith('/checkout'))).toBe(false);
    expect(JSON.stringify(doc)).toContain('USDC-E.ARB');
  });
});

describe('state machine over HTTP', () => {
  it('an illegal transition is a 409 whose message lists the allowed next statuses; terminal statuses are final', async () => {
    const pay = await create();
    const r = await simulate(pay.id, 'succeeded');
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe('payment_invalid_transition');
    expect(r.body.error.message).toContain('requires_action, under_review, processing, cancelled, expired');
    expect((await simulate(pay.id, 'processing')).status).toBe(200);
    expect((await api(p.keys.sandbox, 'POST', `/api/v1/payments/${pay.id}/cancel`)).status).toBe(409);
    expect((await simulate(pay.id, 'succeeded')).status).toBe(200);
    const after = await simulate(pay.id, 'failed');
    expect(after.status).toBe(409);
    expect(after.body.error.message).toMatch(/'succeeded' is final/);
    expect((await api(p.keys.sandbox, 'GET', `/api/v1/payments/${pay.id}`)).body.status).toBe('succeeded');
    expect((await delivered()).map((e) => e.type)).toEqual(['payment.created', 'payment.processing', 'payment.succeeded']);
  });

  it('concurrent transitions of one payment: exactly one wins, one event is published', async () => {
    for (let round = 0; round < 3; round++) {
      const pay = await create();
      expect((await simulate(pay.id, 'processing')).status).toBe(200);
      const targets = ['succeeded', 'failed', 'succeeded', 'failed', 'succeeded', 'failed'];
      const results = await Promise.all(targets.map((status) => simulate(pay.id, status)));
      const winners = results.filter((r) => r.status === 200);
      expect(winners).toHaveLength(1);
      expect(results.filter((r) => r.status === 409)).toHaveLength(targets.length - 1);
      const final = (await api(p.keys.sandbox, 'GET', `/api/v1/payments/${pay.id}`)).body.status;
      expect(final).toBe(winners[0]!.body.status);
      const ev = (await svc.api(p.keys.sandbox, 'GET', `/api/v1/events?limit=100`)).body.data.filter(
        (e: any) => e.data.object.id === pay.id,
      );
      expect(ev.map((e: any) => e.type).sort()).toEqual(['payment.created', 'payment.processing', `payment.${final}`].sort());
    }
  });

  it('live keys cannot simulate: 403 sandbox_only (and live payments move through the internal rails)', async () => {
    const pay = await create(p.keys.live);
    expect(pay.environment).toBe('live');
    const r = await simulate(pay.id, 'processing', {}, p.keys.live);
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe('sandbox_only');
    const doubled = await create(p.keys.live, {}).catch(() => null);
    expect(doubled).not.toBeNull();
    expect(
      (await api(p.keys.live, 'POST', '/api/v1/payments', { amount: '1.00', asset_code: 'USDC.ETH', double_delivery: true })).body.error
        .code,
    ).toBe('sandbox_only');
    const moved = await internal(`/internal/v1/payments/${pay.id}/transitions`, { status: 'processing' });
    expect(moved.status).toBe(200);
    expect(moved.body.status).toBe('processing');
    const illegal = await internal(`/internal/v1/payments/${pay.id}/transitions`, { status: 'cancelled' });
    expect(illegal.status).toBe(409);
    expect(illegal.body.error.message).toContain('succeeded, failed');
    const noToken = await fetch(`${svc.url}/internal/v1/payments/${pay.id}/transitions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"status":"succeeded"}',
    });
    expect(noToken.status).toBe(401);
    expect((await internal('/internal/v1/payments/pay_doesnotexist/transitions', { status: 'processing' })).status).toBe(404);
  });

  it("tenancy: another Platform's or environment's payments and sessions answer 404 like unknown ids; events go only to the right Platform and environment", async () => {
    const other = await svc.platform('other');
    const otherReceiver = await startReceiver();
    try {
      await svc.api(other.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url: otherReceiver.url, enabled_events: ['*'] });
      const pay = await create();
      const sess = await createSession();
      for (const key of [other.keys.sandbox, other.keys.live, p.keys.live]) {
        const unknown = await api(key, 'GET', '/api/v1/payments/pay_0000000000000000000000ab');
        for (const [path, body] of [
          [`/api/v1/payments/${pay.id}`, undefined],
          [`/api/v1/checkout_sessions/${sess.id}`, undefined],
        ] as const) {
          const r = await api(key, 'GET', path, body);
          expect(r.status).toBe(404);
          expect(r.body.error.code).toBe(unknown.body.error.code);
        }
        if (key.startsWith('sk_test_')) expect((await simulate(pay.id, 'processing', {}, key)).status).toBe(404);
        expect((await api(key, 'POST', `/api/v1/payments/${pay.id}/cancel`)).status).toBe(404);
        expect((await api(key, 'POST', `/api/v1/checkout_sessions/${sess.id}/expire`)).status).toBe(404);
        expect((await api(key, 'GET', '/api/v1/payments')).body.data.map((x: { id: string }) => x.id)).not.toContain(pay.id);
      }
      await simulate(pay.id, 'processing');
      const events = await delivered();
      expect(events.length).toBeGreaterThan(0);
      expect(receiver.requests.every((r) => r.path.endsWith('/sandbox'))).toBe(true);
      expect(events.every((e) => e.merchant_id === p.merchant_id && e.environment === 'sandbox')).toBe(true);
      expect(otherReceiver.requests).toHaveLength(0);
      // The live Platform endpoint gets only live events.
      receiver.requests.length = 0;
      const live = await create(p.keys.live);
      const liveEvents = await delivered();
      expect(liveEvents.map((e) => [e.type, e.data.object.id, e.environment])).toEqual([['payment.created', live.id, 'live']]);
      expect(receiver.requests[0]!.path).toMatch(/\/live$/);
    } finally {
      await otherReceiver.close();
    }
  });
});

describe('every event type from a real transition (spec 6.1)', () => {
  it('each of the ten types is emitted by a transition and delivered with the full Payment or session and its metadata', async () => {
    const expected = new Map<string, Record<string, unknown>>();
    const a = await create();
    expected.set('payment.created', a);
    expected.set('payment.requires_action', (await simulate(a.id, 'requires_action')).body);
    expected.set('payment.under_review', (await simulate(a.id, 'under_review')).body);
    expected.set('payment.processing', (await simulate(a.id, 'processing')).body);
    expected.set('payment.succeeded', (await simulate(a.id, 'succeeded')).body);
    const b = await create();
    await simulate(b.id, 'processing');
    expected.set('payment.failed', (await simulate(b.id, 'failed')).body);
    const c = await create();
    expected.set('payment.cancelled', (await api(p.keys.sandbox, 'POST', `/api/v1/payments/${c.id}/cancel`)).body);
    const d = await create();
    expected.set('payment.expired', (await simulate(d.id, 'expired')).body);
    const paid = await createSession();
    const submitted = await submitCheckout(paid.url, 'pay');
    expect(submitted.status).toBe(303);
    expected.set('checkout_session.completed', (await api(p.keys.sandbox, 'GET', `/api/v1/checkout_sessions/${paid.id}`)).body);
    const lapsed = await createSession();
    expected.set('checkout_session.expired', (await api(p.keys.sandbox, 'POST', `/api/v1/checkout_sessions/${lapsed.id}/expire`)).body);

    const events = await delivered();
    for (const type of RESOURCE_EVENT_TYPES) {
      const want = expected.get(type)!;
      const got = events.filter((e) => e.type === type && e.data.object.id === want.id);
      expect(got, type).toHaveLength(1);
      expect(got[0]!.data.object, type).toEqual(want);
      expect(got[0]!.data.object.metadata, type).toEqual(METADATA);
      if (type.startsWith('payment.')) expect(got[0]!.data.object.status).toBe(type.slice('payment.'.length));
    }
    expect(expected.get('checkout_session.completed')).toMatchObject({ status: 'complete', payment: expect.stringMatching(/^pay_/) });
    expect(expected.get('checkout_session.expired')).toMatchObject({ status: 'expired' });
  });
});

describe('double delivery (spec 6.2.5)', () => {
  it('spec 6.2.5: double_delivery gives each endpoint two deliveries of one evt_ id with identical bytes and their own logs', async () => {
    const pay = await create();
    await worker.drain();
    receiver.requests.length = 0;
    const r = await simulate(pay.id, 'processing', { double_delivery: true });
    expect(r.status).toBe(200);
    await worker.drain();
    expect(receiver.requests).toHaveLength(2);
    const [one, two] = receiver.requests;
    expect(one!.headers['service-event-id']).toBe(two!.headers['service-event-id']);
    expect(one!.raw.equals(two!.raw)).toBe(true);
    const evt = JSON.parse(one!.raw.toString());
    expect(evt.type).toBe('payment.processing');
    const deliveries = await api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?event_id=${evt.id}`);
    expect(deliveries.body.data).toHaveLength(2);
    const ids = deliveries.body.data.map((d: { id: string }) => d.id);
    expect(new Set(ids).size).toBe(2);
    const logs = await svc.ctx.database.query<{ delivery_id: string }>(
      'SELECT delivery_id FROM delivery_attempts WHERE delivery_id = ANY($1::text[])',
      [ids],
    );
    expect(logs.map((l) => l.delivery_id).sort()).toEqual([...ids].sort());
    // The next transition without the flag is delivered once.
    receiver.requests.length = 0;
    await simulate(pay.id, 'succeeded');
    await worker.drain();
    expect(receiver.requests).toHaveLength(1);
  });

  it('spec 6.2.5: publishEvent with two copies stays idempotent on its key: a replay adds no delivery', async () => {
    const object = { ...(await create()), status: 'processing' };
    await worker.drain();
    receiver.requests.length = 0;
    const once = () =>
      svc.ctx.database.db.transaction((tx) =>
        publishEvent(
          tx,
          {
            type: 'payment.processing',
            merchantId: p.merchant_id,
            environment: 'sandbox',
            object,
            copies: 2,
            idempotencyKey: `dd-${object.id}`,
          },
          clock.now(),
        ),
      );
    const first = await once();
    const again = await once();
    expect(first.deliveries).toBe(2);
    expect(again).toMatchObject({ replayed: true, deliveries: 0 });
    expect(again.event.id).toBe(first.event.id);
    const [row] = await svc.ctx.database.query<{ n: string }>('SELECT count(*) AS n FROM webhook_deliveries WHERE event_id = $1', [
      first.event.id,
    ]);
    expect(Number(row!.n)).toBe(2);
    await worker.drain();
    expect(receiver.requests.map((r) => r.headers['service-event-id'])).toEqual([first.event.id, first.event.id]);
  });

  it('spec 6.2.5: a sandbox checkout session created with double_delivery delivers each of its events twice', async () => {
    const sess = await createSession(p.keys.sandbox, { double_delivery: true });
    expect((await submitCheckout(sess.url, 'pay')).status).toBe(303);
    const events = await delivered();
    const byId = new Map<string, number>();
    for (const e of events) byId.set(e.id, (byId.get(e.id) ?? 0) + 1);
    expect([...byId.values()].every((n) => n === 2)).toBe(true);
    expect(events.map((e) => e.type).sort()).toEqual(
      [
        'payment.created',
        'payment.created',
        'payment.processing',
        'payment.processing',
        'payment.succeeded',
        'payment.succeeded',
        'checkout_session.completed',
        'checkout_session.completed',
      ].sort(),
    );
  });
});

describe('internal event publishing checks the object against the type', () => {
  const publishRaw = (body: unknown) => internal('/internal/v1/events', body);
  it("refuses a payment.* event whose data.object.status is not the type's status", async () => {
    const object = { id: 'pay_x1', object: 'payment', status: 'processing', amount: '1.00', asset_code: 'USDC.ETH', metadata: {} };
    const r = await publishRaw({ type: 'payment.succeeded', merchant_id: p.merchant_id, environment: 'sandbox', data: { object } });
    expect(r.status).toBe(400);
    expect(r.body.error.param).toBe('data.object.status');
    expect(
      (await publishRaw({ type: 'payment.processing', merchant_id: p.merchant_id, environment: 'sandbox', data: { object } })).status,
    ).toBe(201);
  });

  it('validates checkout_session.* events against the documented session object', async () => {
    const sess = await createSession();
    await submitCheckout(sess.url, 'pay');
    const complete = (await api(p.keys.sandbox, 'GET', `/api/v1/checkout_sessions/${sess.id}`)).body;
    expect(
      (
        await publishRaw({
          type: 'checkout_session.completed',
          merchant_id: p.merchant_id,
          environment: 'sandbox',
          data: { object: complete },
        })
      ).status,
    ).toBe(201);
    const wrongStatus = await publishRaw({
      type: 'checkout_session.expired',
      merchant_id: p.merchant_id,
      environment: 'sandbox',
      data: { object: complete },
    });
    expect(wrongStatus.status).toBe(400);
    expect(wrongStatus.body.error.param).toBe('data.object.status');
    const { payment: _omit, ...noPayment } = complete;
    const missing = await publishRaw({
      type: 'checkout_session.completed',
      merchant_id: p.merchant_id,
      environment: 'sandbox',
      data: { object: noPayment },
    });
    expect(missing.status).toBe(400);
    expect(missing.body.error.param).toBe('data.object.payment');
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import {
  DEDUP_RETENTION_MS,
  createWebhookHandler,
  memoryStore,
  pgStore,
  type ErrorInfo,
  type WebhookEvent,
  type WebhookHandler,
  type WebhookHandlerOptions,
} from '../src/index.ts';
import { SECRET, deferred, delivery, paymentEvent } from './helpers/events.ts';
import pg from 'pg';
import { until } from '../../server/test/helpers/wait.ts';

const handlers: WebhookHandler[] = [];
afterEach(async () => {
  await Promise.all(handlers.splice(0).map((h) => h.close()));
});

function make(options: Partial<WebhookHandlerOptions> & Pick<WebhookHandlerOptions, 'onEvent'>) {
  const errors: Array<{ error: unknown; info: ErrorInfo }> = [];
  const handler = createWebhookHandler({
    secret: SECRET,
    store: memoryStore(),
    onError: (error, info) => errors.push({ error, info }),
    ...options,
  });
  handlers.push(handler);
  return { handler, errors };
}

const parse = (body: string) => JSON.parse(body) as Record<string, unknown>;

describe('createWebhookHandler pipeline', () => {
  it('spec 5.1.7: a failed verification is answered 400 with the reason and the event is not processed or recorded', async () => {
    const store = memoryStore();
    const seen: string[] = [];
    const { handler } = make({ store, onEvent: (e) => void seen.push(e.id) });
    const d = delivery(paymentEvent());
    const response = await handler.handle({ body: d.body.replace('10.00', '11.00'), headers: d.headers });
    expect(response.status).toBe(400);
    expect(parse(response.body)).toMatchObject({ error: 'bad_signature' });
    await handler.drain();
    expect(seen).toEqual([]);
    expect(store.size).toBe(0);
    // The genuine delivery is still processed afterwards: a forged one did not burn the id.
    expect((await handler.handle(d)).status).toBe(200);
    await handler.drain();
    expect(seen).toHaveLength(1);
  });

  it('spec 6.2.2: acknowledges with 200 at once, before the work has finished', async () => {
    const gate = deferred();
    const started = deferred();
    let finished = false;
    const { handler } = make({
      onEvent: async () => {
        started.resolve();
        await gate.promise;
        finished = true;
      },
    });
    const response = await handler.handle(delivery(paymentEvent()));
    expect(response.status).toBe(200);
    expect(parse(response.body)).toEqual({ received: true });
    await started.promise;
    expect(finished).toBe(false);
    gate.resolve();
    await handler.drain();
    expect(finished).toBe(true);
  });

  it('spec 6.2.1: a seen evt_ id is answered 200 and not processed again', async () => {
    const calls: string[] = [];
    const { handler } = make({ onEvent: (e) => void calls.push(e.id) });
    const event = paymentEvent();
    expect(parse((await handler.handle(delivery(event))).body)).toEqual({ received: true });
    await handler.drain();
    // A redelivery is signed again, later, with the same body.
    const again = await handler.handle(delivery(event, { timestamp: Math.floor(Date.now() / 1000) + 5 }));
    expect(again.status).toBe(200);
    expect(parse(again.body)).toEqual({ received: true, duplicate: true });
    await handler.drain();
    expect(calls).toEqual([event.id]);
  });

  it('spec 6.2.1: a duplicate arriving while the first is still being processed is answered 200 and not processed', async () => {
    const gate = deferred();
    let calls = 0;
    const { handler } = make({
      onEvent: async () => {
        calls++;
        await gate.promise;
      },
    });
    const event = paymentEvent();
    await handler.handle(delivery(event));
    await until(() => calls === 1, { interval: 10, message: 'onEvent to be called' });
    const dup = await handler.handle(delivery(event));
    expect(parse(dup.body)).toEqual({ received: true, duplicate: true });
    gate.resolve();
    await handler.drain();
    expect(calls).toBe(1);
  });

  it('spec 6.1.1: types the receiver does not handle are acknowledged with 200 and ignored', async () => {
    const calls: string[] = [];
    const { handler } = make({ types: ['payment.succeeded'], onEvent: (e) => void calls.push(e.type) });
    for (const type of ['checkout_session.completed', 'payment.refunded_in_a_future_version']) {
      const response = await handler.handle(delivery(paymentEvent({ type })));
      expect(response.status).toBe(200);
      expect(parse(response.body)).toEqual({ received: true, ignored: true });
    }
    await handler.handle(delivery(paymentEvent()));
    await handler.drain();
    expect(calls).toEqual(['payment.succeeded']);
  });

  it('spec 6.1.1: without a types list, a type added to the catalog later reaches onEvent and is acknowledged', async () => {
    const calls: string[] = [];
    const { handler } = make({ onEvent: (e) => void calls.push(e.type) });
    const response = await handler.handle(delivery(paymentEvent({ type: 'payment.partially_refunded' })));
    expect(response.status).toBe(200);
    await handler.drain();
    expect(calls).toEqual(['payment.partially_refunded']);
  });

  it('spec 5.1.4: an already-parsed body is a programming error: 500 (the service retries) with a message, reported', async () => {
    const { handler, errors } = make({ onEvent: () => {} });
    const d = delivery(paymentEvent());
    const response = await handler.handle({ body: JSON.parse(d.body), headers: d.headers });
    expect(response.status).toBe(500);
    expect(parse(response.body).message).toMatch(/already parsed/);
    expect(errors[0]?.info).toMatchObject({ phase: 'receive', willRetry: true });
  });

  it('spec 8: a store that cannot record the id answers 500, so the service retries the delivery', async () => {
    const pool = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/none', connectionTimeoutMillis: 1000 });
    const calls: string[] = [];
    const { handler, errors } = make({ store: pgStore({ pool }), onEvent: (e) => void calls.push(e.id) });
    const response = await handler.handle(delivery(paymentEvent()));
    expect(response.status).toBe(500);
    expect(parse(response.body)).toEqual({ error: 'store_unavailable' });
    expect(calls).toEqual([]);
    expect(errors.some((e) => e.info.phase === 'store')).toBe(true);
    await handler.close();
    await pool.end();
  });

  it('answers 503 after close(), so the service retries against a running instance', async () => {
    const { handler } = make({ onEvent: () => {} });
    await handler.close();
    expect((await handler.handle(delivery(paymentEvent()))).status).toBe(503);
  });
});

describe('failed work is not lost (memory store: in-process retries, then the id is released)', () => {
  it('spec 6.2.2: work that throws is retried with backoff and the error reported; after success the id stays seen', async () => {
    const attempts: number[] = [];
    const times: number[] = [];
    const { handler, errors } = make({
      retryDelaysMs: [20, 40, 80],
      onEvent: (_e, ctx) => {
        attempts.push(ctx.attempt);
        times.push(Date.now());
        if (ctx.attempt < 3) throw new Error(`boom ${ctx.attempt}`);
      },
    });
    const event = paymentEvent();
    expect((await handler.handle(delivery(event))).status).toBe(200);
    await until(() => attempts.length === 3, { interval: 10, message: 'three attempts' });
    await handler.drain();
    expect(attempts).toEqual([1, 2, 3]);
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(19);
    expect(times[2]! - times[1]!).toBeGreaterThanOrEqual(39);
    expect(errors.map((e) => [e.info.phase, e.info.attempt, e.info.willRetry, e.info.event?.id])).toEqual([
      ['process', 1, true, event.id],
      ['process', 2, true, event.id],
    ]);
    expect(parse((await handler.handle(delivery(event))).body)).toMatchObject({ duplicate: true });
  });

  it('spec 8: while a retry is pending, a redelivery is a duplicate (the work is already queued)', async () => {
    let calls = 0;
    const { handler } = make({
      retryDelaysMs: [150],
      onEvent: () => {
        calls++;
        if (calls === 1) throw new Error('first attempt fails');
      },
    });
    const event = paymentEvent();
    await handler.handle(delivery(event));
    await until(() => calls === 1, { interval: 10, message: 'onEvent to be called' });
    await handler.drain();
    expect(parse((await handler.handle(delivery(event))).body)).toMatchObject({ duplicate: true });
    await until(() => calls === 2, { interval: 10, message: 'onEvent to be called again' });
    await handler.drain();
    expect(calls).toBe(2);
  });

  it('spec 8: when every attempt fails the id is released, reported as final, and the next delivery (a replay) is processed', async () => {
    const store = memoryStore();
    let fail = true;
    const processed: string[] = [];
    const { handler, errors } = make({
      store,
      retryDelaysMs: [5, 5],
      onEvent: (e) => {
        if (fail) throw new Error('downstream is down');
        processed.push(e.id);
      },
    });
    const event = paymentEvent();
    await handler.handle(delivery(event));
    await until(() => errors.length === 3, { interval: 10, message: 'three errors reported' });
    await until(() => store.size === 0, { interval: 10, message: 'the id to be released' });
    expect(errors.map((e) => e.info.willRetry)).toEqual([true, true, false]);
    fail = false;
    const replay = await handler.handle(delivery(event));
    expect(parse(replay.body)).toEqual({ received: true });
    await handler.drain();
    expect(processed).toEqual([event.id]);
  });

  it('spec 8: close() releases events waiting for an in-process retry, so a redelivery to the next process is processed', async () => {
    const store = memoryStore();
    const first = make({ store, retryDelaysMs: [60_000], onEvent: () => Promise.reject(new Error('fails')) });
    const event = paymentEvent();
    await first.handler.handle(delivery(event));
    await until(() => first.errors.length === 1, { interval: 10, message: 'the first error reported' });
    await first.handler.close();
    const processed: string[] = [];
    const second = make({ store, onEvent: (e) => void processed.push(e.id) });
    expect(parse((await second.handler.handle(delivery(event))).body)).toEqual({ received: true });
    await second.handler.drain();
    expect(processed).toEqual([event.id]);
  });

  it('spec 8: work abandoned by a dead process is released when its lease expires', async () => {
    let clock = Date.UTC(2025, 0, 1);
    const store = memoryStore({ now: () => clock });
    const gate = deferred();
    // The first process takes the event and never finishes (it "died").
    const dead = make({ store, leaseMs: 60_000, onEvent: () => gate.promise });
    const event = paymentEvent();
    await dead.handler.handle(delivery(event));
    const processed: string[] = [];
    const next = make({ store, onEvent: (e) => void processed.push(e.id) });
    expect(parse((await next.handler.handle(delivery(event))).body)).toMatchObject({ duplicate: true });
    clock += 60_001;
    expect(parse((await next.handler.handle(delivery(event))).body)).toEqual({ received: true });
    await next.handler.drain();
    expect(processed).toEqual([event.id]);
    gate.resolve();
  });
});

describe('memoryStore retention', () => {
  it('spec 8: keeps seen ids at least 30 days, then purges them', async () => {
    let clock = Date.UTC(2025, 0, 1);
    const store = memoryStore({ now: () => clock });
    const event = paymentEvent() as WebhookEvent;
    const claim = (await store.claim(event, 1000))!;
    await store.complete(claim);
    clock += DEDUP_RETENTION_MS - 1;
    expect(await store.purge()).toBe(0);
    expect(await store.claim(event, 1000)).toBeNull();
    clock += 2;
    expect(await store.purge()).toBe(1);
    expect(await store.claim(event, 1000)).not.toBeNull();
  });

  it('spec 8: refuses a retention shorter than 30 days', () => {
    expect(() => memoryStore({ retentionMs: DEDUP_RETENTION_MS - 1 })).toThrow(RangeError);
  });
});

import { afterAll, describe, expect, it } from 'vitest';
import {
  createWebhookHandler,
  memoryStore,
  pgStore,
  toNodeHandler,
  type ErrorInfo,
  type WebhookHandlerOptions,
  type WebhookStore,
} from '../src/index.ts';
import { uniqueName } from './helpers/db.ts';
import { storeFixture } from './helpers/stores.ts';
import { SECRET, deferred, delivery, paymentEvent } from './helpers/events.ts';
import { listen, post } from './helpers/http.ts';
import { until } from '../../server/test/helpers/wait.ts';

const fx = storeFixture('stores');
const { pool, redis, tables, handlers, newPgStore, newRedisStore } = fx;

afterAll(() => fx.close());

function handlerFor(store: WebhookStore, options: Partial<WebhookHandlerOptions> & Pick<WebhookHandlerOptions, 'onEvent'>) {
  const errors: Array<{ error: unknown; info: ErrorInfo }> = [];
  const handler = createWebhookHandler({
    secret: SECRET,
    store,
    pollIntervalMs: 50,
    onError: (error, info) => errors.push({ error, info }),
    ...options,
  });
  handlers.push(handler);
  return { handler, errors };
}

const stores: Array<[string, () => WebhookStore]> = [
  ['memory', () => memoryStore()],
  ['PostgreSQL', newPgStore],
  ['Redis', newRedisStore],
];

describe.each(stores)('%s store', (_name, makeStore) => {
  it('spec 6.2.1: 50 concurrent identical deliveries over HTTP run onEvent once; every one is answered 200', async () => {
    const store = makeStore();
    const calls: string[] = [];
    // Two receiver instances share the store, as two processes behind a load balancer would.
    const a = handlerFor(store, { onEvent: async (e) => void calls.push(e.id) });
    const b = handlerFor(store, { onEvent: async (e) => void calls.push(e.id) });
    const serverA = await listen(toNodeHandler(a.handler));
    const serverB = await listen(toNodeHandler(b.handler));
    try {
      const event = paymentEvent();
      const d = delivery(event);
      const responses = await Promise.all(Array.from({ length: 50 }, (_, i) => post(i % 2 ? serverA.url : serverB.url, d.body, d.headers)));
      expect(responses.map((r) => r.status)).toEqual(Array(50).fill(200));
      expect(responses.filter((r) => r.json().duplicate === true)).toHaveLength(49);
      await Promise.all([a.handler.drain(), b.handler.drain()]);
      expect(calls).toEqual([event.id]);
    } finally {
      await serverA.close();
      await serverB.close();
    }
  });

  it('spec 6.2.1: concurrent claims of the same id hand out exactly one claim', async () => {
    const store = makeStore();
    const event = paymentEvent();
    const claims = await Promise.all(Array.from({ length: 50 }, () => store.claim(event, 60_000)));
    expect(claims.filter(Boolean)).toHaveLength(1);
  });

  it('spec 8: a release lets the next delivery be processed; a stale holder cannot release a newer claim', async () => {
    const store = makeStore();
    const event = paymentEvent();
    const first = (await store.claim(event, 60_000))!;
    await store.release(first);
    const second = (await store.claim(event, 60_000))!;
    expect(second).not.toBeNull();
    await store.release(first); // fenced by the token: no effect
    expect(await store.claim(event, 60_000)).toBeNull();
    await store.complete(second);
    expect(await store.claim(event, 60_000)).toBeNull();
  });
});

describe('PostgreSQL store: a durable inbox', () => {
  it('spec 6.2.2: the seen id and the work are one row, written before the 200', async () => {
    const store = newPgStore();
    const gate = deferred();
    const { handler } = handlerFor(store, { onEvent: () => gate.promise });
    const event = paymentEvent();
    expect((await handler.handle(delivery(event))).status).toBe(200);
    const { rows } = await pool.query(`SELECT state, payload, attempts FROM "${store.table}" WHERE event_id = $1`, [event.id]);
    expect(rows).toEqual([{ state: 'processing', payload: event, attempts: 1 }]);
    gate.resolve();
    await handler.drain();
    const done = await pool.query(`SELECT state, payload FROM "${store.table}" WHERE event_id = $1`, [event.id]);
    expect(done.rows).toEqual([{ state: 'done', payload: null }]);
  });

  it('spec 8: an event acknowledged by a process that then died is processed by another instance after the lease', async () => {
    const store = newPgStore();
    const event = paymentEvent();
    // The dead process recorded the event (and answered 200) but never ran the work.
    expect(await store.claim(event, 100)).not.toBeNull();
    const processed: Array<[string, number]> = [];
    handlerFor(store, { onEvent: (e, ctx) => void processed.push([e.id, ctx.attempt]) });
    await until(() => processed.length === 1, { interval: 10, message: 'the abandoned event to be processed' });
    expect(processed).toEqual([[event.id, 2]]);
    await until(
      async () => (await pool.query(`SELECT state FROM "${store.table}" WHERE event_id = $1`, [event.id])).rows[0]?.state === 'done',
      { interval: 10, message: 'the event to be recorded as done' },
    );
  });

  it('spec 8: failed work is kept in the table with its error and retried there, surviving a restart', async () => {
    const store = newPgStore();
    const event = paymentEvent();
    const first = handlerFor(store, { retryDelaysMs: [300], onEvent: () => Promise.reject(new Error('ledger down')) });
    await first.handler.handle(delivery(event));
    await until(() => first.errors.length === 1, { interval: 10, message: 'the first error reported' });
    await first.handler.drain();
    await first.handler.close(); // the process restarts before the retry is due
    const { rows } = await pool.query(`SELECT state, attempts, last_error FROM "${store.table}" WHERE event_id = $1`, [event.id]);
    expect(rows[0]).toMatchObject({ state: 'pending', attempts: 1 });
    expect(rows[0].last_error).toMatch(/ledger down/);
    // A redelivery meanwhile is a duplicate: the work is queued in the table.
    const processed: Array<[string, number]> = [];
    const second = handlerFor(store, { onEvent: (e, ctx) => void processed.push([e.id, ctx.attempt]) });
    expect(JSON.parse((await second.handler.handle(delivery(event))).body)).toMatchObject({ duplicate: true });
    await until(() => processed.length === 1, { interval: 10, message: 'the retry' });
    expect(processed).toEqual([[event.id, 2]]);
  });

  it('spec 8: after the last attempt the event is kept as failed; a replay from the Portal or requeueFailed() runs it again', async () => {
    const store = newPgStore();
    let failing = true;
    const processed: string[] = [];
    const { handler, errors } = handlerFor(store, {
      retryDelaysMs: [10, 10],
      onEvent: (e) => {
        if (failing) throw new Error('still down');
        processed.push(e.id);
      },
    });
    const replayed = paymentEvent();
    const requeued = paymentEvent();
    await handler.handle(delivery(replayed));
    await handler.handle(delivery(requeued));
    await until(() => errors.filter((e) => e.info.willRetry === false).length === 2, { interval: 10, message: 'both to fail for good' });
    const states = async () => (await pool.query(`SELECT event_id, state, attempts FROM "${store.table}" ORDER BY event_id`)).rows;
    await until(async () => (await states()).every((r) => r.state === 'failed'), { interval: 10, message: 'both rows failed' });
    expect((await states()).map((r) => r.attempts)).toEqual([3, 3]);
    failing = false;
    // A manual replay of a failed event is processed, not acknowledged as a duplicate.
    expect(JSON.parse((await handler.handle(delivery(replayed))).body)).toEqual({ received: true });
    expect(await store.requeueFailed(requeued.id)).toBe(1);
    await until(() => processed.length === 2, { interval: 10, message: 'both to be processed' });
    expect(processed.sort()).toEqual([replayed.id, requeued.id].sort());
  });

  it('spec 8: purge deletes done ids older than 30 days and keeps younger ones and failed work', async () => {
    const store = newPgStore();
    await store.migrate();
    const ids = ['evt_old_done', 'evt_young_done', 'evt_old_failed'];
    await pool.query(
      `INSERT INTO "${store.table}" (event_id, event_type, state, updated_at) VALUES
        ($1, 'payment.succeeded', 'done', now() - interval '30 days 1 minute'),
        ($2, 'payment.succeeded', 'done', now() - interval '29 days 23 hours'),
        ($3, 'payment.succeeded', 'failed', now() - interval '90 days')`,
      ids,
    );
    expect(await store.purge()).toBe(1);
    const { rows } = await pool.query(`SELECT event_id FROM "${store.table}" ORDER BY event_id`);
    expect(rows.map((r) => r.event_id)).toEqual(['evt_old_failed', 'evt_young_done']);
  });

  it('migrate() is idempotent and safe when several processes run it at once', async () => {
    const table = uniqueName('events');
    const creditsTable = uniqueName('credits');
    tables.push(table, creditsTable);
    await Promise.all(Array.from({ length: 5 }, () => pgStore({ pool, table, creditsTable }).migrate()));
    await pgStore({ pool, table, creditsTable }).migrate();
    expect(pgStore({ pool, table, creditsTable }).schemaSql()).toContain('CREATE TABLE IF NOT EXISTS');
  });
});

describe('Redis store', () => {
  it('spec 8: keys expire by themselves: the lease while processing, 30 days once done', async () => {
    const store = newRedisStore();
    const event = paymentEvent();
    const claim = (await store.claim(event, 60_000))!;
    const leaseTtl = await redis.pttl(store.eventKey(event.id));
    expect(leaseTtl).toBeGreaterThan(50_000);
    expect(leaseTtl).toBeLessThanOrEqual(60_000);
    await store.complete(claim);
    expect(await redis.get(store.eventKey(event.id))).toBe('done');
    const doneTtl = await redis.pttl(store.eventKey(event.id));
    expect(doneTtl).toBeGreaterThan(30 * 24 * 3600 * 1000 - 60_000);
  });

  it('spec 8: when every attempt fails the key is deleted, so a replay is processed', async () => {
    const store = newRedisStore();
    let fail = true;
    const processed: string[] = [];
    const { handler, errors } = handlerFor(store, {
      retryDelaysMs: [5],
      onEvent: (e) => {
        if (fail) throw new Error('nope');
        processed.push(e.id);
      },
    });
    const event = paymentEvent();
    await handler.handle(delivery(event));
    await until(() => errors.length === 2, { interval: 10, message: 'two errors reported' });
    await until(async () => (await redis.exists(store.eventKey(event.id))) === 0, { interval: 10, message: 'the key to be deleted' });
    fail = false;
    expect(JSON.parse((await handler.handle(delivery(event))).body)).toEqual({ received: true });
    await handler.drain();
    expect(processed).toEqual([event.id]);
  });
});

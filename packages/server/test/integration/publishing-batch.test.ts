import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_MAX_BYTES } from '@payhooks/contract';
import { startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { checkoutSession, payment } from '../helpers/publish.ts';
import { publishEvent, publishEvents } from '../../src/events/publish.ts';
import { AppError } from '../../src/errors.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';

/**
 * Issue 23 item 5: publishing over the network is cheap. Concurrent `POST /internal/v1/events`
 * share statements (each keeps its own outcome), `POST /internal/v1/events/batch` publishes up
 * to 100 events in one transaction with a result each, and `publishEvents` does the same for
 * in-process code inside its own transaction.
 */
const TOKEN = 'batch-internal-token-0123456789abcdef01234';
let svc: TestService;
let p: CreatedPlatform;
let receiver: TestReceiver;
let worker: DeliveryWorker;
let subscribed: string[];

const count = async (sql: string, params: unknown[] = []) =>
  Number((await svc.ctx.database.query<{ n: string }>(`SELECT count(*) AS n FROM ${sql}`, params))[0]!.n);

const event = (over: Record<string, unknown> = {}) => ({
  type: 'payment.succeeded',
  merchant_id: p.merchant_id,
  environment: 'sandbox',
  data: { object: payment() },
  ...over,
});
const post = (path: string, body: unknown) => svc.api(TOKEN as never, 'POST', `/internal/v1${path}`, body);

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true, internalToken: TOKEN });
  p = await svc.platform();
  receiver = await startReceiver();
  subscribed = [];
  for (const events of [['*'], ['payment.succeeded'], ['checkout_session.completed']]) {
    const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url: receiver.url, enabled_events: events });
    subscribed.push(r.body.id);
  }
  worker = svc.ctx.createWorker();
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

describe('POST /internal/v1/events/batch', () => {
  it('spec 2.1: publishes each event with its own result, in order: published, refused for its merchant or its object, replayed for a key used earlier in the batch', async () => {
    const first = event({ idempotency_key: 'batch-1' });
    const r = await post('/events/batch', {
      events: [
        first,
        event({ merchant_id: 'mch_nope', idempotency_key: 'batch-2' }),
        event({ data: { object: payment({ status: 'failed' }) }, idempotency_key: 'batch-3' }),
        event({ type: 'checkout_session.completed', data: { object: checkoutSession() }, idempotency_key: 'batch-4' }),
        event({ idempotency_key: 'batch-1', data: { object: payment() } }),
      ],
    });
    expect(r.status).toBe(200);
    expect(r.body.object).toBe('list');
    const [ok, noMerchant, badObject, session, again] = r.body.data;
    expect(ok).toMatchObject({ status: 201, idempotent_replayed: false, event: { type: 'payment.succeeded', data: first.data } });
    expect(noMerchant).toEqual({
      status: 400,
      error: { type: 'invalid_request_error', code: 'resource_missing', message: "No such merchant: 'mch_nope'.", param: 'merchant_id' },
    });
    expect(badObject).toMatchObject({ status: 400, error: { code: 'parameter_invalid', param: 'data.object.status' } });
    expect(session).toMatchObject({ status: 201, idempotent_replayed: false, event: { type: 'checkout_session.completed' } });
    // The same key later in the batch: the first event, nothing written for it.
    expect(again).toEqual({ status: 201, idempotent_replayed: true, event: ok.event });

    // Stored byte for byte as answered, and fanned out like publishEvent: payment.succeeded to the
    // `*` and payment.succeeded endpoints, checkout_session.completed to `*` and its own.
    const [stored] = await svc.ctx.database.query<{ body: string }>('SELECT body FROM events WHERE id = $1', [ok.event.id]);
    expect(stored!.body).toBe(JSON.stringify(ok.event));
    const fan = async (id: string) =>
      (await svc.ctx.database.query<{ endpoint_id: string }>('SELECT endpoint_id FROM delivery_queue WHERE event_id = $1', [id]))
        .map((x) => x.endpoint_id)
        .sort();
    expect(await fan(ok.event.id)).toEqual([subscribed[0], subscribed[1]].sort());
    expect(await fan(session.event.id)).toEqual([subscribed[0], subscribed[2]].sort());
    expect(await count('events WHERE platform_id = $1', [p.platform_id])).toBe(2);

    // Sent again (an answer lost on the way): every event replayed, nothing new written.
    const retry = await post('/events/batch', {
      events: [first, event({ idempotency_key: 'batch-4', type: 'checkout_session.completed', data: { object: checkoutSession() } })],
    });
    expect(retry.body.data.map((d: any) => [d.idempotent_replayed, d.event.id])).toEqual([
      [true, ok.event.id],
      [true, session.event.id],
    ]);
    expect(await count('events WHERE platform_id = $1', [p.platform_id])).toBe(2);

    // And the worker delivers them.
    await worker.drain();
    const ids = new Set(receiver.requests.map((q) => JSON.parse(q.raw.toString()).id));
    expect(ids.has(ok.event.id) && ids.has(session.event.id)).toBe(true);
  });

  it('a malformed batch is refused whole, naming the event: an unknown type, a missing idempotency_key, more than 100 events, an empty list', async () => {
    const before = await count('events');
    const unknown = await post('/events/batch', {
      events: [event({ idempotency_key: 'm1' }), event({ type: 'payment.refunded', idempotency_key: 'm2' })],
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toMatchObject({ code: 'event_type_unknown', param: 'events[1][type]' });
    const noKey = await post('/events/batch', { events: [event()] });
    expect(noKey.body.error).toMatchObject({ code: 'parameter_missing', param: 'events[0][idempotency_key]' });
    const tooMany = await post('/events/batch', { events: Array.from({ length: 101 }, (_, i) => event({ idempotency_key: `t${i}` })) });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error.param).toBe('events');
    expect((await post('/events/batch', { events: [] })).status).toBe(400);
    expect(await count('events')).toBe(before);
  });

  it('a hundred events in one request', async () => {
    const r = await post('/events/batch', { events: Array.from({ length: 100 }, (_, i) => event({ idempotency_key: `hundred-${i}` })) });
    expect(r.status).toBe(200);
    expect(r.body.data.filter((d: any) => d.status === 201 && !d.idempotent_replayed)).toHaveLength(100);
    expect(await count(`delivery_queue q JOIN events e ON e.id = q.event_id WHERE e.idempotency_key LIKE 'hundred-%'`)).toBe(200);
  });
});

describe('one size limit for an event, however it is published', () => {
  // A Payment whose envelope is `bytes` long once serialised, measured on a published one.
  let base = 0;
  const sized = async (bytes: number) => {
    if (base === 0) {
      const r = await post('/events', event({ data: { object: payment({ id: 'pay_size', metadata: { note: '' } }) } }));
      base = JSON.stringify(r.body).length;
    }
    return payment({ id: 'pay_size', metadata: { note: 'x'.repeat(bytes - base) } });
  };
  const tooLarge = (label: string | undefined) => ({
    type: 'invalid_request_error',
    code: 'body_too_large',
    message: expect.stringMatching(
      new RegExp(
        `^${label ? `Event ${label.replace(/[[\]]/g, '\\$&')}` : 'The event'} is \\d+ bytes once serialised; an event is at most ${EVENT_MAX_BYTES} bytes`,
      ),
    ),
    param: label ? `${label}[data][object]` : 'data.object',
  });

  it('POST /internal/v1/events: an event of exactly the limit is published, one byte more is refused with 413 body_too_large; a 2 MB one with 413 too', async () => {
    const fits = await post('/events', event({ data: { object: await sized(EVENT_MAX_BYTES) } }));
    expect(fits.status).toBe(201);
    expect(Buffer.byteLength(JSON.stringify(fits.body))).toBe(EVENT_MAX_BYTES);
    const over = await post('/events', event({ data: { object: await sized(EVENT_MAX_BYTES + 1) } }));
    expect(over.status).toBe(413);
    expect(over.body.error).toEqual(tooLarge(undefined));
    const huge = await post('/events', event({ data: { object: await sized(2_000_000) } }));
    expect(huge.status).toBe(413);
  });

  it('POST /internal/v1/events/batch: a 1.5 MB event and one a byte over the limit each get 413 body_too_large naming their index; the others are published', async () => {
    const before = await count('events');
    const r = await post('/events/batch', {
      events: [
        event({ idempotency_key: 'size-1' }),
        event({ idempotency_key: 'size-2', data: { object: await sized(1_500_000) } }),
        event({ idempotency_key: 'size-3', data: { object: await sized(EVENT_MAX_BYTES + 1) } }),
        event({ idempotency_key: 'size-4', data: { object: await sized(EVENT_MAX_BYTES) } }),
      ],
    });
    expect(r.status).toBe(200);
    expect(r.body.data.map((d: any) => d.status)).toEqual([201, 413, 413, 201]);
    expect(r.body.data[1].error).toEqual(tooLarge('events[1]'));
    expect(r.body.data[2].error).toEqual(tooLarge('events[2]'));
    expect(await count('events')).toBe(before + 2);
  });

  it('publishEvent and publishEvents (in process) refuse it the same way', async () => {
    const input = {
      type: 'payment.succeeded',
      merchantId: p.merchant_id,
      environment: 'sandbox' as const,
      object: await sized(EVENT_MAX_BYTES + 1),
    };
    const before = await count('events');
    const single = await svc.ctx.database.db.transaction((tx) => publishEvent(tx, input, svc.ctx.clock.now())).catch((e) => e);
    expect(single).toBeInstanceOf(AppError);
    expect([single.status, single.toBody().error]).toEqual([413, tooLarge(undefined)]);
    const out = await svc.ctx.database.db.transaction((tx) =>
      publishEvents(tx, [{ ...input, object: payment() }, input], svc.ctx.clock.now()),
    );
    expect(out[0]!.ok).toBe(true);
    expect(out[1]!.ok ? 0 : [out[1]!.error.status, out[1]!.error.code]).toEqual([413, 'body_too_large']);
    expect(await count('events')).toBe(before + 1);
  });
});

describe('POST /internal/v1/events under concurrency (requests share statements)', () => {
  it('thirty concurrent publishes: each its own event and answer; ten with one idempotency_key: one event, the other nine replayed', async () => {
    const distinct = Array.from({ length: 30 }, (_, i) => event({ data: { object: payment({ id: `pay_conc${i}` }) } }));
    const same = Array.from({ length: 10 }, () => event({ idempotency_key: 'conc-same', data: { object: payment({ id: 'pay_same' }) } }));
    const answers = await Promise.all([...distinct, ...same].map((b) => post('/events', b)));
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 201));
    const ids = answers.slice(0, 30).map((a) => a.body.id);
    expect(new Set(ids).size).toBe(30);
    answers.slice(0, 30).forEach((a, i) => {
      expect(a.body.data.object.id).toBe(`pay_conc${i}`);
    });
    const sameIds = new Set(answers.slice(30).map((a) => a.body.id));
    expect(sameIds.size).toBe(1);
    expect(answers.slice(30).filter((a) => a.headers.get('idempotent-replayed') === 'true')).toHaveLength(9);
    expect(await count(`events WHERE idempotency_key = 'conc-same'`)).toBe(1);
    for (const id of [...ids, ...sameIds])
      expect(await count('webhook_deliveries WHERE event_id = $1', [id]), `deliveries of ${id}`).toBe(2);
  });

  it('one refused request among concurrent ones fails alone', async () => {
    const answers = await Promise.all([
      post('/events', event()),
      post('/events', event({ merchant_id: 'mch_missing' })),
      post('/events', event({ data: { object: payment({ amount: 'ten' }) } })),
      post('/events', event()),
    ]);
    expect(answers.map((a) => a.status)).toEqual([201, 400, 400, 201]);
    expect(answers[1]!.body.error.param).toBe('merchant_id');
    expect(answers[2]!.body.error.param).toBe('data.object.amount');
  });
});

describe('publishEvents (in-process, inside the caller transaction)', () => {
  it('writes nothing when the caller rolls back, and everything when it commits', async () => {
    const before = await count('events');
    await expect(
      svc.ctx.database.db.transaction(async (tx) => {
        const out = await publishEvents(
          tx,
          [0, 1, 2].map(() => ({
            type: 'payment.succeeded',
            merchantId: p.merchant_id,
            environment: 'sandbox' as const,
            object: payment(),
          })),
          svc.ctx.clock.now(),
        );
        expect(out.every((o) => o.ok)).toBe(true);
        throw new Error('the payment write failed');
      }),
    ).rejects.toThrow('the payment write failed');
    expect(await count('events')).toBe(before);
    const out = await svc.ctx.database.db.transaction((tx) =>
      publishEvents(
        tx,
        [{ type: 'payment.succeeded', merchantId: p.merchant_id, environment: 'sandbox', object: payment() }],
        svc.ctx.clock.now(),
      ),
    );
    expect(out[0]).toMatchObject({ ok: true, result: { deliveries: 2, replayed: false } });
    expect(await count('events')).toBe(before + 1);
  });
});

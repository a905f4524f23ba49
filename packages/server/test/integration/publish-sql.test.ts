import fc from 'fast-check';
import { sql } from 'drizzle-orm';
import { EVENT_MAX_BYTES, EVENT_TYPES } from '@payhooks/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { checkoutSession, payment } from '../helpers/publish.ts';
import { buildEnvelope } from '../../src/events/envelope.ts';
import { WAKE_CHANNEL } from '../../src/delivery/wake-channel.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';
import { until } from '../helpers/wait.ts';
import { weekStart } from '../../src/db/retention.ts';
import { publishEvent } from '../../src/events/publish.ts';

/**
 * Issue 23 item 5: the outbox as a SQL function for payment cores in any language,
 * `payhooks.publish_event(type, merchant_id, environment, data_object, idempotency_key)` in the
 * caller's own transaction. It must build the bytes the HTTP path builds, refuse what it refuses
 * (same code, param and message), fan out to the same endpoints, honour the same idempotency keys,
 * and wake the workers when the caller commits. (publish-sql.postgres.test.ts: from psql.)
 */
const TOKEN = 'sql-internal-token-0123456789abcdef0123456';
let svc: TestService;
let p: CreatedPlatform;
let receiver: TestReceiver;
let worker: DeliveryWorker;

interface Published {
  id: string;
  body: string;
  deliveries: number;
  replayed: boolean;
}
interface Refused {
  sqlstate: string;
  message: string;
  code: string;
  param: string | undefined;
}

/** `SELECT * FROM payhooks.publish_event(…)` with `objectText` as the json argument. */
async function publishSql(
  args: { type?: string | null; merchant_id?: string | null; environment?: string | null; idempotency_key?: string | null },
  objectText: string | null,
): Promise<{ ok: Published } | { refused: Refused }> {
  try {
    const [row] = await svc.ctx.database.query<Published>('SELECT * FROM payhooks.publish_event($1, $2, $3, $4::json, $5)', [
      args.type === undefined ? 'payment.succeeded' : args.type,
      args.merchant_id === undefined ? p.merchant_id : args.merchant_id,
      args.environment === undefined ? 'sandbox' : args.environment,
      objectText,
      args.idempotency_key ?? null,
    ]);
    return { ok: { ...row!, deliveries: Number(row!.deliveries) } };
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string; detail?: string } }).cause ?? {};
    const detail = cause.detail ? (JSON.parse(cause.detail) as { code: string; param?: string }) : { code: '' };
    return { refused: { sqlstate: String(cause.code), message: String(cause.message), code: detail.code, param: detail.param } };
  }
}

/** The same event through POST /internal/v1/events, its body written as raw text. */
async function publishHttp(
  args: { type?: string | null; merchant_id?: string | null; environment?: string | null; idempotency_key?: string | null },
  objectText: string,
) {
  const fields: string[] = [];
  const add = (name: string, value: string | null | undefined, dflt: string | null) => {
    const v = value === undefined ? dflt : value;
    if (v !== null) fields.push(`${JSON.stringify(name)}:${JSON.stringify(v)}`);
  };
  add('type', args.type, 'payment.succeeded');
  add('merchant_id', args.merchant_id, p.merchant_id);
  add('environment', args.environment, 'sandbox');
  add('idempotency_key', args.idempotency_key, null);
  fields.push(`"data":{"object":${objectText}}`);
  return svc.api(TOKEN as never, 'POST', '/internal/v1/events', `{${fields.join(',')}}`);
}

const text = (o: unknown) => JSON.stringify(o);

beforeAll(async () => {
  // Workers poll once an hour: only the function's NOTIFY can make one deliver in time.
  svc = await startService({ allowPrivateUrls: true, internalToken: TOKEN, pollIntervalMs: 3_600_000 });
  p = await svc.platform();
  receiver = await startReceiver();
  worker = svc.ctx.createWorker();
  await worker.start();
});
afterAll(async () => {
  await worker?.stop();
  await receiver?.close();
  await svc?.close();
});

describe('payhooks.publish_event', () => {
  it('the catalog it checks is the contract catalog (a type added to @payhooks/contract needs a migration adding it)', async () => {
    const rows = await svc.ctx.database.query<{ type: string }>('SELECT type FROM payhooks.event_types ORDER BY position', []);
    expect(rows.map((r) => r.type)).toEqual([...EVENT_TYPES]);
  });

  it('spec 2.1: builds the envelope byte for byte as the HTTP path does: key order, duplicate keys, numbers, escapes, Unicode', async () => {
    const objects = [
      text(payment()),
      // JavaScript's key order: array-index keys first, ascending; a repeated key keeps its first place and its last value.
      `{"id":"pay_order","object":"payment","status":"succeeded","amount":"1.00","asset_code":"USDC.ETH","metadata":{"b":"1","10":"x","a":"2","2":"y","01":"z","-1":"w","4294967294":"i","4294967295":"j","b":"3"}}`,
      `{ "id" : "pay_numbers", "object":"payment","status":"succeeded","amount":"1.00","asset_code":"USDC.ETH",
         "metadata": {}, "n": [1.50, 1E2, -0.0, 0.1, 1e21, 1e-7, 123456789012345678901, 5e-324, 1.7976931348623157e308, 1e400, -1e400, 1e-400, 0.000001, 1e+15, 12e-8] }`,
      `{"id":"pay_text","object":"payment","status":"succeeded","amount":"1.00","asset_code":"USDC.ETH","metadata":{},
        "s":["quote \\" backslash \\\\ slash \\/ tab\\t nl\\n cr\\r bs\\b ff\\f", "\\u0001\\u001f\\u007f", "é 中 😀 \\ud83d\\ude00", "\\u2028\\u2029", "\\u00e9"],
        "nested":{"a":[{},[],{"b":null,"c":true,"d":false}]}}`,
    ];
    for (const objectText of objects) {
      const r = await publishSql({}, objectText);
      if (!('ok' in r)) throw new Error(`refused: ${JSON.stringify(r.refused)}`);
      const createdAt = new Date(JSON.parse(r.ok.body).created_at);
      const expected = buildEnvelope(
        r.ok.id,
        { type: 'payment.succeeded', merchantId: p.merchant_id, environment: 'sandbox', object: JSON.parse(objectText) },
        createdAt,
      ).body;
      expect(r.ok.body).toBe(expected);
      // And what the HTTP path stored for the same request text.
      const http = await publishHttp({}, objectText);
      expect(http.status).toBe(201);
      const [stored] = await svc.ctx.database.query<{ body: string }>('SELECT body FROM events WHERE id = $1', [http.body.id]);
      expect(JSON.parse(stored!.body).data).toEqual(JSON.parse(r.ok.body).data);
      expect(stored!.body.replace(/"id":"evt_\w+"/, '').replace(/"created_at":"[^"]+"/, '')).toBe(
        r.ok.body.replace(/"id":"evt_\w+"/, '').replace(/"created_at":"[^"]+"/, ''),
      );
    }
  });

  it('writes any JSON value and any number as JSON.stringify(JSON.parse(text)) does (property)', async () => {
    // Left out: strings holding NUL (the documented difference) and the keys both paths refuse
    // (__proto__, constructor.prototype), which the refusal test covers.
    const noNul = (t: string) => !t.includes('\\u0000') && !/"(__proto__|constructor)"/.test(t);
    const values = fc
      .sample(fc.jsonValue({ maxDepth: 6 }), 300)
      .map((v) => JSON.stringify(v))
      .filter(noNul);
    const unicode = fc
      .sample(fc.dictionary(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' })), 100)
      .map((v) => JSON.stringify(v))
      .filter(noNul);
    const texts = [...values, ...unicode];
    const rows = await svc.ctx.database.query<{ out: string }>(
      "SELECT payhooks.js_json(t::json, ARRAY['data', '.object']) AS out FROM unnest($1::text[]) WITH ORDINALITY AS u(t, n) ORDER BY n",
      [texts],
    );
    expect(rows.map((r) => r.out)).toEqual(texts.map((t) => JSON.stringify(JSON.parse(t))));
    // Numbers written every way JSON allows.
    const doubles = fc.sample(fc.double({ noNaN: true, noDefaultInfinity: true }), 400);
    const literals = doubles.flatMap((d) => [String(d), d.toExponential(), d.toPrecision(17), d.toExponential(3).toUpperCase()]);
    const nums = await svc.ctx.database.query<{ out: string }>(
      'SELECT payhooks.js_number(t) AS out FROM unnest($1::text[]) WITH ORDINALITY AS u(t, n) ORDER BY n',
      [literals],
    );
    expect(nums.map((r) => r.out)).toEqual(literals.map((l) => JSON.stringify(JSON.parse(l))));
  });

  it('refuses what POST /internal/v1/events refuses, with the same code, param and message (SQLSTATE 22023)', async () => {
    const pay = (over: Record<string, unknown>) => text({ ...payment(), ...over });
    const deep = `${'{"a":'.repeat(70)}1${'}'.repeat(70)}`;
    const cases: Array<[string, Parameters<typeof publishSql>[0], string]> = [
      ['unknown type', { type: 'payment.refunded' }, pay({})],
      ['no type', { type: null }, pay({})],
      ['environment', { environment: 'prod' }, pay({})],
      ['empty merchant', { merchant_id: '' }, pay({})],
      ['long merchant', { merchant_id: 'm'.repeat(65) }, pay({})],
      ['unknown merchant', { merchant_id: 'mch_nope' }, pay({})],
      ['long key', { idempotency_key: 'k'.repeat(256) }, pay({})],
      ['empty key', { idempotency_key: '' }, pay({})],
      ['object not an object', {}, '[1]'],
      ['payment status', { type: 'payment.failed' }, pay({ status: 'succeeded' })],
      ['payment status missing', {}, pay({ status: undefined })],
      ['payment amount', {}, pay({ amount: 10 })],
      ['payment asset', {}, pay({ asset_code: 'usdc.eth' })],
      ['payment metadata', {}, pay({ metadata: undefined })],
      ['payment metadata array', {}, pay({ metadata: [] })],
      ['payment id', {}, pay({ id: 'x_1' })],
      ['payment object', {}, pay({ object: 'charge' })],
      ['session completed_at', { type: 'checkout_session.completed' }, text(checkoutSession({ completed_at: null }))],
      ['session metadata', { type: 'checkout_session.completed' }, text(checkoutSession({ metadata: { a: 1 } }))],
      ['session url', { type: 'checkout_session.completed' }, text(checkoutSession({ url: undefined }))],
      ['session status', { type: 'checkout_session.expired' }, text(checkoutSession())],
      ['session expires_at', { type: 'checkout_session.expired' }, text(checkoutSession({ status: 'expired', expires_at: 'soon' }))],
      ['endpoint status', { type: 'webhook_endpoint.disabled' }, text({ id: 'we_1', object: 'webhook_endpoint', status: 'enabled' })],
      ['endpoint id', { type: 'webhook_endpoint.disabled' }, text({ id: 'x', object: 'webhook_endpoint', status: 'disabled' })],
      ['a secret', {}, pay({ secret: 'whsec_x' })],
      ['a __proto__ key', {}, '{"__proto__":{"x":1},"id":"pay_1"}'],
      ['a constructor.prototype', {}, '{"constructor":{"prototype":{}},"id":"pay_1"}'],
      ['nested too deep', {}, pay({ metadata: {} }).replace(/}$/, `,"deep":${deep}}`)],
      ['over the event size limit', {}, pay({ metadata: { note: 'x'.repeat(EVENT_MAX_BYTES) } })],
    ];
    for (const [what, args, objectText] of cases) {
      const http = await publishHttp(args, objectText);
      expect(http.status, what).toBe(what === 'over the event size limit' ? 413 : 400);
      const r = await publishSql(args, objectText);
      expect('refused' in r, `${what}: the function published it`).toBe(true);
      const refused = (r as { refused: Refused }).refused;
      expect({ what, sqlstate: refused.sqlstate, code: refused.code, param: refused.param, message: refused.message }).toEqual({
        what,
        sqlstate: '22023',
        code: http.body.error.code,
        param: http.body.error.param,
        message: http.body.error.message,
      });
    }
    // The one difference (README): a string holding NUL (\u0000), which PostgreSQL text can't
    // hold. The HTTP path stores it escaped; the function refuses it rather than write other bytes.
    const nul = await publishSql({}, pay({ metadata: { a: 'x\u0000y' } }));
    expect(nul).toMatchObject({ refused: { sqlstate: '22023', code: 'invalid_characters' } });
  });

  it("holds an event to the HTTP routes' size limit: exactly EVENT_MAX_BYTES once serialised is published, one byte more is refused as body_too_large", async () => {
    const sized = (note: string) => text(payment({ id: 'pay_sqlsize', metadata: { note } }));
    const small = await publishSql({}, sized(''));
    if (!('ok' in small)) throw new Error(`refused: ${JSON.stringify(small.refused)}`);
    const fill = EVENT_MAX_BYTES - Buffer.byteLength(small.ok.body);
    const fits = await publishSql({}, sized('x'.repeat(fill)));
    expect('ok' in fits && Buffer.byteLength(fits.ok.body)).toBe(EVENT_MAX_BYTES);
    expect(await publishSql({}, sized('x'.repeat(fill + 1)))).toMatchObject({ refused: { sqlstate: '22023', code: 'body_too_large' } });
    expect((await publishHttp({}, sized('x'.repeat(fill + 1)))).body.error.code).toBe('body_too_large');
  });

  it("a fan-out wider than the session's last one (and than the 16 ids it makes ahead) is written whole, in one transaction, with the key or without", async () => {
    const q = await svc.platform('sql-wide-fan-out');
    const endpoints: string[] = [];
    for (let i = 0; i < 18; i++)
      endpoints.push(
        (await svc.api(q.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url: receiver.url, enabled_events: ['*'] })).body
          .id as string,
      );
    // One session: the first publish finds the hint of 1 too small, the second the cap of 16.
    const published = await svc.ctx.database.db.transaction(async (tx) => {
      const call = async (key: string | null) =>
        (
          (await tx.execute(
            sql`SELECT id, deliveries FROM payhooks.publish_event('payment.succeeded', ${q.merchant_id}, 'sandbox', ${text(payment())}::json, ${key})`,
          )) as unknown as { rows: { id: string; deliveries: number }[] }
        ).rows[0]!;
      return [await call(null), await call(null), await call('wide-key-1')];
    });
    for (const event of published) {
      expect(event.deliveries).toBe(18);
      const rows = await svc.ctx.database.query<{ endpoint_id: string; queued: number }>(
        `SELECT d.endpoint_id, (SELECT count(*) FROM delivery_queue q WHERE q.delivery_id = d.id) AS queued
         FROM webhook_deliveries d WHERE d.event_id = $1 ORDER BY d.endpoint_id`,
        [event.id],
      );
      expect(rows.map((r) => r.endpoint_id)).toEqual([...endpoints].sort());
      expect(rows.every((r) => r.queued === 1)).toBe(true);
    }
  });

  it('fans out to the endpoints the HTTP path fans out to: enabled, undeleted, same Platform and environment, subscribed to the type or *', async () => {
    const q = await svc.platform('sql-fan-out');
    const make = async (key: string, events: string[]) =>
      (await svc.api(key, 'POST', '/api/v1/webhook_endpoints', { url: receiver.url, enabled_events: events })).body.id as string;
    const exact = await make(q.keys.sandbox, ['payment.succeeded']);
    const wildcard = await make(q.keys.sandbox, ['*']);
    await make(q.keys.sandbox, ['payment.failed']);
    const disabled = await make(q.keys.sandbox, ['*']);
    await svc.api(q.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${disabled}`, { status: 'disabled' });
    const deleted = await make(q.keys.sandbox, ['*']);
    await svc.api(q.keys.sandbox, 'DELETE', `/api/v1/webhook_endpoints/${deleted}`);
    await make(p.keys.sandbox, ['*']); // another Platform
    const fan = async (id: string) =>
      (
        await svc.ctx.database.query<{ endpoint_id: string }>(
          'SELECT endpoint_id FROM webhook_deliveries WHERE event_id = $1 ORDER BY endpoint_id',
          [id],
        )
      ).map((r) => r.endpoint_id);
    const r = await publishSql({ merchant_id: q.merchant_id }, text(payment()));
    const http = await publishHttp({ merchant_id: q.merchant_id }, text(payment()));
    if (!('ok' in r)) throw new Error(JSON.stringify(r));
    expect(r.ok.deliveries).toBe(2);
    const viaSql = await fan(r.ok.id);
    expect(viaSql).toEqual([exact, wildcard].sort());
    expect(await fan(http.body.id)).toEqual(viaSql);
    // Queued like any delivery: the worker claims both and the receiver gets them.
    const eventId = r.ok.id;
    await until(() => receiver.requests.filter((x) => JSON.parse(x.raw.toString()).id === eventId).length >= 2, {
      interval: 20,
      message: 'the deliveries of the event published through SQL',
    });
    const ids = await svc.ctx.database.query<{ id: string }>('SELECT id FROM webhook_deliveries WHERE event_id = $1', [r.ok.id]);
    for (const { id } of ids) expect(id).toMatch(/^whd_[0-9A-Za-z]{24}$/);
    expect(r.ok.id).toMatch(/^evt_[0-9A-Za-z]{24}$/);
  });

  it('honours idempotency keys, shared with the HTTP path: the first event comes back, nothing is written', async () => {
    const http = await publishHttp({ idempotency_key: 'pay_77:succeeded' }, text(payment({ id: 'pay_77' })));
    expect(http.status).toBe(201);
    const again = await publishSql({ idempotency_key: 'pay_77:succeeded' }, text(payment({ id: 'pay_77' })));
    expect(again).toEqual({ ok: { id: http.body.id, body: JSON.stringify(http.body), deliveries: 0, replayed: true } });
    const first = await publishSql({ idempotency_key: 'sql-key' }, text(payment()));
    const second = await publishSql({ idempotency_key: 'sql-key' }, text(payment()));
    expect(second).toMatchObject({ ok: { id: (first as { ok: Published }).ok.id, replayed: true, deliveries: 0 } });
    const viaHttp = await publishHttp({ idempotency_key: 'sql-key' }, text(payment()));
    expect(viaHttp.headers.get('idempotent-replayed')).toBe('true');
    expect(viaHttp.body.id).toBe((first as { ok: Published }).ok.id);
  });

  it('holds a key for the same window: last used in the previous week it replays; two weeks ago (its guard row last week) it makes a new event, which replays answer', async () => {
    // The function reads the database's clock: the earlier uses are published by publishEvent
    // at times before it, for a Platform with no endpoints (nothing to deliver).
    const other = await svc.platform('SQL key window');
    const DAY = 86_400_000;
    const week = weekStart(new Date()).getTime();
    const publishAt = (key: string, at: number) =>
      svc.ctx.database.db.transaction((tx) =>
        publishEvent(
          tx,
          { type: 'payment.succeeded', merchantId: other.merchant_id, environment: 'sandbox', object: payment(), idempotencyKey: key },
          new Date(at),
        ),
      );
    const sqlPublish = (key: string) =>
      svc.ctx.database.query<Published>('SELECT * FROM payhooks.publish_event($1, $2, $3, $4::json, $5)', [
        'payment.succeeded',
        other.merchant_id,
        'sandbox',
        text(payment()),
        key,
      ]);

    const lastWeek = await publishAt('sql-last-week', week - 3 * DAY);
    expect(await sqlPublish('sql-last-week')).toMatchObject([{ id: lastWeek.event.id, replayed: true }]);

    // Sunday of the week before last, 01:00: its main row then, its guard row in the previous week.
    const old = await publishAt('sql-two-weeks', week - 8 * DAY + 3_600_000);
    const [fresh] = await sqlPublish('sql-two-weeks');
    expect(fresh).toMatchObject({ replayed: false });
    expect(fresh!.id).not.toBe(old.event.id);
    const replays = await sqlPublish('sql-two-weeks');
    expect(replays).toMatchObject([{ id: fresh!.id, replayed: true }]);
    expect(replays).toHaveLength(1);
  });

  it("is part of the caller's transaction: rolled back with it, and workers woken only once it commits", async () => {
    const endpoint = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url: `${receiver.url}/sql`,
      enabled_events: ['*'],
    });
    expect(endpoint.status).toBe(201);
    let wakes = 0;
    const unlisten = await svc.ctx.database.listen(WAKE_CHANNEL, () => void wakes++);
    try {
      const call = (id: string) =>
        sql`SELECT id FROM payhooks.publish_event('payment.succeeded', ${p.merchant_id}, 'sandbox', ${text(payment({ id }))}::json)`;
      await expect(
        svc.ctx.database.db.transaction(async (tx) => {
          await tx.execute(call('pay_rolled_back'));
          throw new Error('the payment update failed');
        }),
      ).rejects.toThrow('the payment update failed');
      expect(await svc.ctx.database.query(`SELECT id FROM events WHERE body LIKE '%pay_rolled_back%'`, [])).toEqual([]);

      const before = wakes;
      const id = await svc.ctx.database.db.transaction(async (tx) => {
        const r = (await tx.execute(call('pay_committed'))) as unknown as { rows: { id: string }[] };
        return r.rows[0]!.id;
      });
      // Woken by the commit (workers poll once an hour here), and delivered.
      await until(() => receiver.requests.some((q) => q.path === '/webhooks/sql' && JSON.parse(q.raw.toString()).id === id), {
        interval: 20,
        message: 'the event published through SQL to be delivered',
      });
      expect(wakes).toBeGreaterThan(before);
    } finally {
      await unlisten();
    }
  });
});

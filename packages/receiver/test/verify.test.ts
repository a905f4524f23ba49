import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { computeSignature, signPayload } from '@payhooks/contract';
import {
  WebhookVerificationError,
  verifyWebhook,
  verifyWebhookAsync,
  type VerifyWebhookOptions,
  type WebhookEvent,
  type WebhookVerificationReason,
} from '../src/index.ts';
import { verifyWebhookAsync as verifyFromFetchEntry } from '../src/fetch.ts';
import { OTHER_SECRET, SECRET, delivery, nowSeconds, paymentEvent } from './helpers/events.ts';

/** Both verification paths must behave identically: node:crypto (sync) and WebCrypto (async). */
const paths: Array<[string, (o: VerifyWebhookOptions) => Promise<WebhookEvent>]> = [
  ['node:crypto', async (o) => verifyWebhook(o)],
  ['WebCrypto', (o) => verifyWebhookAsync(o)],
  ['WebCrypto (fetch entry)', (o) => verifyFromFetchEntry(o)],
];

async function reason(promise: Promise<unknown>): Promise<WebhookVerificationReason> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(WebhookVerificationError);
    expect((error as WebhookVerificationError).status).toBe(400);
    return (error as WebhookVerificationError).reason;
  }
  throw new Error('expected the delivery to be rejected');
}

function independentSignature(secret: string, t: number, body: string | Buffer): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8'))
    .update(Buffer.concat([Buffer.from(`${t}.`, 'utf8'), Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8')]))
    .digest('hex');
}

describe.each(paths)('verifyWebhook via %s', (_name, verify) => {
  it('spec 5.1.3: a delivery signed by the server signing code (contract signPayload) verifies and yields the event', async () => {
    const event = paymentEvent();
    const d = delivery(event);
    expect(await verify({ body: d.body, headers: d.headers, secret: SECRET })).toEqual(event);
  });

  it('spec 5.1.3: a signature computed independently (HMAC-SHA256 over "<t>.<raw body>", hex) verifies', async () => {
    const event = paymentEvent();
    const body = JSON.stringify(event);
    const t = nowSeconds();
    const v1 = independentSignature(SECRET, t, body);
    expect(v1).toBe(computeSignature(SECRET, t, body)); // the server's code computes the same value
    const headers = { 'Service-Signature': `t=${t},v1=${v1}`, 'Service-Event-Id': event.id };
    expect(await verify({ body, headers, secret: SECRET })).toEqual(event);
  });

  it('spec 5.1.4: the raw bytes are verified as Buffer, Uint8Array, ArrayBuffer or string (non-ASCII metadata)', async () => {
    const event = paymentEvent({}, { metadata: { name: 'Zoë 🚀', lookup: '√2' } });
    const d = delivery(event);
    const buf = Buffer.from(d.body, 'utf8');
    for (const body of [buf, new Uint8Array(buf), buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length), d.body]) {
      expect((await verify({ body, headers: d.headers, secret: SECRET })).id).toBe(event.id);
    }
  });

  it('spec 5.1.4: rejects a tampered body (bad_signature)', async () => {
    const event = paymentEvent();
    const d = delivery(event);
    const tampered = d.body.replace('"10.00"', '"99.00"');
    expect(tampered).not.toBe(d.body);
    expect(await reason(verify({ body: tampered, headers: d.headers, secret: SECRET }))).toBe('bad_signature');
  });

  it('spec 5.1.4: rejects re-serialised JSON (bad_signature), the bytes the sender signed are what counts', async () => {
    const event = paymentEvent();
    const d = delivery(event);
    const reserialised = [JSON.stringify(JSON.parse(d.body), null, 2), `${JSON.stringify(JSON.parse(d.body))}\n`];
    for (const body of reserialised) {
      expect(await reason(verify({ body, headers: d.headers, secret: SECRET }))).toBe('bad_signature');
    }
    // Key order differs from the sender's serialisation: same JSON value, other bytes.
    const { id, ...rest } = event;
    const reordered = JSON.stringify({ ...rest, id });
    expect(await reason(verify({ body: reordered, headers: d.headers, secret: SECRET }))).toBe('bad_signature');
  });

  it('spec 5.1.4: refuses an already-parsed body with a TypeError that says how to fix it', async () => {
    const d = delivery(paymentEvent());
    await expect(verify({ body: JSON.parse(d.body), headers: d.headers, secret: SECRET })).rejects.toThrow(/already parsed.*raw/s);
  });

  it('spec 5.1.1: rejects a signature made with another secret (bad_signature)', async () => {
    const d = delivery(paymentEvent(), { secret: OTHER_SECRET });
    expect(await reason(verify({ body: d.body, headers: d.headers, secret: SECRET }))).toBe('bad_signature');
  });

  it('spec 5.1.3: rejects uppercase hex (malformed_header): v1 is the lowercase hex the sender writes', async () => {
    const event = paymentEvent();
    const body = JSON.stringify(event);
    const t = nowSeconds();
    const headers = {
      'service-signature': `t=${t},v1=${computeSignature(SECRET, t, body).toUpperCase()}`,
      'service-event-id': event.id,
    };
    expect(await reason(verify({ body, headers, secret: SECRET }))).toBe('malformed_header');
  });

  it('spec 4.2: rejects spaces in the Service-Signature header (malformed_header)', async () => {
    const event = paymentEvent();
    const body = JSON.stringify(event);
    const t = nowSeconds();
    const v1 = computeSignature(SECRET, t, body);
    for (const header of [`t=${t}, v1=${v1}`, ` t=${t},v1=${v1}`, `t=${t},v1=${v1} `, `t = ${t},v1=${v1}`]) {
      const headers = { 'service-signature': header, 'service-event-id': event.id };
      expect(await reason(verify({ body, headers, secret: SECRET }))).toBe('malformed_header');
    }
  });

  it('spec 5.1.2: rejects other malformed headers (malformed_header)', async () => {
    const event = paymentEvent();
    const body = JSON.stringify(event);
    const t = nowSeconds();
    const v1 = computeSignature(SECRET, t, body);
    const bad = [
      `v1=${v1}`,
      `t=${t}`,
      `t=${t}.5,v1=${v1}`,
      `t=-${t},v1=${v1}`,
      `t=${t},v1=${v1.slice(0, 63)}`,
      `t=${t},t=${t},v1=${v1}`,
      'garbage',
    ];
    for (const header of bad) {
      const headers = { 'service-signature': header, 'service-event-id': event.id };
      expect(await reason(verify({ body, headers, secret: SECRET })), header).toBe('malformed_header');
    }
  });

  it('spec 5.1.6: rejects a timestamp 301 s old (timestamp_out_of_tolerance)', async () => {
    const d = delivery(paymentEvent(), { timestamp: nowSeconds() - 301 });
    expect(await reason(verify({ body: d.body, headers: d.headers, secret: SECRET }))).toBe('timestamp_out_of_tolerance');
  });

  it('spec 5.1.6: rejects a timestamp 301 s in the future (timestamp_out_of_tolerance)', async () => {
    // Checked at the whole second it was signed against: with the clock's milliseconds running
    // on, t + 301 s could be only 300.x s ahead by the time it is checked.
    const t = nowSeconds();
    const d = delivery(paymentEvent(), { timestamp: t + 301 });
    expect(await reason(verify({ body: d.body, headers: d.headers, secret: SECRET, now: new Date(t * 1000) }))).toBe(
      'timestamp_out_of_tolerance',
    );
  });

  it('spec 5.1.6: accepts exactly 300 s either way (the tolerance is |now - t| > 300)', async () => {
    const now = Date.UTC(2025, 0, 1, 12, 0, 0, 0); // exactly 300.000 s either way (300.9 s is outside: sharpening.test.ts)
    const t0 = Math.floor(now / 1000);
    for (const t of [t0 - 300, t0 + 300]) {
      const event = paymentEvent();
      const d = delivery(event, { timestamp: t });
      expect((await verify({ body: d.body, headers: d.headers, secret: SECRET, now })).id).toBe(event.id);
    }
    for (const t of [t0 - 301, t0 + 301]) {
      const d = delivery(paymentEvent(), { timestamp: t });
      expect(await reason(verify({ body: d.body, headers: d.headers, secret: SECRET, now: new Date(now) }))).toBe(
        'timestamp_out_of_tolerance',
      );
    }
  });

  it('spec 5.1.6: toleranceSeconds can be tightened', async () => {
    const d = delivery(paymentEvent(), { timestamp: nowSeconds() - 60 });
    expect(await reason(verify({ body: d.body, headers: d.headers, secret: SECRET, toleranceSeconds: 30 }))).toBe(
      'timestamp_out_of_tolerance',
    );
  });

  it('spec 5.1.6: compares the signature before the timestamp (a forged stale delivery is bad_signature)', async () => {
    const d = delivery(paymentEvent(), { timestamp: nowSeconds() - 10_000, secret: OTHER_SECRET });
    expect(await reason(verify({ body: d.body, headers: d.headers, secret: SECRET }))).toBe('bad_signature');
  });

  it('spec 4.2: rejects a missing Service-Signature or Service-Event-Id (missing_header)', async () => {
    const d = delivery(paymentEvent());
    const noSignature = { ...d.headers };
    delete noSignature['service-signature'];
    const noEventId = { ...d.headers };
    delete noEventId['service-event-id'];
    expect(await reason(verify({ body: d.body, headers: noSignature, secret: SECRET }))).toBe('missing_header');
    expect(await reason(verify({ body: d.body, headers: noEventId, secret: SECRET }))).toBe('missing_header');
    expect(await reason(verify({ body: d.body, headers: { ...d.headers, 'service-event-id': '' }, secret: SECRET }))).toBe(
      'missing_header',
    );
  });

  it('spec 4.2: rejects a Service-Event-Id that differs from the signed body id (event_id_mismatch)', async () => {
    const event = paymentEvent();
    const d = delivery(event);
    const headers = { ...d.headers, 'service-event-id': 'evt_someone_else' };
    expect(await reason(verify({ body: d.body, headers, secret: SECRET }))).toBe('event_id_mismatch');
  });

  it('spec 5.1: rejects a signed body that is not a JSON event (invalid_json)', async () => {
    const t = nowSeconds();
    for (const body of ['not json', '[1,2]', '{"id":42,"type":"payment.succeeded"}', Buffer.from([0x7b, 0xff, 0x7d])]) {
      const headers = { 'service-signature': signPayload(SECRET, t, body), 'service-event-id': 'evt_1' };
      expect(await reason(verify({ body, headers, secret: SECRET }))).toBe('invalid_json');
    }
  });

  it('spec 5.1.1: secret rotation: a header with two v1 values verifies under either secret', async () => {
    const event = paymentEvent();
    const body = JSON.stringify(event);
    const t = nowSeconds();
    const header = `t=${t},v1=${computeSignature(OTHER_SECRET, t, body)},v1=${computeSignature(SECRET, t, body)}`;
    const headers = { 'service-signature': header, 'service-event-id': event.id };
    expect((await verify({ body, headers, secret: SECRET })).id).toBe(event.id);
    expect((await verify({ body, headers, secret: OTHER_SECRET })).id).toBe(event.id);
    expect(await reason(verify({ body, headers, secret: 'whsec_third' }))).toBe('bad_signature');
  });

  it('spec 5.1.1: secret rotation: a list of two secrets accepts deliveries signed with either', async () => {
    for (const signer of [SECRET, OTHER_SECRET]) {
      const event = paymentEvent();
      const d = delivery(event, { secret: signer });
      expect((await verify({ body: d.body, headers: d.headers, secret: [OTHER_SECRET, SECRET] })).id).toBe(event.id);
    }
  });

  it('spec 4.2: header names are case-insensitive, in a Headers object or a plain object', async () => {
    const event = paymentEvent();
    const d = delivery(event);
    const upper = { 'Service-Signature': d.headers['service-signature']!, 'SERVICE-EVENT-ID': event.id };
    expect((await verify({ body: d.body, headers: upper, secret: SECRET })).id).toBe(event.id);
    expect((await verify({ body: d.body, headers: new Headers(d.headers), secret: SECRET })).id).toBe(event.id);
  });

  it('spec 5.1.1: refuses a secret without the whsec_ prefix at configuration time', async () => {
    const d = delivery(paymentEvent());
    await expect(verify({ body: d.body, headers: d.headers, secret: SECRET.slice('whsec_'.length) })).rejects.toThrow(TypeError);
    await expect(verify({ body: d.body, headers: d.headers, secret: [] })).rejects.toThrow(TypeError);
  });
});

describe('verifyWebhook (sync)', () => {
  it('spec 5.1: returns synchronously and throws synchronously', () => {
    const event = paymentEvent();
    const d = delivery(event);
    expect(verifyWebhook({ body: d.body, headers: d.headers, secret: SECRET }).id).toBe(event.id);
    expect(() => verifyWebhook({ body: `${d.body} `, headers: d.headers, secret: SECRET })).toThrow(WebhookVerificationError);
  });
});

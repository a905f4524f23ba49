import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { connect as amqpConnect, type ChannelModel, type Channel } from 'amqplib';
import { connect as natsConnect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { Webhook } from 'standardwebhooks';
import { verifyWebhook } from '../../../receiver/src/index.ts';
import { startService, type TestService } from '../helpers/service.ts';
import { payment, publish } from '../helpers/publish.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';
import { credentialsAad, decodeCredentials } from '../../src/endpoint-urls/broker-url.ts';
import type { SecretBox } from '../../src/security/encryption.ts';

/**
 * Issue 25 item 3: endpoints whose URL names a message broker. Against the real RabbitMQ
 * (127.0.0.1:5672, guest/guest) and NATS JetStream (127.0.0.1:4222) of this machine: the
 * broker gets the event's exact bytes with Service-Event-Id and Service-Signature as message
 * headers, so a consumer verifies exactly as an HTTP receiver does; success is the broker's
 * confirmation, and anything else is a failed attempt with the broker's words in the log.
 */
const RABBIT = '127.0.0.1:5672';
const NATS = '127.0.0.1:4222';
const run = randomUUID().slice(0, 8);

let svc: TestService;
let p: CreatedPlatform;
let worker: DeliveryWorker;
let rabbit: ChannelModel;
let ch: Channel;
let nats: NatsConnection;
let jsm: JetStreamManager;
const EXCHANGE = `payhooks-test-${run}`;
const QUEUE = `payhooks-test-${run}`;
const STREAM = `PAYHOOKS_TEST_${run}`;
const SUBJECT = `payhooks.test.${run}`;

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true });
  p = await svc.platform();
  worker = svc.ctx.createWorker();
  // The merchant's side: an exchange with a queue bound, and a stream capturing a subject.
  rabbit = await amqpConnect(`amqp://guest:guest@${RABBIT}`);
  ch = await rabbit.createChannel();
  await ch.assertExchange(EXCHANGE, 'direct', { durable: false, autoDelete: false });
  await ch.assertQueue(QUEUE, { durable: false, exclusive: true });
  await ch.bindQueue(QUEUE, EXCHANGE, 'payments');
  nats = await natsConnect({ servers: NATS });
  jsm = await jetstreamManager(nats);
  await jsm.streams.add({ name: STREAM, subjects: [`${SUBJECT}.>`] });
});
afterAll(async () => {
  await svc?.close();
  await ch?.deleteExchange(EXCHANGE).catch(() => {});
  await rabbit?.close();
  await jsm?.streams.delete(STREAM).catch(() => {});
  await nats?.close();
});

async function endpoint(url: string, key = p.keys.sandbox, extra: Record<string, unknown> = {}) {
  const r = await svc.api(key, 'POST', '/api/v1/webhook_endpoints', { url, enabled_events: ['*'], ...extra });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body as { id: string; url: string; secret: string; url_has_credentials: boolean };
}

async function attemptsOf(eventId: string, endpointId: string) {
  const r = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?event_id=${eventId}&endpoint_id=${endpointId}`);
  expect(r.body.data).toHaveLength(1);
  const d = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries/${r.body.data[0].id}`);
  return d.body as { state: string; attempts: Array<Record<string, unknown>> };
}

async function storedBody(eventId: string): Promise<string> {
  const [row] = await svc.ctx.database.query<{ body: string }>('SELECT body FROM events WHERE id = $1', [eventId]);
  return row!.body;
}

/** Messages on the test queue, waited for (never a fixed sleep). */
async function nextMessage() {
  return vi.waitFor(
    async () => {
      const m = await ch.get(QUEUE, { noAck: true });
      if (!m) throw new Error('no message yet');
      return m;
    },
    { timeout: 20_000, interval: 50 },
  );
}

describe('broker URLs on the endpoint (API)', () => {
  it('splits user:password off an amqp URL: the url shown has none, url_has_credentials says they are stored, sealed', async () => {
    const e = await endpoint(`amqp://guest:guest@${RABBIT}/?exchange=${EXCHANGE}&routing_key=payments`);
    expect(e.url).toBe(`amqp://${RABBIT}/?exchange=${EXCHANGE}&routing_key=payments`);
    expect(e.url_has_credentials).toBe(true);
    const got = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${e.id}`);
    expect(JSON.stringify(got.body)).not.toContain('guest');
    expect(got.body.url_has_credentials).toBe(true);
    const [row] = await svc.ctx.database.query<{ url: string; url_credentials_ciphertext: string }>(
      'SELECT url, url_credentials_ciphertext FROM webhook_endpoints WHERE id = $1',
      [e.id],
    );
    expect(row!.url).not.toContain('guest');
    expect(row!.url_credentials_ciphertext).toMatch(/^v1\./);
    expect(row!.url_credentials_ciphertext).not.toContain('guest');
    // The url sent back as read (or another exchange on the same broker) keeps the credentials ...
    const patch = (url: string) => svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${e.id}`, { url });
    expect((await patch(e.url)).body.url_has_credentials).toBe(true);
    expect((await patch(`amqp://${RABBIT}/?exchange=${EXCHANGE}&routing_key=other`)).body.url_has_credentials).toBe(true);
    // ... another broker (host, port, vhost or scheme) never gets them.
    expect((await patch(`amqp://127.0.0.1:5673/?exchange=${EXCHANGE}`)).body.url_has_credentials).toBe(false);
    expect((await patch(`amqp://u:p@${RABBIT}/?exchange=${EXCHANGE}`)).body.url_has_credentials).toBe(true);
    expect((await patch(`amqp://${RABBIT}/other-vhost?exchange=${EXCHANGE}`)).body.url_has_credentials).toBe(false);
    const http = await endpoint('http://127.0.0.1:9/hook');
    expect(http.url_has_credentials).toBe(false);
  });

  it('refuses a broker URL without its target, with an unknown parameter or a wildcard subject (400 url_invalid naming the fix)', async () => {
    const cases: Array<[string, RegExp]> = [
      [`amqp://${RABBIT}/`, /exchange=/],
      [`amqp://${RABBIT}/?exchange=x&queue=y`, /unknown query parameter "queue"/],
      [`nats://${NATS}`, /subject=/],
      [`nats://${NATS}?subject=a.*`, /wildcards/],
      [`tls://${NATS}/path?subject=a`, /no path/],
      ['kafka://broker:9092?topic=x', /http or https \(or amqp, amqps, nats, tls/],
    ];
    for (const [url, message] of cases) {
      const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url, enabled_events: ['*'] });
      expect(r.status, url).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'url_invalid', param: 'url' });
      expect(r.body.error.message, url).toMatch(message);
    }
  });

  it('live endpoints need TLS (amqps, tls), as they need https (422 url_insecure)', async () => {
    for (const url of [`amqp://${RABBIT}/?exchange=x`, `nats://${NATS}?subject=a`]) {
      const r = await svc.api(p.keys.live, 'POST', '/api/v1/webhook_endpoints', { url, enabled_events: ['*'] });
      expect(r.status, url).toBe(422);
      expect(r.body.error.code).toBe('url_insecure');
      expect(r.body.error.message).toMatch(/amqps:\/\/.*tls:\/\//);
    }
    for (const url of ['amqps://rabbit.example.com/?exchange=x', 'tls://nats.example.com?subject=a']) {
      const r = await svc.api(p.keys.live, 'POST', '/api/v1/webhook_endpoints', { url, enabled_events: ['*'] });
      expect(r.status, url).toBe(201);
    }
  });
});

describe('RabbitMQ (amqp://, publisher confirms)', () => {
  it('delivers the exact stored bytes, persistent, application/json, with Service-Event-Id and a Service-Signature a receiver verifies', async () => {
    const e = await endpoint(`amqp://guest:guest@${RABBIT}/?exchange=${EXCHANGE}&routing_key=payments`);
    const { event: ev } = await publish(svc.ctx, p.merchant_id, { type: 'payment.succeeded', object: payment() });
    await worker.drain();
    const msg = await nextMessage();
    expect(msg.content.toString('utf8')).toBe(await storedBody(ev.id));
    expect(msg.properties.contentType).toBe('application/json');
    expect(msg.properties.deliveryMode).toBe(2);
    expect(msg.properties.messageId).toBe(ev.id);
    const headers = msg.properties.headers as Record<string, string>;
    expect(headers['Service-Event-Id']).toBe(ev.id);
    expect(headers['Service-Signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    const verified = verifyWebhook({ secret: e.secret, body: msg.content, headers });
    expect(verified.id).toBe(ev.id);
    const d = await attemptsOf(ev.id, e.id);
    expect(d.state).toBe('delivered');
    expect(d.attempts[0]).toMatchObject({ succeeded: true, status_code: null, error_kind: null });
    expect(d.attempts[0]!.response_body).toMatch(/Confirmed by RabbitMQ/);
    // The log shows the message as sent: its headers and content type, no User-Agent (an HTTP header).
    expect(d.attempts[0]!.request_headers).toEqual({
      'Content-Type': 'application/json',
      'Service-Event-Id': ev.id,
      'Service-Signature': headers['Service-Signature'],
    });
  });

  it('an endpoint with standard_webhooks and custom headers: they are message headers too, and the standardwebhooks library verifies the message', async () => {
    const e = await endpoint(`amqp://guest:guest@${RABBIT}/?exchange=${EXCHANGE}&routing_key=payments`, p.keys.sandbox, {
      standard_webhooks: true,
      headers: { 'X-Tenant': 'shop-1' },
    });
    const { event: ev } = await publish(svc.ctx, p.merchant_id, { type: 'payment.succeeded', object: payment() });
    await worker.drain();
    const msg = await nextMessage();
    const headers = msg.properties.headers as Record<string, string>;
    expect(headers).toMatchObject({ 'Service-Event-Id': ev.id, 'webhook-id': ev.id, 'X-Tenant': 'shop-1' });
    expect(new Webhook(e.secret).verify(msg.content.toString('utf8'), headers)).toMatchObject({ id: ev.id });
    expect(verifyWebhook({ secret: e.secret, body: msg.content, headers }).id).toBe(ev.id);
    const d = await attemptsOf(ev.id, e.id);
    expect(d.attempts[0]!.request_headers).toEqual({
      'Content-Type': 'application/json',
      'Service-Event-Id': ev.id,
      'Service-Signature': headers['Service-Signature'],
      'webhook-id': ev.id,
      'webhook-timestamp': headers['webhook-timestamp'],
      'webhook-signature': headers['webhook-signature'],
      'X-Tenant': 'shop-1',
    });
    // The earlier endpoints on this queue got the event too: none of it is left for the next test.
    await svc.api(p.keys.sandbox, 'DELETE', `/api/v1/webhook_endpoints/${e.id}`);
    await ch.purgeQueue(QUEUE);
  });

  it('a missing exchange, an unroutable message and refused credentials are failed attempts with the broker’s words; other exchanges keep working', async () => {
    const missing = await endpoint(`amqp://${RABBIT}/?exchange=no-such-exchange-${run}&routing_key=payments`);
    const unroutable = await endpoint(`amqp://${RABBIT}/?exchange=${EXCHANGE}&routing_key=nobody-binds-this`);
    const refused = await endpoint(`amqp://guest:wrong-password@${RABBIT}/?exchange=${EXCHANGE}&routing_key=payments`);
    const good = await endpoint(`amqp://${RABBIT}/?exchange=${EXCHANGE}&routing_key=payments`);
    const { event: ev } = await publish(svc.ctx, p.merchant_id, { type: 'payment.succeeded', object: payment() });
    await worker.drain();
    const failedWith = async (id: string) => {
      const d = await attemptsOf(ev.id, id);
      expect(d.state).toBe('failed_retrying');
      expect(d.attempts[0]).toMatchObject({ succeeded: false, status_code: null, error_kind: 'broker' });
      return String(d.attempts[0]!.error_message);
    };
    expect(await failedWith(missing.id)).toMatch(/NOT_FOUND - no exchange/);
    expect(await failedWith(unroutable.id)).toMatch(/no queue is bound to exchange ".*" with routing key "nobody-binds-this"/);
    expect(await failedWith(refused.id)).toMatch(/refused the credentials/);
    expect((await attemptsOf(ev.id, good.id)).state).toBe('delivered');
    expect((await nextMessage()).properties.messageId).toBe(ev.id);
  });
});

describe('the circuit breaker and auto-disable clock (delivery/fairness.ts) count a broker’s answer', () => {
  it('a confirmation resets a throttled broker endpoint and clears failing_since; a refusal is an answer too', async () => {
    const ok = await endpoint(`amqp://${RABBIT}/?exchange=${EXCHANGE}&routing_key=payments`);
    const refusing = await endpoint(`amqp://${RABBIT}/?exchange=no-such-exchange-breaker-${run}`);
    for (const id of [ok.id, refusing.id])
      await svc.ctx.database.query(
        `UPDATE webhook_endpoints SET consecutive_timeouts = 5, throttled_at = now(), failing_since = now() WHERE id = $1`,
        [id],
      );
    await publish(svc.ctx, p.merchant_id, { type: 'payment.succeeded', object: payment() });
    await worker.drain();
    await nextMessage();
    const health = async (id: string) =>
      (
        await svc.ctx.database.query<{ consecutive_timeouts: number; throttled: boolean; failing: boolean }>(
          `SELECT consecutive_timeouts, throttled_at IS NOT NULL AS throttled, failing_since IS NOT NULL AS failing
           FROM webhook_endpoints WHERE id = $1`,
          [id],
        )
      )[0]!;
    expect(await health(ok.id)).toMatchObject({ consecutive_timeouts: 0, throttled: false, failing: false });
    // Refused (NOT_FOUND) is an answer: not a timeout, so no longer throttled; still failing.
    expect(await health(refusing.id)).toMatchObject({ consecutive_timeouts: 0, throttled: false, failing: true });
  });
});

describe('NATS JetStream (nats://, stream acks)', () => {
  it('delivers the exact stored bytes as a message with the signature headers; the attempt logs the stream and sequence', async () => {
    const e = await endpoint(`nats://${NATS}?subject=${SUBJECT}.payments`);
    const { event: ev } = await publish(svc.ctx, p.merchant_id, { type: 'payment.succeeded', object: payment() });
    await worker.drain();
    const d = await attemptsOf(ev.id, e.id);
    expect(d.state).toBe('delivered');
    expect(d.attempts[0]!.response_body).toMatch(new RegExp(`stream "${STREAM}", sequence \\d+`));
    expect(d.attempts[0]!.request_headers).toEqual({
      'Content-Type': 'application/json',
      'Service-Event-Id': ev.id,
      'Service-Signature': expect.stringMatching(/^t=\d+,v1=[0-9a-f]{64}$/),
    });
    const stored = await jsm.streams.getMessage(STREAM, { last_by_subj: `${SUBJECT}.payments` });
    expect(stored).not.toBeNull();
    expect(Buffer.from(stored!.data).toString('utf8')).toBe(await storedBody(ev.id));
    const headers = {
      'Service-Event-Id': stored!.header.get('Service-Event-Id'),
      'Service-Signature': stored!.header.get('Service-Signature'),
    };
    expect(headers['Service-Event-Id']).toBe(ev.id);
    expect(stored!.header.get('Content-Type')).toBe('application/json');
    expect(verifyWebhook({ secret: e.secret, body: Buffer.from(stored!.data), headers }).id).toBe(ev.id);
  });

  it('an endpoint with standard_webhooks and custom headers: they are message headers too, and the standardwebhooks library verifies the message', async () => {
    const e = await endpoint(`nats://${NATS}?subject=${SUBJECT}.sw`, p.keys.sandbox, {
      standard_webhooks: true,
      headers: { 'X-Tenant': 'shop-2' },
    });
    const { event: ev } = await publish(svc.ctx, p.merchant_id, { type: 'payment.succeeded', object: payment() });
    await worker.drain();
    expect((await attemptsOf(ev.id, e.id)).state).toBe('delivered');
    const stored = await jsm.streams.getMessage(STREAM, { last_by_subj: `${SUBJECT}.sw` });
    const headers = Object.fromEntries(
      ['Service-Event-Id', 'Service-Signature', 'webhook-id', 'webhook-timestamp', 'webhook-signature', 'X-Tenant'].map((h) => [
        h,
        stored!.header.get(h),
      ]),
    );
    expect(headers).toMatchObject({ 'webhook-id': ev.id, 'X-Tenant': 'shop-2' });
    expect(new Webhook(e.secret).verify(Buffer.from(stored!.data).toString('utf8'), headers)).toMatchObject({ id: ev.id });
    expect(verifyWebhook({ secret: e.secret, body: Buffer.from(stored!.data), headers }).id).toBe(ev.id);
    await svc.api(p.keys.sandbox, 'DELETE', `/api/v1/webhook_endpoints/${e.id}`);
  });

  it('a subject no stream captures is a failed attempt saying so', async () => {
    const e = await endpoint(`nats://${NATS}?subject=payhooks.nostream.${run}`);
    const { event: ev } = await publish(svc.ctx, p.merchant_id, { type: 'payment.succeeded', object: payment() });
    await worker.drain();
    const d = await attemptsOf(ev.id, e.id);
    expect(d.state).toBe('failed_retrying');
    expect(d.attempts[0]).toMatchObject({ succeeded: false, error_kind: 'broker' });
    expect(String(d.attempts[0]!.error_message)).toMatch(/No JetStream stream captures the subject "payhooks\.nostream/);
  });
});

describe('credentials at rest', () => {
  it('are sealed under the encryption key with the endpoint id as associated data (a copy onto another row fails)', async () => {
    const e = await endpoint(`amqp://user%40x:p%3Ass@${RABBIT}/?exchange=${EXCHANGE}`);
    const other = await endpoint(`amqp://${RABBIT}/?exchange=${EXCHANGE}`);
    const [row] = await svc.ctx.database.query<{ c: string }>(
      'SELECT url_credentials_ciphertext AS c FROM webhook_endpoints WHERE id = $1',
      [e.id],
    );
    const box: SecretBox = svc.ctx.secrets;
    expect(decodeCredentials(box.decrypt(row!.c, credentialsAad(e.id)))).toEqual({ username: 'user@x', password: 'p:ss' });
    expect(() => box.decrypt(row!.c, credentialsAad(other.id))).toThrow();
    expect(() => box.decrypt(row!.c, e.id)).toThrow();
  });
});

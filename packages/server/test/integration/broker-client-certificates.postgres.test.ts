import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as amqpConnect, type Channel, type ChannelModel } from 'amqplib';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect as natsConnect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issue, makeCa, type Issued } from '../helpers/certificates.ts';
import { startService, type TestService } from '../helpers/service.ts';
import { publish } from '../helpers/publish.ts';
import { startTlsNats, startTlsRabbit, type TlsBroker } from '../helpers/tls-brokers.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';

/**
 * Brokers that admit only clients with a certificate of their own CA: an endpoint's
 * `authentication: {type: "mtls"}` and `tls.ca_certificates` on an amqps:// URL (a RabbitMQ node
 * of the machine's own package, started here with TLS) and a tls:// URL (nats-server with
 * JetStream, likewise): delivered with the certificate, refused without it, and the key in no
 * API answer. (Only in the PostgreSQL project: the brokers take seconds to start, and the
 * database plays no part in what is tested.)
 */

let dir: string;
let ca: string;
let client: Issued;
let rabbit: TlsBroker;
let nats: TlsBroker;
let svc: TestService;
let worker: DeliveryWorker;
let p: CreatedPlatform;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'payhooks-broker-mtls-'));
  ca = makeCa(dir, 'broker-ca');
  // The NATS client names 127.0.0.1 "localhost" in the handshake: the certificate has both.
  issue(dir, 'broker-ca', 'broker', 'subjectAltName=IP:127.0.0.1,DNS:localhost');
  client = issue(dir, 'broker-ca', 'payhooks-client', 'extendedKeyUsage=clientAuth');
  const files = { ca: join(dir, 'broker-ca.pem'), cert: join(dir, 'broker.pem'), key: join(dir, 'broker.key') };
  [rabbit, nats] = await Promise.all([startTlsRabbit(dir, files), startTlsNats(dir, files)]);
  svc = await startService({ allowPrivateUrls: true });
  worker = svc.ctx.createWorker();
  p = await svc.platform();
}, 90_000);
afterAll(async () => {
  await svc?.close();
  await Promise.all([rabbit?.stop(), nats?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

const tls = () => ({ ca, cert: client.cert, key: client.key });

async function lastAttempt(endpointId: string) {
  const r = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?endpoint_id=${endpointId}&limit=1`);
  return r.body.data[0].attempts.at(-1) as { succeeded: boolean; error_kind: string | null; error_message: string | null };
}

async function endpoint(url: string, withCertificate: boolean) {
  const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
    url,
    enabled_events: ['*'],
    tls: { ca_certificates: ca },
    ...(withCertificate ? { authentication: { type: 'mtls', certificate: client.cert, private_key: client.key } } : {}),
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  expect(JSON.stringify(r.body)).not.toContain('PRIVATE KEY');
  return r.body.id as string;
}

async function deliverTo(endpointId: string) {
  await publish(svc.ctx, p.merchant_id);
  await worker.drain();
  const attempt = await lastAttempt(endpointId);
  await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${endpointId}`, { status: 'disabled' });
  return attempt;
}

describe('brokers with client certificates', () => {
  it('amqps://: RabbitMQ requiring a client certificate of its CA takes the message with it, and refuses the connection without', async () => {
    let model: ChannelModel | undefined;
    let channel: Channel;
    try {
      model = await amqpConnect(`amqps://guest:guest@127.0.0.1:${rabbit.port}`, { ...tls(), ca: [ca] });
      channel = await model.createChannel();
      await channel.assertExchange('bank', 'fanout', { durable: false });
      await channel.assertQueue('bank-in', { durable: false });
      await channel.bindQueue('bank-in', 'bank', '');
      const url = `amqps://guest:guest@127.0.0.1:${rabbit.port}/?exchange=bank`;
      const delivered = await deliverTo(await endpoint(url, true));
      expect(delivered, JSON.stringify(delivered)).toMatchObject({ succeeded: true });
      const message = await channel.get('bank-in', { noAck: true });
      expect(message && JSON.parse(message.content.toString()).object).toBe('event');
      const refused = await deliverTo(await endpoint(url, false));
      expect(refused.succeeded).toBe(false);
      expect(['tls', 'connection_reset', 'broker', 'network']).toContain(refused.error_kind);
      expect(await channel.get('bank-in', { noAck: true })).toBe(false);
    } finally {
      await model?.close();
    }
  });

  it('tls://: NATS requiring a client certificate of its CA stores the message in JetStream with it, and refuses without', async () => {
    let nc: NatsConnection | undefined;
    try {
      nc = await natsConnect({ servers: `127.0.0.1:${nats.port}`, tls: tls() });
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: 'BANK', subjects: ['bank.>'] });
      const url = `tls://127.0.0.1:${nats.port}?subject=bank.payments`;
      const delivered = await deliverTo(await endpoint(url, true));
      expect(delivered, JSON.stringify(delivered)).toMatchObject({ succeeded: true });
      expect((await jsm.streams.info('BANK')).state.messages).toBe(1);
      const refused = await deliverTo(await endpoint(url, false));
      expect(refused.succeeded).toBe(false);
      expect((await jsm.streams.info('BANK')).state.messages).toBe(1);
    } finally {
      await nc?.close();
    }
  });

  it('refused where no handshake can use them: a client certificate or CAs on amqp:// and nats://; Basic on a broker', async () => {
    const refused = async (body: Record<string, unknown>, code: string) => {
      const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { enabled_events: ['*'], ...body });
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.error.code).toBe(code);
    };
    const mtls = { type: 'mtls', certificate: client.cert, private_key: client.key };
    await refused({ url: 'amqp://127.0.0.1:5672/?exchange=x', authentication: mtls }, 'authentication_not_supported');
    await refused({ url: 'nats://127.0.0.1:4222?subject=x', tls: { ca_certificates: ca } }, 'tls_not_supported');
    await refused(
      { url: `amqps://127.0.0.1:${rabbit.port}/?exchange=x`, authentication: { type: 'basic', username: 'a', password: 'b' } },
      'authentication_not_supported',
    );
  });
});

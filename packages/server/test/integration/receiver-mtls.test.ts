import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpsServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issue, makeCa, type Issued } from '../helpers/certificates.ts';
import { startService, type TestService } from '../helpers/service.ts';
import { publish } from '../helpers/publish.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';

/**
 * An endpoint's `authentication: {type: "mtls"}`: a real HTTPS receiver that requires a client
 * certificate from its own CA (made here with openssl) accepts the right one, refuses one from
 * another CA and a request without one; the key is in no API answer; the handshake's connection
 * is reused by the next attempt.
 */

let dir: string;
let caPem: string;
let server: Server;
let url: string;
let svc: TestService;
let worker: DeliveryWorker;
let p: CreatedPlatform;
const accepted: { subject: string; socket: object }[] = [];

let client: Issued;
let stranger: Issued;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'payhooks-mtls-'));
  caPem = makeCa(dir, 'bank-ca');
  makeCa(dir, 'other-ca');
  const serverCert = issue(dir, 'bank-ca', 'receiver', 'subjectAltName=IP:127.0.0.1');
  client = issue(dir, 'bank-ca', 'payhooks-client', 'extendedKeyUsage=clientAuth');
  stranger = issue(dir, 'other-ca', 'stranger-client', 'extendedKeyUsage=clientAuth');
  // The bank's gateway: only clients with a certificate of its CA get in.
  server = createHttpsServer({ ...serverCert, ca: caPem, requestCert: true, rejectUnauthorized: true }, (req, res) => {
    const socket = req.socket as TLSSocket;
    accepted.push({ subject: String(socket.getPeerCertificate().subject?.CN ?? ''), socket });
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
  svc = await startService({ allowPrivateUrls: true });
  worker = svc.ctx.createWorker();
  p = await svc.platform();
});
afterAll(async () => {
  await svc?.close();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  rmSync(dir, { recursive: true, force: true });
});

async function lastAttempt(endpointId: string) {
  const r = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?endpoint_id=${endpointId}&limit=1`);
  return r.body.data[0].attempts.at(-1) as { status_code: number | null; error_kind: string | null };
}

async function deliverTo(endpointId: string) {
  await publish(svc.ctx, p.merchant_id);
  await worker.drain();
  return lastAttempt(endpointId);
}

const create = (authentication: unknown) =>
  svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
    url,
    enabled_events: ['*'],
    tls: { ca_certificates: caPem },
    ...(authentication === undefined ? {} : { authentication }),
  });

describe('receiver authentication: mutual TLS', () => {
  let endpointId: string;

  it('the right client certificate is accepted, the answer recorded, and the connection reused by the next attempt', async () => {
    const r = await create({ type: 'mtls', certificate: client.cert, private_key: client.key });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    endpointId = r.body.id;
    expect(r.body.authentication).toMatchObject({ type: 'mtls', subject: 'CN=payhooks-client', issuer: 'CN=bank-ca' });
    expect(r.body.authentication.fingerprint).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
    expect(r.body.authentication.not_after).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect((await deliverTo(endpointId)).status_code).toBe(200);
    expect(accepted.at(-1)!.subject).toBe('payhooks-client');
    const first = accepted.at(-1)!.socket;
    expect((await deliverTo(endpointId)).status_code).toBe(200);
    // Kept alive: the second attempt came on the same TLS connection, no second handshake.
    expect(accepted.at(-1)!.socket).toBe(first);
    await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${endpointId}`, { status: 'disabled' });
  });

  it('a certificate from another CA, or none, is refused by the receiver: a failed attempt, nothing delivered', async () => {
    const before = accepted.length;
    const other = await create({ type: 'mtls', certificate: stranger.cert, private_key: stranger.key });
    expect(other.status, JSON.stringify(other.body)).toBe(201);
    const refused = await deliverTo(other.body.id);
    expect(refused.status_code).toBeNull();
    expect(['tls', 'connection_reset']).toContain(refused.error_kind);
    await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${other.body.id}`, { status: 'disabled' });
    const none = await create(undefined);
    const without = await deliverTo(none.body.id);
    expect(without.status_code).toBeNull();
    expect(['tls', 'connection_reset']).toContain(without.error_kind);
    await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${none.body.id}`, { status: 'disabled' });
    expect(accepted.length).toBe(before);
  });

  it('refused with a clear error, never echoing the key: a key of another certificate, not PEM, an http URL', async () => {
    const refused = async (body: Record<string, unknown>, code: string, param: string) => {
      const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url, enabled_events: ['*'], ...body });
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.error).toMatchObject({ code, param });
      expect(JSON.stringify(r.body)).not.toContain('PRIVATE KEY');
    };
    await refused(
      { authentication: { type: 'mtls', certificate: client.cert, private_key: stranger.key } },
      'parameter_invalid',
      'authentication[private_key]',
    );
    await refused(
      { authentication: { type: 'mtls', certificate: client.cert, private_key: 'not a key' } },
      'parameter_invalid',
      'authentication[private_key]',
    );
    await refused(
      { authentication: { type: 'mtls', certificate: 'not a cert', private_key: client.key } },
      'parameter_invalid',
      'authentication[certificate]',
    );
    await refused(
      { url: url.replace('https:', 'http:'), authentication: { type: 'mtls', certificate: client.cert, private_key: client.key } },
      'authentication_not_supported',
      'authentication',
    );
  });

  it('the private key is in no API answer, audit entry or column in clear', async () => {
    const keyBody = client.key.split('\n')[1]!;
    const answers = [
      await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${endpointId}`),
      await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?endpoint_id=${endpointId}`),
      await svc.api(p.keys.sandbox, 'GET', `/api/v1/audit_events?resource_id=${endpointId}`),
    ];
    for (const a of answers) {
      expect(a.status).toBe(200);
      expect(JSON.stringify(a.body)).not.toContain(keyBody);
    }
    const [row] = await svc.ctx.database.query<Record<string, unknown>>('SELECT * FROM webhook_endpoints WHERE id = $1', [endpointId]);
    expect(JSON.stringify(row)).not.toContain(keyBody);
  });
});

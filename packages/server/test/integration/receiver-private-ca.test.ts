import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpsServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issue, makeCa } from '../helpers/certificates.ts';
import { startService, type TestService } from '../helpers/service.ts';
import { publish } from '../helpers/publish.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';

/**
 * An endpoint's `tls.ca_certificates`: a receiver on a private PKI (a CA made here with openssl)
 * is refused while only the public authorities are trusted, delivered to once its CA is given,
 * and still refused when its certificate names another host: verification stays whole.
 */

let dir: string;
let caPem: string;
let right: Server;
let wrongHost: Server;
let svc: TestService;
let worker: DeliveryWorker;
let p: CreatedPlatform;
const received: string[] = [];

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `https://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
}

let rightUrl: string;
let wrongUrl: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'payhooks-private-ca-'));
  caPem = makeCa(dir, 'ca');
  const handler = (name: string) => (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => {
    received.push(name);
    req.resume();
    req.on('end', () => res.end('ok'));
  };
  right = createHttpsServer(issue(dir, 'ca', 'right', 'subjectAltName=IP:127.0.0.1'), handler('right'));
  wrongHost = createHttpsServer(issue(dir, 'ca', 'wrong', 'subjectAltName=DNS:another-host.example'), handler('wrong'));
  rightUrl = await listen(right);
  wrongUrl = await listen(wrongHost);
  // Only the public authorities, as in production (no test CA given to the service).
  svc = await startService({ allowPrivateUrls: true });
  worker = svc.ctx.createWorker();
  p = await svc.platform();
});
afterAll(async () => {
  await svc?.close();
  await new Promise<void>((r) => (right ? right.close(() => r()) : r()));
  await new Promise<void>((r) => (wrongHost ? wrongHost.close(() => r()) : r()));
  rmSync(dir, { recursive: true, force: true });
});

async function lastAttempt(endpointId: string) {
  const r = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?endpoint_id=${endpointId}&limit=1`);
  return r.body.data[0].attempts.at(-1) as { status_code: number | null; error_kind: string | null; error_message: string | null };
}

async function deliverTo(endpointId: string) {
  await publish(svc.ctx, p.merchant_id);
  await worker.drain();
  return lastAttempt(endpointId);
}

describe("an endpoint's own certificate authorities", () => {
  it('a private PKI receiver is a tls failure with the public authorities only; with its CA given, delivered', async () => {
    const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url: rightUrl, enabled_events: ['*'] });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.tls).toBeNull();
    const refused = await deliverTo(r.body.id);
    expect(refused.error_kind).toBe('tls');
    expect(received).not.toContain('right');
    const patched = await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${r.body.id}`, { tls: { ca_certificates: caPem } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.tls.ca_certificates).toContain('BEGIN CERTIFICATE');
    const delivered = await deliverTo(r.body.id);
    expect(delivered.status_code).toBe(200);
    expect(received).toContain('right');
    // Removed: the public authorities only again.
    await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${r.body.id}`, { tls: null });
    expect((await deliverTo(r.body.id)).error_kind).toBe('tls');
    await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${r.body.id}`, { status: 'disabled' });
  });

  it('verified as strictly as a public one: a certificate from the trusted CA for another host is refused', async () => {
    const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url: wrongUrl,
      enabled_events: ['*'],
      tls: { ca_certificates: caPem },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const attempt = await deliverTo(r.body.id);
    expect(attempt.error_kind).toBe('tls');
    expect(attempt.error_message).toMatch(/altname|Hostname|IP: 127\.0\.0\.1/i);
    expect(received).not.toContain('wrong');
  });

  it('refused with a clear error: not PEM, text around the certificates, an unreadable one, a broker URL', async () => {
    const refused = async (body: Record<string, unknown>, code: string, param: string) => {
      const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url: rightUrl, enabled_events: ['*'], ...body });
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.error).toMatchObject({ code, param });
    };
    await refused({ tls: { ca_certificates: 'not a certificate' } }, 'parameter_invalid', 'tls[ca_certificates]');
    await refused({ tls: { ca_certificates: `hello\n${caPem}` } }, 'parameter_invalid', 'tls[ca_certificates]');
    await refused(
      { tls: { ca_certificates: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n' } },
      'parameter_invalid',
      'tls[ca_certificates]',
    );
    // A broker without TLS has no handshake to trust them in (amqps:// and tls:// take them).
    await refused({ url: 'amqp://rabbit.example.com/vhost?exchange=x', tls: { ca_certificates: caPem } }, 'tls_not_supported', 'tls');
  });
});

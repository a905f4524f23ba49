import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpsServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issue, makeCa, type Issued } from '../helpers/certificates.ts';
import { ManualClock, startService, type TestService } from '../helpers/service.ts';
import { publish } from '../helpers/publish.ts';
import { sealReceiverCredentials } from '../../src/security/receiver-credentials.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';

/**
 * A client certificate replaced with an overlap, like a signing secret: while it lasts, an
 * attempt presents the new certificate and, when the receiver's gateway refuses it (it doesn't
 * trust the new CA yet), the previous one, so nothing fails while the merchant installs the new
 * trust; after the overlap only the new one. And an expired certificate: refused by the API, and
 * by a receiver when it expired after it was given.
 */

const clock = new ManualClock(Date.now());
let dir: string;
let server: Server;
let url: string;
let bankCa: string;
let newCa: string;
let serverCert: Issued;
let svc: TestService;
let worker: DeliveryWorker;
let p: CreatedPlatform;
const accepted: string[] = [];
/** Handshakes the gateway refused. */
let refusedHandshakes = 0;

/** The gateway trusts client certificates of these CAs (changed while it runs, as an operator would). */
function trust(cas: string[]) {
  server.setSecureContext({ ...serverCert, ca: cas });
  // Connections already open were admitted under the old trust: a gateway's reload ends them.
  server.closeAllConnections();
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'payhooks-mtls-rotation-'));
  bankCa = makeCa(dir, 'bank-ca');
  newCa = makeCa(dir, 'new-ca');
  serverCert = issue(dir, 'bank-ca', 'receiver', 'subjectAltName=IP:127.0.0.1');
  server = createHttpsServer({ ...serverCert, ca: bankCa, requestCert: true, rejectUnauthorized: true }, (req, res) => {
    accepted.push(String((req.socket as TLSSocket).getPeerCertificate().subject?.CN ?? ''));
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  server.on('tlsClientError', () => refusedHandshakes++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
  svc = await startService({ allowPrivateUrls: true }, { clock });
  worker = svc.ctx.createWorker();
  p = await svc.platform();
});
afterAll(async () => {
  await svc?.close();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  rmSync(dir, { recursive: true, force: true });
});

async function deliver(endpointId: string) {
  clock.advance(1);
  await publish(svc.ctx, p.merchant_id);
  await worker.drain();
  const r = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?endpoint_id=${endpointId}&limit=1`);
  return r.body.data[0].attempts.at(-1) as { status_code: number | null; error_kind: string | null };
}

const mtls = (c: Issued, extra: Record<string, unknown> = {}) => ({ type: 'mtls', certificate: c.cert, private_key: c.key, ...extra });

describe('receiver authentication: a client certificate replaced with an overlap', () => {
  it('the previous certificate is presented while the gateway refuses the new one, the new one once it is trusted, and only the new one after the overlap', async () => {
    const old = issue(dir, 'bank-ca', 'old-client', 'extendedKeyUsage=clientAuth');
    const next = issue(dir, 'new-ca', 'new-client', 'extendedKeyUsage=clientAuth');
    const created = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url,
      enabled_events: ['*'],
      tls: { ca_certificates: bankCa },
      authentication: mtls(old),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as string;
    expect(created.body.authentication.previous).toBeNull();
    expect((await deliver(id)).status_code).toBe(200);
    expect(accepted.at(-1)).toBe('old-client');

    // The new certificate is given before the gateway trusts its CA.
    const rolled = await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${id}`, { authentication: mtls(next) });
    expect(rolled.status, JSON.stringify(rolled.body)).toBe(200);
    expect(rolled.body.authentication).toMatchObject({ subject: 'CN=new-client', previous: { subject: 'CN=old-client' } });
    const expiresAt = Date.parse(rolled.body.authentication.previous.expires_at);
    expect(expiresAt - clock.now().getTime()).toBeGreaterThan(86_400_000 - 2_000);
    expect(expiresAt - clock.now().getTime()).toBeLessThanOrEqual(86_400_000);
    const refusedBefore = refusedHandshakes;
    expect((await deliver(id)).status_code).toBe(200);
    expect(accepted.at(-1)).toBe('old-client');
    expect(refusedHandshakes).toBeGreaterThan(refusedBefore);
    // Having got through with the previous certificate, the next attempts present it first: no refused handshake each.
    const refusedThen = refusedHandshakes;
    expect((await deliver(id)).status_code).toBe(200);
    expect(accepted.at(-1)).toBe('old-client');
    expect(refusedHandshakes).toBe(refusedThen);

    // The merchant installs the new trust; within a minute the new certificate goes first again.
    trust([bankCa, newCa]);
    clock.advance(61_000);
    expect((await deliver(id)).status_code).toBe(200);
    expect(accepted.at(-1)).toBe('new-client');

    // After the overlap the previous certificate is gone: a gateway that trusts only the old CA refuses.
    clock.advance(86_400_000);
    const after = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${id}`);
    expect(after.body.authentication.previous).toBeNull();
    trust([bankCa]);
    const before = accepted.length;
    const refused = await deliver(id);
    expect(refused.status_code).toBeNull();
    expect(['tls', 'connection_reset']).toContain(refused.error_kind);
    expect(accepted.length).toBe(before);
    await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${id}`, { status: 'disabled' });
  });

  it('expire_previous_in: 0 keeps no previous certificate, and a change to another kind drops it', async () => {
    // Back from the day the first test moved on, to the time the certificates below are made at.
    clock.set(Date.now());
    const a = issue(dir, 'bank-ca', 'a-client', 'extendedKeyUsage=clientAuth');
    const b = issue(dir, 'bank-ca', 'b-client', 'extendedKeyUsage=clientAuth');
    const created = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url,
      enabled_events: ['*'],
      tls: { ca_certificates: bankCa },
      authentication: mtls(a),
    });
    const id = created.body.id as string;
    const now = await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${id}`, {
      authentication: mtls(b, { expire_previous_in: 0 }),
    });
    expect(now.body.authentication).toMatchObject({ subject: 'CN=b-client', previous: null });
    const kept = await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${id}`, {
      authentication: mtls(a, { expire_previous_in: 3600 }),
    });
    expect(kept.body.authentication.previous).toMatchObject({ subject: 'CN=b-client' });
    const basic = await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${id}`, {
      authentication: { type: 'basic', username: 'u', password: 'p' },
    });
    expect(basic.status, JSON.stringify(basic.body)).toBe(200);
    const [row] = await svc.ctx.database.query<{ previous_client_certificate_ciphertext: string | null }>(
      'SELECT previous_client_certificate_ciphertext FROM webhook_endpoints WHERE id = $1',
      [id],
    );
    expect(row!.previous_client_certificate_ciphertext).toBeNull();
    const tooLong = await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${id}`, {
      authentication: mtls(a, { expire_previous_in: 8 * 86_400 }),
    });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error.param).toBe('authentication[expire_previous_in]');
    await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${id}`, { status: 'disabled' });
  });

  it('an expired certificate is refused by the API, and by the receiver when it expired after it was given', async () => {
    clock.set(Date.now());
    const expired = issue(dir, 'bank-ca', 'expired-client', 'extendedKeyUsage=clientAuth', -1);
    const refused = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url,
      enabled_events: ['*'],
      authentication: mtls(expired),
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'parameter_invalid', param: 'authentication[certificate]' });
    expect(refused.body.error.message).toContain('the certificate expired on');

    // Given while current (as the API requires), then past its end: sealed here as the API would have.
    const created = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url,
      enabled_events: ['*'],
      tls: { ca_certificates: bankCa },
      authentication: mtls(issue(dir, 'bank-ca', 'soon-client', 'extendedKeyUsage=clientAuth')),
    });
    const id = created.body.id as string;
    const sealed = sealReceiverCredentials(svc.ctx.secrets, id, { type: 'mtls', certificate: expired.cert, private_key: expired.key });
    await svc.ctx.database.query('UPDATE webhook_endpoints SET authentication_ciphertext = $1 WHERE id = $2', [sealed, id]);
    const before = accepted.length;
    const attempt = await deliver(id);
    expect(attempt.status_code).toBeNull();
    expect(['tls', 'connection_reset']).toContain(attempt.error_kind);
    expect(accepted.length).toBe(before);
    await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${id}`, { status: 'disabled' });
  });
});

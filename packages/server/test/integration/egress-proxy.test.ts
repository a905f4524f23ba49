import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpsServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { startForwardProxy, type ForwardProxy } from '../helpers/forward-proxy.ts';
import { publish } from '../helpers/publish.ts';
import type { Resolver } from '../../src/delivery/safe-lookup.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import { createServer as createHttpServer } from 'node:http';
import { createWebhookHandler, memoryStore, toNodeHandler } from '../../../receiver/src/index.ts';
import { runPayhooks } from '../helpers/cli.ts';
import { startAuthorizationServer, type AuthorizationServer } from '../helpers/oauth-server.ts';

/**
 * Deliveries through the operator's forward proxy (PAYHOOKS_EGRESS_PROXY), against Debian's
 * tinyproxy. The names below exist only in this stub: the proxy has no DNS for them, so a
 * delivery to one that arrives proves the proxy was asked for the address payhooks resolved and
 * checked, not the name.
 */
const zone: Record<string, Array<{ address: string; family: 4 | 6 }>> = {
  'receiver.test': [{ address: '127.0.0.1', family: 4 }],
  'metadata.test': [{ address: '169.254.169.254', family: 4 }],
  'public.test': [{ address: '93.184.216.34', family: 4 }],
};
const resolver: Resolver = (hostname, _options, callback) => {
  const answer = zone[hostname];
  if (!answer) return callback(Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
  callback(null, answer);
};

let dir: string;
let cert: string;
let auth: AuthorizationServer;
let proxy: ForwardProxy;
let receiver: TestReceiver;
let tlsServer: Server;
let tlsPort: number;
const tlsRequests: Array<{ host: string | undefined; servername: string | false | null }> = [];
let svc: TestService;
let p: CreatedPlatform;
/** The same proxy with the SSRF rules on (no private targets). */
let strict: TestService;
let q: CreatedPlatform;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'payhooks-egress-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=receiver.test',
      '-addext',
      'subjectAltName=DNS:receiver.test',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
    ],
    { stdio: 'ignore' },
  );
  cert = readFileSync(join(dir, 'cert.pem'), 'utf8');
  tlsServer = createHttpsServer({ key: readFileSync(join(dir, 'key.pem')), cert }, (req, res) => {
    tlsRequests.push({ host: req.headers.host, servername: (req.socket as TLSSocket).servername });
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  await new Promise<void>((r) => tlsServer.listen(0, '127.0.0.1', r));
  tlsPort = (tlsServer.address() as AddressInfo).port;
  receiver = await startReceiver();
  auth = await startAuthorizationServer(dir, [{ client_id: 'proxied', client_secret: 'proxied-secret' }]);
  // CONNECT only to the TLS receiver's and the token endpoint's ports: a tunnel anywhere else is the proxy's 403.
  proxy = await startForwardProxy({ connectPorts: [tlsPort, Number(new URL(auth.tokenUrl).port)] });
  // The receivers are on 127.0.0.1: private targets allowed here; the SSRF test has its own service.
  [svc, strict] = await Promise.all([
    startService({ allowPrivateUrls: true, egressProxy: proxy.url }, { resolver, tls: { ca: cert } }),
    startService({ allowPrivateUrls: false, egressProxy: proxy.url }, { resolver, tls: { ca: cert } }),
  ]);
  [p, q] = await Promise.all([svc.platform(), strict.platform('Strict Platform')]);
}, 120_000);
afterAll(async () => {
  await svc?.close();
  await strict?.close();
  await proxy?.stop();
  await receiver?.close();
  await auth?.close();
  await new Promise((r) => tlsServer?.close(r));
  rmSync(dir, { recursive: true, force: true });
});

/** One event to a new endpoint at `url` (written to the database when registration would refuse it), attempted once. */
async function deliverTo(service: TestService, platform: CreatedPlatform, url: string, viaDatabase = false) {
  const created = await service.api(platform.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
    url: viaDatabase ? 'https://placeholder.test/h' : url,
    enabled_events: ['*'],
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  if (viaDatabase) await service.ctx.database.query('UPDATE webhook_endpoints SET url = $1 WHERE id = $2', [url, created.body.id]);
  const { event } = await publish(service.ctx, platform.merchant_id);
  await service.ctx.createWorker().drain();
  const d = await service.api(
    platform.keys.sandbox,
    'GET',
    `/api/v1/webhook_deliveries?event_id=${event.id}&endpoint_id=${created.body.id}`,
  );
  await service.api(platform.keys.sandbox, 'DELETE', `/api/v1/webhook_endpoints/${created.body.id}`);
  return d.body.data[0];
}

describe('payhooks check-receiver through the egress proxy', () => {
  it('with PAYHOOKS_EGRESS_PROXY set, every check leaves through the proxy, as deliveries do, and a correct receiver holds every duty', async () => {
    const secret = 'whsec_checkThroughTheProxy0123456789abcdefgh';
    const handler = createWebhookHandler({ secret, store: memoryStore(), onEvent: () => {}, types: ['payment.succeeded'] });
    const server = createHttpServer(toNodeHandler(handler));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      const before = proxy.requests().length;
      const run = await runPayhooks(['check-receiver', `http://127.0.0.1:${port}/webhooks`, '--secret', secret, '--json'], {
        PAYHOOKS_EGRESS_PROXY: proxy.url,
      });
      expect(run.code, run.stderr + run.stdout).toBe(0);
      const report = JSON.parse(run.stdout);
      expect(report.ok).toBe(true);
      // Each check is one request, and the proxy was asked for every one of them.
      const asked = proxy
        .requests()
        .slice(before)
        .filter((line) => line.startsWith(`POST http://127.0.0.1:${port}/webhooks`));
      expect(asked.length, proxy.log()).toBeGreaterThanOrEqual(report.duties.length);
    } finally {
      await handler.close();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});

describe('deliveries through the egress proxy (PAYHOOKS_EGRESS_PROXY)', () => {
  it('plain http: absolute form to the address payhooks resolved and checked (the proxy names it in Host, as HTTP says a proxy must)', async () => {
    const d = await deliverTo(svc, p, `http://receiver.test:${receiver.port}/h?x=1`);
    expect(d.state, JSON.stringify(d.attempts)).toBe('delivered');
    expect(proxy.requests()).toContain(`POST http://127.0.0.1:${receiver.port}/h?x=1 HTTP/1.1`);
    const got = receiver.requests.at(-1)!;
    expect(got.headers.via).toMatch(/tinyproxy/);
    expect(got.headers.host).toBe(`127.0.0.1:${receiver.port}`);
  });

  it('https: a CONNECT tunnel to the checked address, TLS inside it for the endpoint name (SNI, certificate, Host)', async () => {
    const d = await deliverTo(svc, p, `https://receiver.test:${tlsPort}/h`);
    expect(d.state, JSON.stringify(d.attempts)).toBe('delivered');
    expect(proxy.requests()).toContain(`CONNECT 127.0.0.1:${tlsPort} HTTP/1.1`);
    expect(tlsRequests.at(-1)).toEqual({ host: `receiver.test:${tlsPort}`, servername: 'receiver.test' });
  });

  it("an OAuth 2.0 endpoint's token request leaves through the proxy too (a CONNECT tunnel to the token endpoint)", async () => {
    const before = proxy.requests().length;
    const created = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url: receiver.url,
      enabled_events: ['*'],
      tls: { ca_certificates: auth.caPem },
      authentication: {
        type: 'oauth2_client_credentials',
        token_url: auth.tokenUrl,
        client_id: 'proxied',
        client_secret: 'proxied-secret',
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const { event } = await publish(svc.ctx, p.merchant_id);
    await svc.ctx.createWorker().drain();
    const d = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?event_id=${event.id}&endpoint_id=${created.body.id}`);
    expect(d.body.data[0].attempts[0], JSON.stringify(d.body.data[0].attempts[0])).toMatchObject({ status_code: 200 });
    const sent = receiver.requests.find((r) => r.headers['service-event-id'] === event.id && r.headers.authorization !== undefined);
    expect(sent?.headers.authorization).toMatch(/^Bearer \S+$/);
    expect(auth.tokenRequests()).toBe(1);
    const tunnels = proxy.requests().slice(before);
    expect(tunnels, proxy.log()).toContain(`CONNECT 127.0.0.1:${new URL(auth.tokenUrl).port} HTTP/1.1`);
    await svc.api(p.keys.sandbox, 'DELETE', `/api/v1/webhook_endpoints/${created.body.id}`);
  });

  it('a tunnel the proxy refuses (403) is logged as connection_refused, with the proxy and its answer', async () => {
    const d = await deliverTo(svc, p, `https://receiver.test:${receiver.port}/h`);
    expect(d.attempts[0]).toMatchObject({ succeeded: false, status_code: null, error_kind: 'connection_refused' });
    expect(d.attempts[0].error_message).toMatch(
      new RegExp(
        `^the egress proxy 127\\.0\\.0\\.1:${proxy.port} refused to connect to 127\\.0\\.0\\.1:${receiver.port} \\(receiver\\.test\\): 403`,
      ),
    );
  });

  it('the SSRF rules apply before the proxy is asked: forbidden names and addresses never reach it; a public one does', async () => {
    for (const [url, viaDatabase] of [
      [`https://metadata.test/h`, false],
      [`http://receiver.test:${receiver.port}/h`, false],
      [`https://10.1.2.3/h`, true],
      [`http://127.0.0.1:${receiver.port}/h`, true],
    ] as const) {
      const asked = proxy.requests().length;
      const d = await deliverTo(strict, q, url, viaDatabase);
      expect(d.attempts[0], url).toMatchObject({ succeeded: false, error_kind: 'forbidden_address' });
      expect(proxy.requests().length, `${url}: the proxy was asked`).toBe(asked);
    }
    // Control: a public address is asked of the proxy (on 127.0.0.1, an address of the operator's
    // choosing, not an endpoint's), which refuses a tunnel to port 443 here.
    const d = await deliverTo(strict, q, 'https://public.test/h');
    expect(proxy.requests()).toContain('CONNECT 93.184.216.34:443 HTTP/1.1');
    expect(d.attempts[0]).toMatchObject({ error_kind: 'connection_refused' });
  });

  it('a proxy that is down: connection_refused, naming the proxy, for https and http alike', async () => {
    await proxy.stop();
    const tunnel = await deliverTo(svc, p, `https://receiver.test:${tlsPort}/h`);
    const plain = await deliverTo(svc, p, `http://receiver.test:${receiver.port}/h`);
    for (const d of [tunnel, plain]) {
      expect(d.attempts[0]).toMatchObject({ succeeded: false, error_kind: 'connection_refused' });
      expect(d.attempts[0].error_message).toContain(`egress proxy 127.0.0.1:${proxy.port}`);
    }
  });
});

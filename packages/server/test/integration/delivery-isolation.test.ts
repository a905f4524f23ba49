import { readFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startService, type TestService } from '../helpers/service.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { publish } from '../helpers/publish.ts';
import type { Resolver } from '../../src/delivery/safe-lookup.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';

const resolver: Resolver = (hostname, _o, cb) =>
  cb(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);

let svc: TestService;
let p: CreatedPlatform;

beforeAll(async () => {
  svc = await startService(
    { allowPrivateUrls: true, endpointConcurrency: 2, workerConcurrency: 20, attemptTimeoutMs: 10_000, pollIntervalMs: 50 },
    { resolver },
  );
  p = await svc.platform();
});
afterAll(async () => svc?.close());

async function endpoint(url: string): Promise<string> {
  const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url, enabled_events: ['*'] });
  expect(r.status).toBe(201);
  return r.body.id;
}

describe('isolation and failure kinds', () => {
  it('a stuck endpoint holds only its own share: healthy deliveries go out while it has exactly its cap in flight', async () => {
    // Answers after a minute: far past the test, so its two slots stay taken throughout.
    const stuck = await startReceiver(() => ({ status: 200, delayMs: 60_000 }));
    const healthy = await startReceiver();
    const worker = svc.ctx.createWorker();
    try {
      const stuckId = await endpoint(stuck.url);
      for (let i = 0; i < 15; i++) await publish(svc.ctx, p.merchant_id);
      // The stuck endpoint's backlog is due first; the healthy endpoint joins afterwards.
      const healthyId = await endpoint(healthy.url);
      for (let i = 0; i < 15; i++) await publish(svc.ctx, p.merchant_id);
      await worker.start();
      await healthy.waitFor(15);
      // Cap 2: while the stuck endpoint holds its two slots, nothing else of it was sent, and
      // all of the healthy endpoint's deliveries went out.
      expect(stuck.requests.length).toBe(2);
      expect(healthy.requests.length).toBe(15);
      // The receiver sees a request before the worker has recorded its 200 (outcomes are written
      // in small batches), so wait for the log to catch up: all 15 recorded as delivered.
      await vi.waitFor(
        async () => {
          const d = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?endpoint_id=${healthyId}&state=delivered&limit=100`);
          expect(d.body.data.length).toBe(15);
        },
        { timeout: 5_000, interval: 50 },
      );
      await svc.api(p.keys.sandbox, 'DELETE', `/api/v1/webhook_endpoints/${stuckId}`);
      await svc.api(p.keys.sandbox, 'DELETE', `/api/v1/webhook_endpoints/${healthyId}`);
    } finally {
      await stuck.close(); // cuts the held connections, so the worker's stop doesn't wait on them
      await worker.stop();
      await healthy.close();
    }
  });

  it('spec 7: a DNS failure is a failed attempt with error kind dns', async () => {
    const id = await endpoint('http://no-such-host.invalid/h');
    const { event } = await publish(svc.ctx, p.merchant_id);
    await svc.ctx.createWorker().drain();
    const d = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?event_id=${event.id}&endpoint_id=${id}`);
    expect(d.body.data[0].state).toBe('failed_retrying');
    expect(d.body.data[0].attempts[0]).toMatchObject({ succeeded: false, error_kind: 'dns' });
    await svc.api(p.keys.sandbox, 'DELETE', `/api/v1/webhook_endpoints/${id}`);
  });

  it('spec 7: a TLS failure (untrusted certificate) is a failed attempt with error kind tls', async () => {
    const fixtures = new URL('../fixtures/', import.meta.url);
    const server = createHttpsServer(
      { key: readFileSync(new URL('self-signed.key', fixtures)), cert: readFileSync(new URL('self-signed.crt', fixtures)) },
      (_req, res) => res.end('ok'),
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    let hits = 0;
    server.on('request', () => hits++);
    try {
      const id = await endpoint(`https://127.0.0.1:${(server.address() as AddressInfo).port}/h`);
      const { event } = await publish(svc.ctx, p.merchant_id);
      await svc.ctx.createWorker().drain();
      const d = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?event_id=${event.id}&endpoint_id=${id}`);
      expect(d.body.data[0].state).toBe('failed_retrying');
      expect(d.body.data[0].attempts[0]).toMatchObject({ succeeded: false, error_kind: 'tls' });
      expect(hits).toBe(0);
      await svc.api(p.keys.sandbox, 'DELETE', `/api/v1/webhook_endpoints/${id}`);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});

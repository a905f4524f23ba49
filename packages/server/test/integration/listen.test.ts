import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebhookHandler, memoryStore, toNodeHandler, type WebhookEvent, type WebhookHandler } from '../../../receiver/src/index.ts';
import { startService, type TestService } from '../helpers/service.ts';
import { spawnPayhooks, type Spawned } from '../helpers/spawn.ts';
import { payment, publish } from '../helpers/publish.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';
import { HEARTBEAT_MS, LEASE_MS, ListenHub } from '../../src/devtools/listen-sessions.ts';
import { ManualClock } from '../../src/clock.ts';
import { until } from '../helpers/wait.ts';
import { startAuthorizationServer, startTokenGateway } from '../helpers/oauth-server.ts';

/**
 * Issue 12 item 1: `payhooks listen` as a real process against a real service with a running
 * worker, forwarding to a real local receiver (the SDK) that verifies with the printed secret.
 */
let svc: TestService;
let p: CreatedPlatform;
let worker: DeliveryWorker;

/** A local receiver verifying with a secret known only once the CLI printed it. */
async function localReceiver() {
  let handler: WebhookHandler | null = null;
  const received: WebhookEvent[] = [];
  const rejected: string[] = [];
  const server: Server = createServer((req, res) => {
    if (!handler) return res.writeHead(503).end();
    return toNodeHandler(handler)(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`,
    received,
    rejected,
    useSecret(secret: string) {
      handler = createWebhookHandler({
        secret,
        store: memoryStore(),
        onEvent: (e) => void received.push(e),
        onRejected: (e) => void rejected.push(e.reason),
      });
    },
    async close() {
      await handler?.close();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

async function startListen(local: { url: string }, extra: string[] = []): Promise<{ cli: Spawned; secret: string; session: string }> {
  const cli = spawnPayhooks(['listen', '--api-key', p.keys.sandbox, '--forward-to', local.url, '--url', svc.url, ...extra], {});
  await cli.waitFor(/signing secret for this session is whsec_\S+/);
  const secret = /(whsec_\S+)/.exec(cli.output())![1]!;
  const session = /\(session (we_\w+)\)/.exec(cli.output())![1]!;
  return { cli, secret, session };
}

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true, pollIntervalMs: 100 });
  p = await svc.platform();
  worker = svc.ctx.createWorker();
  await worker.start();
});
afterAll(async () => {
  await worker?.stop();
  await svc?.close();
});

describe('payhooks listen', () => {
  it('spec 5.1: forwards a real event with its exact bytes and a valid signature for the session secret; the attempt is in the log; Ctrl-C removes the session', async () => {
    const local = await localReceiver();
    try {
      const { cli, secret, session } = await startListen(local);
      local.useSecret(secret);
      // The session is an endpoint of the listen kind while the CLI is connected.
      const ep = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${session}`);
      expect(ep.status).toBe(200);
      expect(ep.body).toMatchObject({ metadata: { payhooks_listen_session: 'true' }, enabled_events: ['*'], status: 'enabled' });

      const { event } = await publish(svc.ctx, p.merchant_id, { type: 'payment.succeeded' });
      await cli.waitFor(new RegExp(`<-- 200 \\d+ ms ${event.id}`));
      expect(cli.output()).toContain(`--> payment.succeeded ${event.id}`);
      // The SDK answers 200 first and runs onEvent on a later tick (ack, then process), so the
      // CLI's "<-- 200" line can come before the handler has the event.
      await until(async () => (local.received.length > 0 ? true : undefined), { message: 'the local receiver to process the event' });
      expect(local.received.map((e) => e.id)).toEqual([event.id]);
      expect(local.rejected).toEqual([]);
      // The bytes the receiver verified are the stored event's (the SDK verified them over the raw body).
      expect(local.received[0]).toEqual(
        JSON.parse((await svc.ctx.database.query<{ body: string }>('SELECT body FROM events WHERE id = $1', [event.id]))[0]!.body),
      );

      const delivery = await until(
        async () => {
          const r = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?event_id=${event.id}&endpoint_id=${session}`);
          return r.body.data?.[0]?.state === 'delivered' ? r.body.data[0] : undefined;
        },
        { message: 'the delivery to be recorded' },
      );
      const attempts = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries/${delivery.id}`);
      expect(attempts.status).toBe(200);
      expect(attempts.body.attempts).toHaveLength(1);
      expect(attempts.body.attempts[0]).toMatchObject({ status_code: 200, succeeded: true });
      expect(attempts.body.attempts[0].response_body).toContain('received');

      cli.child.kill('SIGINT');
      expect(await cli.exited).toBe(0);
      expect(cli.output()).toContain('Session ended.');
      await until(
        async () => ((await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${session}`)).status === 404 ? true : undefined),
        { message: 'the session to be deleted' },
      );
    } finally {
      await local.close();
    }
  });

  it('the local receiver answering 500 is recorded as a failed attempt with its status and body; --events filters', async () => {
    const server = createServer((_req, res) => res.writeHead(500, { 'content-type': 'text/plain' }).end('local boom'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    try {
      const { cli, session } = await startListen({ url }, ['--events', 'payment.failed']);
      const ep = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${session}`);
      expect(ep.body.enabled_events).toEqual(['payment.failed']);
      const { event } = await publish(svc.ctx, p.merchant_id, { type: 'payment.failed', object: payment({ status: 'failed' }) });
      await cli.waitFor(new RegExp(`<-- 500 \\d+ ms ${event.id}`));
      const delivery = await until(
        async () => {
          const r = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?event_id=${event.id}&endpoint_id=${session}`);
          return r.body.data?.[0]?.state === 'failed_retrying' ? r.body.data[0] : undefined;
        },
        { message: 'the failed attempt' },
      );
      const attempts = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries/${delivery.id}`);
      expect(attempts.body.attempts[0]).toMatchObject({ status_code: 500, succeeded: false, response_body: 'local boom' });
      cli.child.kill('SIGINT');
      expect(await cli.exited).toBe(0);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it('with --token-url/--client-id/--ca, forwards behind a gateway that takes OAuth 2.0 tokens: one token, sent as Bearer', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-listen-oauth-'));
    const auth = await startAuthorizationServer(dir, [{ client_id: 'laptop', client_secret: 'laptop-s3cret' }]);
    const gateway = await startTokenGateway(auth);
    writeFileSync(join(dir, 'ca.pem'), auth.caPem);
    try {
      const flags = ['--token-url', auth.tokenUrl, '--client-id', 'laptop', '--ca', join(dir, 'ca.pem')];
      const cli = spawnPayhooks(['listen', '--api-key', p.keys.sandbox, '--forward-to', gateway.url, '--url', svc.url, ...flags], {
        PAYHOOKS_RECEIVER_CLIENT_SECRET: 'laptop-s3cret',
      });
      await cli.waitFor(/signing secret for this session is whsec_\S+/);
      const first = await publish(svc.ctx, p.merchant_id);
      const second = await publish(svc.ctx, p.merchant_id);
      await cli.waitFor(new RegExp(`<-- 200 \\d+ ms ${first.event.id}`));
      await cli.waitFor(new RegExp(`<-- 200 \\d+ ms ${second.event.id}`));
      expect(gateway.seen.filter((s) => s.status === 200 && s.clientId === 'laptop').length).toBeGreaterThanOrEqual(2);
      expect(auth.tokenRequests()).toBe(1);
      expect(cli.output()).not.toContain('laptop-s3cret');
      cli.child.kill('SIGINT');
      expect(await cli.exited).toBe(0);
    } finally {
      await gateway.close();
      await auth.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a killed CLI (SIGKILL) still ends the session: the server sees its stream close', async () => {
    const local = await localReceiver();
    try {
      const { cli, session } = await startListen(local);
      cli.child.kill('SIGKILL');
      await cli.exited;
      await until(
        async () => ((await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${session}`)).status === 404 ? true : undefined),
        { message: 'the session to be deleted' },
      );
    } finally {
      await local.close();
    }
  });

  it('refuses a live key, and a result for a forward that is not waiting is a 404', async () => {
    const live = await svc.api(p.keys.live, 'POST', '/api/v1/listen_sessions', {});
    expect(live.status).toBe(403);
    expect(live.body.error.code).toBe('sandbox_only');
    const bad = await svc.api(p.keys.sandbox, 'POST', '/api/v1/listen_sessions', { enabled_events: ['payment.nope'] });
    expect(bad.status).toBe(400);
    const result = await svc.api(p.keys.sandbox, 'POST', '/api/v1/listen_sessions/we_unknown/results', {
      forward_id: 'fwd_x',
      status_code: 200,
      body: '',
      duration_ms: 1,
      error: null,
    });
    expect(result.status).toBe(404);
  });

  it('the relay refuses requests not signed for the session (nobody else can push to a laptop)', async () => {
    const r = await fetch(`${svc.url}/listen/we_unknown`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    expect(r.status).toBe(404);
    expect(((await r.json()) as any).error.code).toBe('listen_session_not_connected');
    // A live session refuses what its secret did not sign.
    const local = await localReceiver();
    try {
      const { cli, session } = await startListen(local);
      const forged = await fetch(`${svc.url}/listen/${session}`, {
        method: 'POST',
        body: '{"id":"evt_x"}',
        headers: {
          'content-type': 'application/json',
          'service-event-id': 'evt_x',
          'service-signature': `t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}`,
        },
      });
      expect(forged.status).toBe(400);
      expect(((await forged.json()) as any).error.code).toBe('listen_signature_invalid');
      expect(cli.output()).not.toContain('-->');
      cli.child.kill('SIGINT');
      expect(await cli.exited).toBe(0);
    } finally {
      await local.close();
    }
  });

  it('a session whose process died (lease not renewed) is swept', async () => {
    const clock = new ManualClock(Date.now());
    const hub = new ListenHub(svc.ctx.database, svc.ctx.secrets, clock, svc.ctx.logger, svc.ctx.audit);
    const scope = { platformId: p.platform_id, environment: 'sandbox' as const, actor: { type: 'operator' as const, id: 'test' } };
    const s = await hub.open(scope, { enabledEvents: ['*'], publicUrl: svc.url, push: () => {} });
    clock.advance(HEARTBEAT_MS);
    await hub.heartbeat(s.id);
    clock.advance(LEASE_MS - 1);
    await hub.sweep();
    expect((await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${s.id}`)).status).toBe(200);
    clock.advance(2);
    await hub.sweep();
    expect((await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${s.id}`)).status).toBe(404);
  });

  it('an ordinary endpoint carrying the listen metadata is never swept: sessions are marked in a column merchants cannot write', async () => {
    const created = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url: `${svc.url}/listen/we_not_a_session`,
      enabled_events: ['*'],
      metadata: { payhooks_listen_session: 'true' },
    });
    expect(created.status).toBe(201);
    // Long past any lease: the sweep of a process whose clock is a day ahead.
    const clock = new ManualClock(Date.now() + 24 * 3600_000);
    const hub = new ListenHub(svc.ctx.database, svc.ctx.secrets, clock, svc.ctx.logger, svc.ctx.audit);
    await hub.sweep();
    const after = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${created.body.id}`);
    expect(after.status).toBe(200);
    expect(after.body.metadata).toEqual({ payhooks_listen_session: 'true' });
  });
});

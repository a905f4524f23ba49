import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REQUIRED_LIVE_EVENT_TYPES } from '@payhooks/contract';
import { startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { publish } from '../helpers/publish.ts';
import { drainUntil, portalRequest, portalSignIn, type PortalClient } from '../helpers/portal.ts';
import { buildApp } from '../../src/api/app.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';
import type { Scope } from '../../src/scope.ts';

/**
 * The Merchant Portal's JSON API and its security, over real HTTP on this run's database:
 * sign-in, cookies, CSRF and Origin checks, tenant and environment isolation, the secret shown
 * once, Replay / Resend / bulk replay through DeliveryService, test events, the static UI's CSP.
 */

let svc: TestService;
let a: CreatedPlatform;
let b: CreatedPlatform;
let portalA: PortalClient;
let portalB: PortalClient;
/** A's second session, switched to live (sessions are cheap to keep; sign-ins are rate-limited). */
let liveA: PortalClient;
let worker: DeliveryWorker;
let receiver: TestReceiver;
let failing = true;
const scopeA = (): Scope => ({ platformId: a.platform_id, environment: 'sandbox', actor: { type: 'operator' as const, id: 'test' } });

beforeAll(async () => {
  // Receivers listen on 127.0.0.1; retries a millisecond apart so schedules run out at once.
  svc = await startService({ allowPrivateUrls: true, retryScheduleMs: [1, 1], endpointConcurrency: 2 });
  [a, b] = [await svc.platform('Platform A'), await svc.platform('Platform B')];
  [portalA, portalB, liveA] = [
    await portalSignIn(svc.url, a.portal.email, a.portal.password),
    await portalSignIn(svc.url, b.portal.email, b.portal.password),
    await portalSignIn(svc.url, a.portal.email, a.portal.password),
  ];
  expect((await liveA.call('PUT', '/session/environment', { environment: 'live' })).body.environment).toBe('live');
  worker = svc.ctx.createWorker();
  receiver = await startReceiver(() => (failing ? { status: 503, body: 'down for maintenance' } : { status: 200, body: 'ok' }));
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

async function createEndpoint(client: PortalClient, url = receiver.url, events = ['*']) {
  const r = await client.call('POST', '/endpoints', { url, enabled_events: events });
  expect(r.status, r.text).toBe(201);
  return r.body as { id: string; secret: string };
}

describe('portal sign-in and session', () => {
  it('a wrong password and an unknown email get the same 401 that does not say which was wrong', async () => {
    const wrong = await portalRequest(
      svc.url,
      'POST',
      '/session',
      { email: a.portal.email, password: 'not-the-password' },
      { origin: svc.url },
    );
    const unknown = await portalRequest(
      svc.url,
      'POST',
      '/session',
      { email: 'nobody@example.com', password: a.portal.password },
      { origin: svc.url },
    );
    for (const r of [wrong, unknown]) {
      expect(r.status).toBe(401);
      expect(r.body.error).toEqual({ type: 'authentication_error', code: 'invalid_credentials', message: 'Incorrect email or password.' });
      expect(r.headers.get('set-cookie')).toBeNull();
    }
  });

  it('signing in sets an httpOnly, SameSite=Lax session cookie on /portal (not Secure on plain http) and the session names its Platform', async () => {
    const r = await portalRequest(
      svc.url,
      'POST',
      '/session',
      { email: a.portal.email.toUpperCase(), password: a.portal.password },
      { origin: svc.url },
    );
    expect(r.status).toBe(200);
    const cookie = r.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^payhooks_portal=[\w-]{43};/);
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Lax');
    expect(cookie).toContain('Path=/portal');
    expect(cookie).not.toContain('Secure');
    expect(r.body).toMatchObject({
      platform: { id: a.platform_id, name: 'Platform A' },
      environment: 'sandbox',
      user: { email: a.portal.email },
    });
    expect(r.body.csrf_token).toMatch(/^[\w-]{43}$/);
    const me = await portalRequest(svc.url, 'GET', '/session', undefined, { cookie: cookie.split(';')[0]! });
    expect(me.body.platform.id).toBe(a.platform_id);
    expect((await portalRequest(svc.url, 'GET', '/endpoints', undefined, {})).body.error.code).toBe('not_signed_in');
    // Behind a TLS-terminating proxy the page is https while this process sees http: Secure then.
    const proxied = await portalRequest(svc.url, 'POST', '/session', a.portal, { origin: svc.url.replace('http:', 'https:') });
    expect(proxied.status).toBe(200);
    expect(proxied.headers.get('set-cookie')).toContain('Secure');
    expect((await portalRequest(svc.url, 'GET', '/endpoints', undefined, { cookie: 'payhooks_portal=forged' })).status).toBe(401);
  });

  it('signing out ends the session on the server: its cookie no longer works', async () => {
    const c = await portalSignIn(svc.url, a.portal.email, a.portal.password);
    expect((await c.call('GET', '/endpoints')).status).toBe(200);
    const out = await c.call('DELETE', '/session');
    expect(out.status).toBe(200);
    expect(out.headers.get('set-cookie')).toMatch(/payhooks_portal=;/);
    expect((await c.call('GET', '/endpoints')).status).toBe(401);
  });

  it('sign-in is rate-limited per email and address: after 10 attempts a minute even the right password gets a 429 with Retry-After (sign-in-limits.test.ts has the rest)', async () => {
    const { findUsersByEmail } = await import('../../src/accounts/users.ts');
    const c = await svc.platform('Limited');
    expect(await findUsersByEmail(svc.ctx.database.db, c.portal.email)).toHaveLength(1);
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      statuses.push(
        (await portalRequest(svc.url, 'POST', '/session', { email: c.portal.email, password: `guess-${i}` }, { origin: svc.url })).status,
      );
    }
    expect(statuses).toEqual(Array(10).fill(401));
    const limited = await portalRequest(
      svc.url,
      'POST',
      '/session',
      { email: c.portal.email, password: c.portal.password },
      { origin: svc.url },
    );
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe('rate_limited');
    expect(limited.body.error.message).toMatch(/^Too many sign-in attempts; retry after \d+ s\.$/);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});

describe('portal CSRF protection', () => {
  it('a mutation without the CSRF token, with a wrong one, from another origin or with no Origin is refused with 403, and changes nothing', async () => {
    const body = { url: 'https://csrf.example.com/h', enabled_events: ['*'] };
    const missing = await portalA.call('POST', '/endpoints', body, { csrf: null });
    const wrong = await portalA.call('POST', '/endpoints', body, { csrf: 'x'.repeat(43) });
    const otherSite = await portalA.call('POST', '/endpoints', body, { origin: 'https://evil.example' });
    const noOrigin = await portalA.call('POST', '/endpoints', body, { origin: null });
    expect([missing, wrong, otherSite, noOrigin].map((r) => [r.status, r.body.error.code])).toEqual([
      [403, 'csrf_token_invalid'],
      [403, 'csrf_token_invalid'],
      [403, 'cross_origin_request'],
      [403, 'origin_missing'],
    ]);
    // Another Platform's session token is not this session's either.
    expect((await portalA.call('POST', '/endpoints', body, { csrf: portalB.session.csrf_token })).status).toBe(403);
    const list = await portalA.call('GET', '/endpoints');
    expect(list.body.data.map((e: { url: string }) => e.url)).not.toContain(body.url);
    // Sign-in from another site is refused too (login CSRF).
    const login = await portalRequest(svc.url, 'POST', '/session', a.portal, { origin: 'https://evil.example' });
    expect(login.status).toBe(403);
    // Sign-out and environment switches are mutations like any other.
    expect((await portalA.call('PUT', '/session/environment', { environment: 'live' }, { csrf: null })).status).toBe(403);
    expect((await portalA.call('DELETE', '/session', undefined, { csrf: null })).status).toBe(403);
  });
});

describe('portal endpoints', () => {
  it('spec 2.3, 4.1 rule 2: the whsec_ secret is in the create response only; no other portal response carries one', async () => {
    const ep = await createEndpoint(portalA, 'https://secret.example.com/h');
    expect(ep.secret).toMatch(/^whsec_/);
    await publish(svc.ctx, a.merchant_id);
    const d = (await portalA.call('GET', `/deliveries?endpoint_id=${ep.id}`)).body.data[0];
    const responses = await Promise.all([
      portalA.call('GET', '/endpoints'),
      portalA.call('GET', `/endpoints/${ep.id}`),
      portalA.call('PATCH', `/endpoints/${ep.id}`, { description: 'checked' }),
      portalA.call('GET', `/deliveries?endpoint_id=${ep.id}`),
      portalA.call('GET', `/deliveries/${d.id}`),
      portalA.call('GET', `/events/${d.event_id}`),
      portalA.call('GET', '/session'),
    ]);
    for (const r of responses) {
      expect(r.status, r.text).toBe(200);
      expect(r.text).not.toContain('whsec_');
      expect(r.text).not.toContain(ep.secret.slice(6));
    }
    expect(responses[1]!.body).toMatchObject({
      id: ep.id,
      url: 'https://secret.example.com/h',
      status: 'enabled',
      stats: { attempts: 0, success_rate: null },
    });
  });

  it('spec 4.1 rule 3: in live, an endpoint without the required event types is refused; with them it is created', async () => {
    const c = liveA;
    const short = await c.call('POST', '/endpoints', { url: 'https://live.example.com/h', enabled_events: ['payment.succeeded'] });
    expect(short.status).toBe(422);
    expect(short.body.error.code).toBe('live_subscription_incomplete');
    const ok = await c.call('POST', '/endpoints', { url: 'https://live.example.com/h', enabled_events: [...REQUIRED_LIVE_EVENT_TYPES] });
    expect(ok.status).toBe(201);
    expect(ok.body.environment).toBe('live');
  });

  it('edit, disable, enable and delete go through the endpoint service', async () => {
    const ep = await createEndpoint(portalA, 'https://edit.example.com/h');
    const edited = await portalA.call('PATCH', `/endpoints/${ep.id}`, {
      url: 'https://edit.example.com/v2',
      enabled_events: ['payment.failed'],
      description: 'v2',
    });
    expect(edited.body).toMatchObject({ url: 'https://edit.example.com/v2', enabled_events: ['payment.failed'], description: 'v2' });
    expect((await portalA.call('PATCH', `/endpoints/${ep.id}`, { status: 'disabled' })).body.status).toBe('disabled');
    expect((await portalA.call('PATCH', `/endpoints/${ep.id}`, { status: 'enabled' })).body.status).toBe('enabled');
    const bad = await portalA.call('PATCH', `/endpoints/${ep.id}`, { url: 'not a url' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.param).toBe('url');
    expect((await portalA.call('DELETE', `/endpoints/${ep.id}`)).body).toEqual({ id: ep.id, object: 'webhook_endpoint', deleted: true });
    expect((await portalA.call('GET', `/endpoints/${ep.id}`)).status).toBe(404);
  });

  it('spec 1: Send test event is a real sandbox payment moved to succeeded (retrievable by GET), its payment.succeeded delivered to that one endpoint only; refused in live', async () => {
    const target = await createEndpoint(portalA, `${receiver.url}?target`, ['payment.failed']);
    const other = await createEndpoint(portalA, `${receiver.url}?other`, ['*']);
    const sent = await portalA.call('POST', `/endpoints/${target.id}/test_event`);
    expect(sent.status, sent.text).toBe(201);
    expect(sent.body).toMatchObject({
      type: 'payment.succeeded',
      event_id: expect.stringMatching(/^evt_/),
      delivery_id: expect.stringMatching(/^whd_/),
      payment_id: expect.stringMatching(/^pay_/),
    });
    // A receiver that confirms by a server-side GET finds the payment, succeeded, with the test metadata.
    const payment = await svc.api(a.keys.sandbox, 'GET', `/api/v1/payments/${sent.body.payment_id}`);
    expect(payment.status).toBe(200);
    expect(payment.body).toMatchObject({ id: sent.body.payment_id, status: 'succeeded', amount: '10.00', metadata: { test: 'true' } });
    // Its earlier events happened and are recorded, but no endpoint got them: one test, one delivery.
    const events = (await svc.api(a.keys.sandbox, 'GET', '/api/v1/events?limit=10')).body.data.filter(
      (e: { data: { object: { id: string } } }) => e.data.object.id === sent.body.payment_id,
    );
    expect(events.map((e: { type: string }) => e.type).sort()).toEqual(['payment.created', 'payment.processing', 'payment.succeeded']);
    for (const e of events) {
      const ds = (await portalA.call('GET', `/deliveries?event_id=${e.id}`)).body.data;
      expect(ds.map((d: { endpoint_id: string }) => d.endpoint_id)).toEqual(e.type === 'payment.succeeded' ? [target.id] : []);
    }
    const forEvent = await portalA.call('GET', `/deliveries?event_id=${sent.body.event_id}`);
    expect(forEvent.body.data.map((d: { endpoint_id: string }) => d.endpoint_id)).toEqual([target.id]);
    const event = await portalA.call('GET', `/events/${sent.body.event_id}`);
    expect(JSON.parse(event.body.body).data.object).toMatchObject({ object: 'payment', status: 'succeeded', metadata: { test: 'true' } });
    expect((await portalA.call('GET', `/deliveries?endpoint_id=${other.id}&event_id=${sent.body.event_id}`)).body.data).toEqual([]);

    const live = liveA;
    const liveEp = await createEndpoint(live, 'https://live2.example.com/h', [...REQUIRED_LIVE_EVENT_TYPES]);
    const refused = await live.call('POST', `/endpoints/${liveEp.id}/test_event`);
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('test_events_sandbox_only');
  });
});

describe('portal Replay, Resend and bulk replay (spec 3.2, 8)', () => {
  it('spec 3.2: Replay of an exhausted delivery makes one manual attempt; once the receiver answers 2xx it is delivered', async () => {
    failing = true;
    const ep = await createEndpoint(portalA, `${receiver.url}?replay`);
    const { event } = await publish(svc.ctx, a.merchant_id);
    await drainUntil(svc.ctx, worker, scopeA(), ep.id, 'exhausted');
    const [row] = (await portalA.call('GET', `/deliveries?endpoint_id=${ep.id}&state=exhausted`)).body.data;
    expect(row).toMatchObject({
      event_id: event.id,
      event_type: 'payment.succeeded',
      state: 'exhausted',
      attempt_count: 3,
      last_attempt: { status_code: 503, response_body: 'down for maintenance' },
    });

    const stillFailing = await portalA.call('POST', `/deliveries/${row.id}/replay`);
    expect(stillFailing.body).toMatchObject({ state: 'exhausted', attempt_count: 4 });
    failing = false;
    const replayed = await portalA.call('POST', `/deliveries/${row.id}/replay`);
    expect(replayed.status).toBe(200);
    expect(replayed.body).toMatchObject({ state: 'delivered', attempt_count: 5, next_attempt_at: null, event_type: 'payment.succeeded' });
    expect(replayed.body.attempts.map((x: { trigger: string; status_code: number }) => [x.trigger, x.status_code])).toEqual([
      ['automatic', 503],
      ['automatic', 503],
      ['automatic', 503],
      ['manual', 503],
      ['manual', 200],
    ]);
    expect(JSON.parse(replayed.body.event_body).id).toBe(event.id);
    const again = await portalA.call('POST', `/deliveries/${row.id}/replay`);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('delivery_not_replayable');
  });

  it('Resend of a delivered delivery adds a manual attempt and leaves it delivered, even when that attempt fails; a failed one is not resendable', async () => {
    failing = false;
    const ep = await createEndpoint(portalA, `${receiver.url}?resend`);
    await publish(svc.ctx, a.merchant_id);
    await drainUntil(svc.ctx, worker, scopeA(), ep.id, 'delivered');
    const [row] = (await portalA.call('GET', `/deliveries?endpoint_id=${ep.id}`)).body.data;
    const resent = await portalA.call('POST', `/deliveries/${row.id}/resend`);
    expect(resent.body).toMatchObject({ state: 'delivered', attempt_count: 2 });
    expect(resent.body.attempts[1]).toMatchObject({ trigger: 'manual', succeeded: true, status_code: 200 });
    failing = true;
    const failed = await portalA.call('POST', `/deliveries/${row.id}/resend`);
    expect(failed.body).toMatchObject({ state: 'delivered', attempt_count: 3, next_attempt_at: null });
    expect(failed.body.attempts[2]).toMatchObject({ trigger: 'manual', succeeded: false, status_code: 503 });

    const broken = await createEndpoint(portalA, `${receiver.url}?not-resendable`);
    await publish(svc.ctx, a.merchant_id);
    await drainUntil(svc.ctx, worker, scopeA(), broken.id, 'exhausted');
    const [ex] = (await portalA.call('GET', `/deliveries?endpoint_id=${broken.id}`)).body.data;
    const refused = await portalA.call('POST', `/deliveries/${ex.id}/resend`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('delivery_not_resendable');
  });

  it('Replay all failed since… replays every failed delivery of one endpoint with never more attempts in flight than the per-endpoint cap', async () => {
    // A receiver that counts requests open at the same time, answering each after a pause.
    let open = 0;
    let maxOpen = 0;
    let up = false;
    const server: Server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        open++;
        maxOpen = Math.max(maxOpen, open);
        setTimeout(
          () => {
            open--;
            res.writeHead(up ? 200 : 500).end(up ? 'ok' : 'no');
          },
          up ? 40 : 0,
        );
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/bulk`;
      const ep = await createEndpoint(portalA, url, ['payment.failed']);
      const since = new Date(Date.now() - 1000).toISOString();
      for (let i = 0; i < 7; i++)
        await publish(svc.ctx, a.merchant_id, {
          type: 'payment.failed',
          object: { id: `pay_bulk${i}`, object: 'payment', status: 'failed', amount: '1.00', asset_code: 'USDC.ETH', metadata: {} },
        });
      await drainUntil(svc.ctx, worker, scopeA(), ep.id, 'exhausted', 7);
      up = true;
      maxOpen = 0;
      const started = await portalA.call('POST', `/endpoints/${ep.id}/bulk_replays`, { since });
      expect(started.status, started.text).toBe(202);
      expect(started.body).toMatchObject({ object: 'bulk_replay', endpoint_id: ep.id, status: 'running', total: 7 });
      // Another Platform can't read the job.
      expect((await portalB.call('GET', `/bulk_replays/${started.body.id}`)).status).toBe(404);
      await svc.ctx.bulkReplays.settled(started.body.id);
      const done = await portalA.call('GET', `/bulk_replays/${started.body.id}`);
      expect(done.body).toMatchObject({ status: 'finished', total: 7, attempted: 7, delivered: 7, failed: 0, skipped: 0 });
      expect(maxOpen).toBeGreaterThan(0);
      expect(maxOpen).toBeLessThanOrEqual(svc.ctx.config.endpointConcurrency);
      expect(svc.ctx.deliveries.manualGate.peak.get(ep.id)).toBeLessThanOrEqual(2);
      const left = await portalA.call('GET', `/deliveries?endpoint_id=${ep.id}&state=exhausted`);
      expect(left.body.data).toEqual([]);
      // Nothing failed since now: an empty job.
      const none = await portalA.call('POST', `/endpoints/${ep.id}/bulk_replays`, { since: new Date(Date.now() + 60_000).toISOString() });
      expect(none.body.total).toBe(0);
      const bad = await portalA.call('POST', `/endpoints/${ep.id}/bulk_replays`, { since: 'yesterday' });
      expect(bad.status).toBe(400);
      expect(bad.body.error.param).toBe('since');

      // Progress lives in the database: a job whose process stopped updating it shows as
      // stopped, and a running one (another process's) blocks a second start for the endpoint.
      await svc.ctx.database.query(`UPDATE bulk_replays SET status = 'running', updated_at = now() WHERE id = $1`, [started.body.id]);
      const twice = await portalA.call('POST', `/endpoints/${ep.id}/bulk_replays`, { since });
      expect(twice.status).toBe(409);
      expect(twice.body.error.code).toBe('bulk_replay_running');
      await svc.ctx.database.query(`UPDATE bulk_replays SET updated_at = now() - interval '10 minutes' WHERE id = $1`, [started.body.id]);
      expect((await portalA.call('GET', `/bulk_replays/${started.body.id}`)).body.status).toBe('stopped');
      expect((await portalA.call('POST', `/endpoints/${ep.id}/bulk_replays`, { since })).status).toBe(202);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});

describe('portal delivery log filters, request headers, bulk replay preview and shop settings', () => {
  it('the log filters by event type and created range, and finds deliveries by event id or by the payment or checkout session they are about', async () => {
    failing = false;
    const ep = await createEndpoint(portalA, `${receiver.url}?filters`);
    const before = new Date(Date.now() - 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const paid = await publish(svc.ctx, a.merchant_id, {
      object: { id: 'pay_filter1', object: 'payment', status: 'succeeded', amount: '1.00', asset_code: 'USDC.ETH', metadata: {} },
    });
    const failed = await publish(svc.ctx, a.merchant_id, {
      type: 'payment.failed',
      object: { id: 'pay_filter2', object: 'payment', status: 'failed', amount: '1.00', asset_code: 'USDC.ETH', metadata: {} },
    });
    const later = new Date(Date.now() + 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const ids = async (query: string) =>
      ((await portalA.call('GET', `/deliveries?endpoint_id=${ep.id}&${query}`)).body.data as Array<{ event_id: string }>).map(
        (d) => d.event_id,
      );

    expect(await ids('type=payment.failed')).toEqual([failed.event.id]);
    expect(await ids('type=payment.succeeded')).toEqual([paid.event.id]);
    expect(await ids(`created[gte]=${before}`)).toEqual([failed.event.id, paid.event.id]);
    expect(await ids(`created[gte]=${later}`)).toEqual([]);
    expect(await ids(`created[lt]=${before}`)).toEqual([]);
    expect(await ids(`created[gte]=${before}&created[lt]=${later}&type=payment.succeeded`)).toEqual([paid.event.id]);
    expect(await ids('object_id=pay_filter2')).toEqual([failed.event.id]);
    expect(await ids(`event_id=${paid.event.id}`)).toEqual([paid.event.id]);

    const badType = await portalA.call('GET', '/deliveries?type=payment.teleported');
    expect(badType.status).toBe(400);
    expect(badType.body.error.param).toBe('type');
    const badTime = await portalA.call('GET', '/deliveries?created[gte]=yesterday');
    expect(badTime.status).toBe(400);
    expect(badTime.body.error.param).toBe('created[gte]');
    // Another Platform finds nothing by A's object ids.
    expect((await portalB.call('GET', '/deliveries?object_id=pay_filter1')).body.data).toEqual([]);
  });

  it('spec 5: each attempt shows the headers it was sent with, the signature exactly as the receiver got it', async () => {
    failing = false;
    const ep = await createEndpoint(portalA, `${receiver.url}?headers`);
    const { event } = await publish(svc.ctx, a.merchant_id);
    await drainUntil(svc.ctx, worker, scopeA(), ep.id, 'delivered');
    const [row] = (await portalA.call('GET', `/deliveries?endpoint_id=${ep.id}`)).body.data;
    const d = (await portalA.call('GET', `/deliveries/${row.id}`)).body;
    const sent = receiver.requests.find((r) => r.path === '/webhooks?headers' && r.headers['service-event-id'] === event.id)!;
    expect(d.attempts[0].request_headers).toEqual({
      'Content-Type': 'application/json',
      'User-Agent': sent.headers['user-agent'],
      'Service-Event-Id': event.id,
      'Service-Signature': sent.headers['service-signature'],
    });
    expect(d.attempts[0].request_headers['Service-Signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
  });

  it('bulk replay preview counts what a replay since that time would send, replays nothing, and is scoped to the Platform', async () => {
    failing = true;
    const ep = await createEndpoint(portalA, `${receiver.url}?preview`, ['payment.failed']);
    const since = new Date(Date.now() - 1000).toISOString();
    for (let i = 0; i < 2; i++)
      await publish(svc.ctx, a.merchant_id, {
        type: 'payment.failed',
        object: { id: `pay_preview${i}`, object: 'payment', status: 'failed', amount: '1.00', asset_code: 'USDC.ETH', metadata: {} },
      });
    await drainUntil(svc.ctx, worker, scopeA(), ep.id, 'exhausted', 2);
    const requests = receiver.requests.length;
    const preview = await portalA.call('GET', `/endpoints/${ep.id}/bulk_replays/preview?since=${encodeURIComponent(since)}`);
    expect(preview.status, preview.text).toBe(200);
    expect(preview.body).toMatchObject({ object: 'bulk_replay_preview', endpoint_id: ep.id, count: 2 });
    const future = new Date(Date.now() + 60_000).toISOString();
    expect((await portalA.call('GET', `/endpoints/${ep.id}/bulk_replays/preview?since=${encodeURIComponent(future)}`)).body.count).toBe(0);
    expect(receiver.requests.length).toBe(requests);
    const states = (await portalA.call('GET', `/deliveries?endpoint_id=${ep.id}`)).body.data.map((d: { state: string }) => d.state);
    expect(states).toEqual(['exhausted', 'exhausted']);
    const bad = await portalA.call('GET', `/endpoints/${ep.id}/bulk_replays/preview?since=yesterday`);
    expect(bad.status).toBe(400);
    expect(bad.body.error.param).toBe('since');
    const other = await portalB.call('GET', `/endpoints/${ep.id}/bulk_replays/preview?since=${encodeURIComponent(since)}`);
    expect(other.status).toBe(404);
    expect(other.body.error.code).toBe('resource_missing');
  });

  it("the shop's display name defaults to the Platform's name, is validated, and belongs to one Platform", async () => {
    const initial = await portalA.call('GET', '/settings');
    const defaults = {
      require_two_factor: false,
      asymmetric_signature_default: false,
      theme: { accent_color: null, name: null, logo: null, mode: 'auto' },
      // Health mail: live on, sandbox off, no extra address, links to payhooks' portal.
      alerts: { mail_live: true, mail_sandbox: false, emails: [], endpoint_link_template: null },
    };
    expect(initial.body).toEqual({ object: 'platform_settings', display_name: null, platform_name: 'Platform A', ...defaults });
    const set = await portalA.call('PUT', '/settings', { display_name: '  Acme Coffee  ' });
    expect(set.status, set.text).toBe(200);
    expect(set.body.display_name).toBe('Acme Coffee');
    expect((await portalA.call('GET', '/settings')).body.display_name).toBe('Acme Coffee');
    expect((await portalB.call('GET', '/settings')).body).toEqual({
      object: 'platform_settings',
      display_name: null,
      platform_name: 'Platform B',
      ...defaults,
    });
    for (const bad of ['x'.repeat(101), 'line\nbreak', 42]) {
      const r = await portalA.call('PUT', '/settings', { display_name: bad });
      expect(r.status, String(bad)).toBe(400);
      expect(r.body.error.param).toBe('display_name');
    }
    const noCsrf = await portalA.call('PUT', '/settings', { display_name: 'Evil' }, { csrf: null });
    expect(noCsrf.status).toBe(403);
    const cleared = await portalA.call('PUT', '/settings', { display_name: '' });
    expect(cleared.body.display_name).toBeNull();
    expect((await portalA.call('GET', '/settings')).body.display_name).toBeNull();
  });
});

describe('portal tenant and environment isolation (spec 4.1 rule 1)', () => {
  it("another Platform's endpoint, delivery and event answer 404 on every portal route, exactly like unknown ids", async () => {
    failing = true;
    const ep = await createEndpoint(portalA, `${receiver.url}?isolation`);
    const { event } = await publish(svc.ctx, a.merchant_id);
    await drainUntil(svc.ctx, worker, scopeA(), ep.id, 'exhausted');
    const [d] = (await portalA.call('GET', `/deliveries?endpoint_id=${ep.id}`)).body.data;
    const attempts = [
      portalB.call('GET', `/endpoints/${ep.id}`),
      portalB.call('PATCH', `/endpoints/${ep.id}`, { description: 'mine now' }),
      portalB.call('DELETE', `/endpoints/${ep.id}`),
      portalB.call('POST', `/endpoints/${ep.id}/test_event`),
      portalB.call('POST', `/endpoints/${ep.id}/bulk_replays`, { since: '2020-01-01T00:00:00Z' }),
      portalB.call('GET', `/deliveries/${d.id}`),
      portalB.call('POST', `/deliveries/${d.id}/replay`),
      portalB.call('POST', `/deliveries/${d.id}/resend`),
      portalB.call('GET', `/events/${event.id}`),
    ];
    for (const r of await Promise.all(attempts)) {
      expect(r.status, r.text).toBe(404);
      expect(r.body.error.code).toBe('resource_missing');
    }
    const lists = await Promise.all([
      portalB.call('GET', `/deliveries?endpoint_id=${ep.id}`),
      portalB.call('GET', `/deliveries?event_id=${event.id}`),
      portalB.call('GET', '/endpoints'),
    ]);
    for (const l of lists) expect(l.text).not.toContain(ep.id);
    const cursor = await portalB.call('GET', `/deliveries?starting_after=${d.id}`);
    expect(cursor.status).toBe(400);
    // Nothing was attempted on B's behalf.
    expect((await portalA.call('GET', `/deliveries/${d.id}`)).body.attempt_count).toBe(3);
  });

  it('after switching to live, sandbox ids answer 404; switching back shows them again', async () => {
    const c = liveA;
    await c.call('PUT', '/session/environment', { environment: 'sandbox' });
    const ep = await createEndpoint(c, 'https://env.example.com/h');
    await c.call('PUT', '/session/environment', { environment: 'live' });
    expect((await c.call('GET', `/endpoints/${ep.id}`)).status).toBe(404);
    expect((await c.call('GET', '/endpoints')).text).not.toContain(ep.id);
    await c.call('PUT', '/session/environment', { environment: 'sandbox' });
    expect((await c.call('GET', `/endpoints/${ep.id}`)).status).toBe(200);
  });
});

describe('portal UI serving', () => {
  it('the page is served under /portal/ (deep links too) with a strict Content-Security-Policy and no inline script', async () => {
    for (const path of ['/portal/', '/portal/webhooks/endpoints/we_123']) {
      const res = await fetch(svc.url + path);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/html');
      const csp = res.headers.get('content-security-policy')!;
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("object-src 'none'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(csp).not.toContain('unsafe-inline');
      const html = await res.text();
      const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
      expect(scripts.length).toBeGreaterThan(0);
      for (const [, attrs, body] of scripts) {
        expect(attrs).toMatch(/src="\/portal\/assets\//);
        expect(body!.trim()).toBe('');
      }
    }
    expect((await fetch(`${svc.url}/portal`, { redirect: 'manual' })).headers.get('location')).toBe('/portal/');
  });

  it('without a built UI, /portal/ answers 503 saying how to build it; the API still works', async () => {
    const app = await buildApp(svc.ctx, { portalDist: '/nonexistent/portal-dist' });
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const res = await fetch(`${url}/portal/`);
      expect(res.status).toBe(503);
      expect(await res.text()).toContain('npm run build -w packages/portal-ui');
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
      expect((await portalRequest(url, 'GET', '/session', undefined, { cookie: portalA.cookie })).status).toBe(200);
    } finally {
      await app.close();
    }
  });
});

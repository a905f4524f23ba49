import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../../receiver/src/index.ts';
import { ManualClock, startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type Received, type TestReceiver } from '../helpers/receiver.ts';
import { publish } from '../helpers/publish.ts';
import { internalCall, portalSignIn } from '../helpers/portal.ts';
import { startSmtp } from '../helpers/smtp.ts';
import { createPortalUser } from '../../src/accounts/users.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';
import type { AutoDisableJob } from '../../src/endpoints/auto-disable.ts';

/**
 * Operator endpoints (tenancy/operator-endpoints.ts): the payment service registers, through the
 * internal API, endpoints that get every endpoint health change of one Platform or of all,
 * signed and retried like any delivery, and can turn payhooks' own mail off for a Platform. The
 * merchant never sees them. On the injected clock, against real receivers and a real SMTP server.
 */

const MIN = 60_000;
const HOUR = 60 * MIN;
const TOKEN = 'operator-endpoints-internal-token-0123456789abcdef';
const T0 = Date.UTC(2026, 11, 3, 9, 0, 0);
const clock = new ManualClock(T0);
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let svc: TestService;
let worker: DeliveryWorker;
let sweepers: AutoDisableJob[];
let merchantSide: TestReceiver;
let pager: TestReceiver;
let fleet: TestReceiver;
let pagerUp = true;
/** The injected clock's time when each request arrived: what a receiver checks the signature's age against. */
const receivedAt = new WeakMap<Received, Date>();

beforeAll(async () => {
  smtp = await startSmtp();
  svc = await startService(
    {
      allowPrivateUrls: true,
      allowHttpUrls: true,
      internalToken: TOKEN,
      smtpUrl: smtp.url,
      smtpFrom: 'Webhooks <webhooks@payments.example>',
      publicUrl: 'https://webhooks.payments.example',
      retryScheduleMs: Array(7).fill(5 * MIN),
      autoDisableAfterMs: 4 * HOUR,
      healthFailingAfterMs: 15 * MIN,
      healthFailingAttempts: 3,
    },
    { clock },
  );
  worker = svc.ctx.createWorker();
  sweepers = [svc.ctx.createAutoDisableJob(), svc.ctx.createAutoDisableJob()];
  merchantSide = await startReceiver((req) => (req.path.startsWith('/down') ? { status: 503, body: 'maintenance' } : { status: 200 }));
  pager = await startReceiver((req) => {
    receivedAt.set(req, clock.now());
    return pagerUp ? { status: 200 } : { status: 500, body: 'pager down' };
  });
  fleet = await startReceiver((req) => {
    receivedAt.set(req, clock.now());
    return { status: 200 };
  });
});
afterAll(async () => {
  await Promise.all([merchantSide?.close(), pager?.close(), fleet?.close()]);
  await svc?.close();
  await smtp?.close();
});

const at = (path: string) => merchantSide.url.replace('/webhooks', path);
const operator = (method: string, path: string, body?: unknown) => internalCall(svc.url, TOKEN, method, path, body);

async function step(ms: number) {
  clock.set(ms);
  await worker.drain();
  await Promise.all(sweepers.map((s) => s.runOnce()));
}

const merchantEndpoint = async (p: CreatedPlatform, path: string) =>
  (await svc.api(p.keys.live, 'POST', '/api/v1/webhook_endpoints', { url: at(path), enabled_events: ['*'] })).body as { id: string };

/** The requests a receiver got from one operator endpoint, verified with @payhooks/receiver under its secret. */
const verified = (r: TestReceiver, secret: string, from = 0) =>
  r.requests
    .slice(from)
    .map((req: Received) =>
      verifyWebhook({ secret, body: req.raw, headers: req.headers as Record<string, string>, now: receivedAt.get(req)! }),
    );

describe('operator endpoints', () => {
  it("a Platform's operator endpoint and a fleet-wide one get each health change (failing, each warning, disabled, recovered), signed; the Platform's mail is off and nothing is mailed", async () => {
    const acme = await svc.platform('Acme Embedded');
    const other = await svc.platform('Other Shop');
    const dev = await createPortalUser(
      svc.ctx.database.db,
      { platformId: acme.platform_id, email: 'dev@acme.example', role: 'developer', password: 'a long enough password' },
      svc.ctx.passwordCost,
    );
    // The payment service alerts through its own channels for this Platform.
    const off = await operator('PUT', `/platforms/${acme.platform_id}/alert_settings`, { mail_live: false });
    expect(off.status, off.text).toBe(200);
    const forAcme = await operator('POST', '/operator_endpoints', {
      url: pager.url,
      environment: 'live',
      platform_id: acme.platform_id,
      description: 'Pager for Acme',
    });
    expect(forAcme.status, forAcme.text).toBe(201);
    expect(forAcme.body).toMatchObject({ platform_id: acme.platform_id, enabled_events: ['*'], environment: 'live', status: 'enabled' });
    expect(forAcme.body.secret).toMatch(/^whsec_/);
    const everyone = await operator('POST', '/operator_endpoints', {
      url: fleet.url,
      environment: 'live',
      enabled_events: ['webhook_endpoint.failing'],
    });
    expect(everyone.status, everyone.text).toBe(201);
    expect(everyone.body.platform_id).toBeNull();
    const listed = await operator('GET', '/operator_endpoints?environment=live');
    expect(listed.body.data.map((e: { id: string }) => e.id).sort()).toEqual([everyone.body.id, forAcme.body.id].sort());
    expect(JSON.stringify(listed.body)).not.toContain('whsec_');

    const ep = await merchantEndpoint(acme, '/down/acme');
    const otherEp = await merchantEndpoint(other, '/down/other');
    const start = clock.now().getTime();
    const mailsBefore = smtp.mails.length;
    // Two deliveries each: auto-disable wants at least 10 failed attempts (8 per delivery).
    for (const m of [acme, acme, other]) await publish(svc.ctx, m.merchant_id, { environment: 'live' });
    for (const m of [0, 5, 10, 15]) await step(start + m * MIN);
    await step(start + 2 * HOUR);
    await step(start + 3.6 * HOUR);
    await step(start + 4 * HOUR);
    const fixed = await svc.api(acme.keys.live, 'PATCH', `/api/v1/webhook_endpoints/${ep.id}`, { url: at('/up/acme'), status: 'enabled' });
    expect(fixed.status).toBe(200);
    await publish(svc.ctx, acme.merchant_id, { environment: 'live' });
    await step(start + 5 * HOUR);
    await step(start + 5 * HOUR + MIN);
    await step(start + 5 * HOUR + 2 * MIN);

    // The Platform's pager: every change of Acme's endpoint, once each, and nothing of Other's.
    const paged = verified(pager, forAcme.body.secret);
    const seen = paged.map((e) => {
      const o = e.data.object as { id: string; platform_id: string; health: { state: string; warning: number | null }; status: string };
      return [e.type, o.id, o.platform_id, o.health.warning];
    });
    expect(seen).toEqual([
      ['webhook_endpoint.failing', ep.id, acme.platform_id, null],
      ['webhook_endpoint.failing', ep.id, acme.platform_id, 50],
      ['webhook_endpoint.failing', ep.id, acme.platform_id, 90],
      ['webhook_endpoint.disabled', ep.id, acme.platform_id, null],
      ['webhook_endpoint.recovered', ep.id, acme.platform_id, null],
    ]);
    expect(paged.every((e) => e.merchant_id === 'mch_operator' && e.environment === 'live')).toBe(true);
    // Fleet-wide and subscribed to failing only: both Platforms' failing, with their warnings.
    const all = verified(fleet, everyone.body.secret).map((e) => [e.type, (e.data.object as { id: string }).id]);
    expect(all.filter(([, id]) => id === ep.id).map(([t]) => t)).toEqual(Array(3).fill('webhook_endpoint.failing'));
    expect(all.filter(([, id]) => id === otherEp.id).map(([t]) => t)).toEqual(Array(3).fill('webhook_endpoint.failing'));
    // Mail off for Acme: its developer got nothing; the merchant's own health state moved as before.
    expect(smtp.mails.slice(mailsBefore).filter((m) => m.to === dev.email || m.to === acme.portal.email)).toEqual([]);
    // ...while Other Shop, mail on (the live default), was mailed about the same kind of change.
    expect(smtp.mails.slice(mailsBefore).filter((m) => m.to === other.portal.email).length).toBeGreaterThan(0);
    expect((await svc.api(acme.keys.live, 'GET', `/api/v1/webhook_endpoints/${ep.id}`)).body.health.state).toBe('recovered');
  });

  it('signed and retried like any delivery, with the same settings as a merchant endpoint (custom headers, rate cap): a failing operator endpoint is retried and its delivery log is readable through the internal API', async () => {
    const p = await svc.platform('Retried Shop');
    const created = await operator('POST', '/operator_endpoints', {
      url: pager.url,
      environment: 'live',
      platform_id: p.platform_id,
      headers: { 'X-Pager-Route': 'webhooks-team' },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({ headers: { 'X-Pager-Route': 'webhooks-team' }, max_requests_per_second: null });
    await merchantEndpoint(p, '/down/retried');
    const start = clock.now().getTime();
    pagerUp = false;
    const before = pager.requests.length;
    await publish(svc.ctx, p.merchant_id, { environment: 'live' });
    // The sweep at minute 15 publishes webhook_endpoint.failing; the pager refuses its first attempt.
    for (const m of [0, 5, 10, 15, 16]) await step(start + m * MIN);
    pagerUp = true;
    await step(start + 21 * MIN);
    const tries = verified(pager, created.body.secret, before);
    expect(tries.map((e) => e.type)).toEqual(['webhook_endpoint.failing', 'webhook_endpoint.failing']);
    expect(tries[0]!.id).toBe(tries[1]!.id);
    expect(pager.requests.slice(before).map((r) => r.headers['x-pager-route'])).toEqual(['webhooks-team', 'webhooks-team']);
    const log = await operator('GET', `/operator_endpoints/${created.body.id}/deliveries`);
    expect(log.status, log.text).toBe(200);
    expect(log.body.data).toHaveLength(1);
    expect(log.body.data[0]).toMatchObject({ state: 'delivered', endpoint_id: created.body.id });
    expect(log.body.data[0].attempts.map((a: { status_code: number }) => a.status_code)).toEqual([500, 200]);
    // The rest of a merchant endpoint's settings are taken too (a rate cap here; the cap itself is
    // tested on wall-clock time in rate-cap.postgres.test.ts, not on this injected clock).
    const capped = await operator('PATCH', `/operator_endpoints/${created.body.id}`, {
      max_requests_per_second: 5,
      delivery_order: 'per_object',
    });
    expect(capped.status, capped.text).toBe(200);
    expect(capped.body).toMatchObject({ max_requests_per_second: 5, delivery_order: 'per_object', platform_id: p.platform_id });
  });

  it('no merchant sees them: not in its endpoints, deliveries, events or portal; the operator Platform answers as unknown everywhere else', async () => {
    const p = await svc.platform('Curious Shop');
    const created = await operator('POST', '/operator_endpoints', { url: fleet.url, environment: 'live', platform_id: p.platform_id });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    expect((await svc.api(p.keys.live, 'GET', `/api/v1/webhook_endpoints/${id}`)).status).toBe(404);
    const mine = await svc.api(p.keys.live, 'GET', '/api/v1/webhook_endpoints');
    expect(JSON.stringify(mine.body)).not.toContain(id);
    const deliveries = await svc.api(p.keys.live, 'GET', `/api/v1/webhook_deliveries?endpoint_id=${id}`);
    expect(deliveries.body.data).toEqual([]);
    const events = await svc.api(p.keys.live, 'GET', '/api/v1/events?limit=100');
    expect(JSON.stringify(events.body)).not.toContain('mch_operator');
    const admin = await portalSignIn(svc.url, p.portal.email, p.portal.password);
    expect(JSON.stringify((await admin.call('GET', '/endpoints')).body)).not.toContain(id);

    // The internal API's other routes don't reach the operator Platform or its merchant.
    const link = await operator('POST', '/portal_sessions', {
      merchant_id: 'mch_operator',
      environment: 'live',
      user: { id: 'u1' },
      role: 'admin',
    });
    expect([link.status, link.body.error.code]).toEqual([404, 'resource_missing']);
    const event = await operator('POST', '/events', {
      merchant_id: 'mch_operator',
      environment: 'live',
      type: 'webhook_endpoint.failing',
      data: { object: created.body },
    });
    expect([event.status, event.body.error.param]).toEqual([400, 'merchant_id']);
    const settings = await operator('GET', '/platforms/plt_operator/alert_settings');
    expect(settings.status).toBe(404);
    const watchOperator = await operator('POST', '/operator_endpoints', {
      url: fleet.url,
      environment: 'live',
      platform_id: 'plt_operator',
    });
    expect([watchOperator.status, watchOperator.body.error.param]).toEqual([404, 'platform_id']);
    // A merchant endpoint's id is not an operator endpoint.
    const merchantOwn = await merchantEndpoint(p, '/up/own');
    expect((await operator('GET', `/operator_endpoints/${merchantOwn.id}`)).status).toBe(404);
    expect((await operator('DELETE', `/operator_endpoints/${merchantOwn.id}`)).status).toBe(404);
  });

  it('bad input gets a clear error: a merchant event type, an unknown Platform, a URL the policy refuses', async () => {
    const wrongType = await operator('POST', '/operator_endpoints', {
      url: fleet.url,
      environment: 'live',
      enabled_events: ['payment.succeeded'],
    });
    expect([wrongType.status, wrongType.body.error.code]).toEqual([400, 'event_type_unknown']);
    const unknown = await operator('POST', '/operator_endpoints', { url: fleet.url, environment: 'live', platform_id: 'plt_nope' });
    expect([unknown.status, unknown.body.error.code, unknown.body.error.param]).toEqual([404, 'resource_missing', 'platform_id']);
    const ftp = await operator('POST', '/operator_endpoints', { url: 'ftp://example.com/x', environment: 'live' });
    expect(ftp.status).toBe(400);
    expect(ftp.body.error.param).toBe('url');
    const created = await operator('POST', '/operator_endpoints', { url: fleet.url, environment: 'sandbox' });
    const patched = await operator('PATCH', `/operator_endpoints/${created.body.id}`, {
      enabled_events: ['webhook_endpoint.recovered'],
      status: 'disabled',
    });
    expect(patched.body).toMatchObject({ enabled_events: ['webhook_endpoint.recovered'], status: 'disabled', platform_id: null });
    const rotated = await operator('POST', `/operator_endpoints/${created.body.id}/rotate_secret`, { expire_previous_in: 0 });
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(created.body.secret);
    const gone = await operator('DELETE', `/operator_endpoints/${created.body.id}`);
    expect(gone.body).toEqual({ id: created.body.id, object: 'webhook_endpoint', deleted: true });
    expect((await operator('GET', `/operator_endpoints/${created.body.id}`)).status).toBe(404);
  });
});

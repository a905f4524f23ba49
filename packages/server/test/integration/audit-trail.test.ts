import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routesOf, type RouteInfo } from '../../src/api/app.ts';
import { isMutatingRoute } from '../../src/api/audit-hook.ts';
import { totpCode } from '../../src/accounts/two-factor.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import { startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import {
  embeddedSignIn,
  internalCall,
  inviteAndAccept,
  portalRequest,
  portalSignIn,
  tokenOf,
  type PortalClient,
} from '../helpers/portal.ts';
import { publish } from '../helpers/publish.ts';
import { unsubscribeUrl } from '../../src/alerts/unsubscribe.ts';

/**
 * The audit trail is complete: every route that changes something (read from the app's own
 * route table, so a new route can't be left out) is called once for real here, and the entry
 * its request wrote is found by the request's Request-Id. Routes declared exempt must say why.
 */

const TOKEN = 'internal-token-for-the-audit-trail-test-0123456789';
let svc: TestService;
let p: CreatedPlatform;
let admin: PortalClient;
let receiver: TestReceiver;
let failing = true;

beforeAll(async () => {
  svc = await startService({ internalToken: TOKEN, allowPrivateUrls: true, retryScheduleMs: [3_600_000] });
  p = await svc.platform('Audited');
  admin = await portalSignIn(svc.url, p.portal.email, p.portal.password);
  receiver = await startReceiver(() => (failing ? { status: 503, body: 'down' } : { status: 200, body: 'ok' }));
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

interface Called {
  status: number;
  headers: Headers;
  text?: string;
  body?: unknown;
}

/** The trail's entries written by one request. */
async function entriesOf(requestId: string | null) {
  const rows = await svc.ctx.database.query<{ action: string; outcome: string; actor_type: string; platform_id: string | null }>(
    'SELECT action, outcome, actor_type, platform_id FROM audit_events WHERE request_id = $1',
    [requestId],
  );
  return rows;
}

const key = () => p.keys.sandbox;
const api = (method: string, path: string, body?: unknown) => svc.api(key(), method, path, body);

async function operatorEndpoint(): Promise<string> {
  const r = await internalCall(svc.url, TOKEN, 'POST', '/operator_endpoints', { url: `${receiver.url}/ops`, environment: 'sandbox' });
  expect(r.status, r.text).toBe(201);
  return r.body.id;
}

async function newEndpoint(extra: Record<string, unknown> = {}): Promise<string> {
  const r = await api('POST', '/api/v1/webhook_endpoints', { url: `${receiver.url}/hook`, enabled_events: ['*'], ...extra });
  expect(r.status).toBe(201);
  return r.body.id;
}

/** A delivery of a fresh endpoint in `state`, made by a real worker against the receiver. */
async function deliveryIn(state: 'failed_retrying' | 'delivered'): Promise<string> {
  const endpoint = await newEndpoint();
  failing = state === 'failed_retrying';
  await publish(svc.ctx, p.merchant_id);
  const worker = svc.ctx.createWorker();
  const scope = { platformId: p.platform_id, environment: 'sandbox' as const, actor: { type: 'operator' as const, id: 'test' } };
  for (let i = 0; i < 100; i++) {
    await worker.drain();
    const page = await svc.ctx.deliveries.list(scope, { limit: 1, endpointId: endpoint, state });
    if (page.data[0]) return page.data[0].id;
  }
  throw new Error(`no delivery reached ${state}`);
}

async function sandboxPayment(): Promise<string> {
  const r = await api('POST', '/api/v1/payments', { amount: '5.00', asset_code: 'USDC.ETH' });
  expect(r.status).toBe(201);
  return r.body.id;
}

async function checkoutSession(): Promise<{ id: string; csrf: string }> {
  const r = await api('POST', '/api/v1/checkout_sessions', {
    amount: '5.00',
    asset_code: 'USDC.ETH',
    success_url: 'https://shop.example/ok',
  });
  expect(r.status).toBe(201);
  const page = await (await fetch(`${svc.url}/checkout/${r.body.id}`)).text();
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(page)?.[1];
  expect(csrf).toBeDefined();
  return { id: r.body.id, csrf: csrf! };
}

async function form(path: string, fields: Record<string, string>): Promise<Called> {
  const res = await fetch(svc.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: svc.url },
    body: new URLSearchParams(fields).toString(),
    redirect: 'manual',
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

let userSeq = 0;
const newUser = (role: 'viewer' | 'developer' | 'admin') => inviteAndAccept(svc.url, admin, `member${++userSeq}@audit.example`, role);

/** A signed-in user with two-factor sign-in on, and one of their recovery codes. */
async function twoFactorUser(): Promise<{ email: string; password: string; code: string; client: PortalClient }> {
  const email = `tfa${++userSeq}@audit.example`;
  const client = await inviteAndAccept(svc.url, admin, email, 'developer');
  const setup = await client.call('POST', '/account/two_factor/setup');
  const enabled = await client.call('POST', '/account/two_factor/enable', { code: totpCode(setup.body.secret, new Date()) });
  expect(enabled.status, enabled.text).toBe(200);
  return { email, password: 'a long enough password', code: enabled.body.codes[0], client };
}

/** How to call each changing route once, successfully. */
const RECIPES: Record<string, () => Promise<Called>> = {
  // The management API.
  'POST /api/v1/webhook_endpoints': () => api('POST', '/api/v1/webhook_endpoints', { url: `${receiver.url}/a`, enabled_events: ['*'] }),
  'PATCH /api/v1/webhook_endpoints/:id': async () => api('PATCH', `/api/v1/webhook_endpoints/${await newEndpoint()}`, { description: 'x' }),
  'POST /api/v1/webhook_endpoints/:id/rotate_secret': async () =>
    api('POST', `/api/v1/webhook_endpoints/${await newEndpoint()}/rotate_secret`),
  'POST /api/v1/webhook_endpoints/:id/rotate_signing_key': async () =>
    api('POST', `/api/v1/webhook_endpoints/${await newEndpoint({ asymmetric_signature: true })}/rotate_signing_key`),
  'DELETE /api/v1/webhook_endpoints/:id': async () => api('DELETE', `/api/v1/webhook_endpoints/${await newEndpoint()}`),
  'POST /api/v1/payments': () => api('POST', '/api/v1/payments', { amount: '5.00', asset_code: 'USDC.ETH' }),
  'POST /api/v1/payments/:id/cancel': async () => api('POST', `/api/v1/payments/${await sandboxPayment()}/cancel`),
  'POST /api/v1/sandbox/payments/:id/simulate': async () =>
    api('POST', `/api/v1/sandbox/payments/${await sandboxPayment()}/simulate`, { status: 'processing' }),
  'POST /api/v1/checkout_sessions': () =>
    api('POST', '/api/v1/checkout_sessions', { amount: '5.00', asset_code: 'USDC.ETH', success_url: 'https://shop.example/ok' }),
  'POST /api/v1/checkout_sessions/:id/expire': async () => api('POST', `/api/v1/checkout_sessions/${(await checkoutSession()).id}/expire`),
  'POST /api/v1/listen_sessions': async () => {
    // An event stream: its first event arrives once the session (and its entry) exists.
    const controller = new AbortController();
    const res = await fetch(`${svc.url}/api/v1/listen_sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key()}`, 'content-type': 'application/json' },
      body: '{}',
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    controller.abort();
    return { status: res.status, headers: res.headers };
  },
  // The internal API.
  'POST /internal/v1/payments/:id/transitions': async () =>
    internalCall(svc.url, TOKEN, 'POST', `/payments/${await sandboxPayment()}/transitions`, { status: 'processing' }),
  'POST /internal/v1/portal_sessions': () =>
    internalCall(svc.url, TOKEN, 'POST', '/portal_sessions', {
      merchant_id: p.merchant_id,
      environment: 'sandbox',
      role: 'viewer',
      user: { id: 'ps_user_1', email: 'someone@dashboard.example' },
    }),
  // The hosted checkout page (the customer).
  'POST /checkout/:id/pay': async () => {
    const s = await checkoutSession();
    return form(`/checkout/${s.id}/pay`, { csrf_token: s.csrf });
  },
  'POST /checkout/:id/fail': async () => {
    const s = await checkoutSession();
    return form(`/checkout/${s.id}/fail`, { csrf_token: s.csrf });
  },
  // The portal.
  'POST /portal/api/session': () =>
    portalRequest(svc.url, 'POST', '/session', { email: p.portal.email, password: p.portal.password }, { origin: svc.url }),
  'POST /portal/api/session/two_factor': async () => {
    const user = await twoFactorUser();
    const first = await portalRequest(svc.url, 'POST', '/session', { email: user.email, password: user.password }, { origin: svc.url });
    expect(first.body.object).toBe('two_factor_challenge');
    return portalRequest(svc.url, 'POST', '/session/two_factor', { challenge: first.body.challenge, code: user.code }, { origin: svc.url });
  },
  'POST /portal/api/session/link': async () => {
    const link = await internalCall(svc.url, TOKEN, 'POST', '/portal_sessions', {
      merchant_id: p.merchant_id,
      environment: 'sandbox',
      role: 'developer',
      user: { id: 'ps_user_2' },
    });
    return portalRequest(svc.url, 'POST', '/session/link', { token: tokenOf(link.body.url) }, { origin: svc.url });
  },
  'PUT /portal/api/session/environment': () => admin.call('PUT', '/session/environment', { environment: 'sandbox' }),
  'DELETE /portal/api/session': async () => (await portalSignIn(svc.url, p.portal.email, p.portal.password)).call('DELETE', '/session'),
  'POST /portal/api/endpoints': () => admin.call('POST', '/endpoints', { url: `${receiver.url}/b`, enabled_events: ['*'] }),
  'PATCH /portal/api/endpoints/:id': async () => admin.call('PATCH', `/endpoints/${await newEndpoint()}`, { status: 'disabled' }),
  'DELETE /portal/api/endpoints/:id': async () => admin.call('DELETE', `/endpoints/${await newEndpoint()}`),
  'POST /portal/api/endpoints/:id/rotate_secret': async () => admin.call('POST', `/endpoints/${await newEndpoint()}/rotate_secret`, {}),
  'POST /portal/api/endpoints/:id/rotate_signing_key': async () =>
    admin.call('POST', `/endpoints/${await newEndpoint({ asymmetric_signature: true })}/rotate_signing_key`, {}),
  'POST /portal/api/endpoints/:id/test_event': async () => admin.call('POST', `/endpoints/${await newEndpoint()}/test_event`),
  'POST /portal/api/endpoints/:id/bulk_replays': async () =>
    admin.call('POST', `/endpoints/${await newEndpoint()}/bulk_replays`, { since: '2020-01-01T00:00:00Z' }),
  'POST /portal/api/deliveries/:id/replay': async () => admin.call('POST', `/deliveries/${await deliveryIn('failed_retrying')}/replay`),
  'POST /portal/api/deliveries/:id/resend': async () => admin.call('POST', `/deliveries/${await deliveryIn('delivered')}/resend`),
  'POST /portal/api/deliveries/:id/cancel': async () => admin.call('POST', `/deliveries/${await deliveryIn('failed_retrying')}/cancel`),
  'PUT /portal/api/settings': () => admin.call('PUT', '/settings', { theme: { accent_color: '#112233' } }),
  'PATCH /portal/api/users/:id': async () => {
    const user = await newUser('viewer');
    return admin.call('PATCH', `/users/${user.session.user.id}`, { role: 'developer' });
  },
  'DELETE /portal/api/users/:id': async () => {
    const user = await newUser('viewer');
    return admin.call('DELETE', `/users/${user.session.user.id}`);
  },
  'POST /portal/api/invitations': () => admin.call('POST', '/invitations', { email: `inv${++userSeq}@audit.example`, role: 'viewer' }),
  'DELETE /portal/api/invitations/:id': async () => {
    const inv = await admin.call('POST', '/invitations', { email: `inv${++userSeq}@audit.example`, role: 'viewer' });
    return admin.call('DELETE', `/invitations/${inv.body.id}`);
  },
  'POST /portal/api/invitation/accept': async () => {
    const inv = await admin.call('POST', '/invitations', { email: `inv${++userSeq}@audit.example`, role: 'viewer' });
    return portalRequest(
      svc.url,
      'POST',
      '/invitation/accept',
      { token: tokenOf(inv.body.url), password: 'a long enough password' },
      { origin: svc.url },
    );
  },
  'POST /portal/api/password_reset': async () => {
    const user = await newUser('viewer');
    const reset = await svc.ctx.accounts.resets.issue(user.session.user.email, { actor: { type: 'operator', id: 'test' } });
    return portalRequest(
      svc.url,
      'POST',
      '/password_reset',
      { token: tokenOf(reset.url), password: 'another long password' },
      { origin: svc.url },
    );
  },
  'PUT /portal/api/account/password': async () =>
    (await newUser('viewer')).call('PUT', '/account/password', {
      current_password: 'a long enough password',
      new_password: 'a brand new password',
    }),
  'PUT /portal/api/account/health_mail': async () =>
    (await newUser('developer')).call('PUT', '/account/health_mail', { health_mail: false }),
  'PUT /internal/v1/platforms/:platform_id/alert_settings': () =>
    internalCall(svc.url, TOKEN, 'PUT', `/platforms/${p.platform_id}/alert_settings`, { mail_sandbox: true }),
  // Operator endpoints: their entries are the operator Platform's (the payment service's own).
  'POST /internal/v1/operator_endpoints': () =>
    internalCall(svc.url, TOKEN, 'POST', '/operator_endpoints', { url: `${receiver.url}/ops`, environment: 'sandbox' }),
  'PATCH /internal/v1/operator_endpoints/:id': async () =>
    internalCall(svc.url, TOKEN, 'PATCH', `/operator_endpoints/${await operatorEndpoint()}`, { description: 'Pager' }),
  'POST /internal/v1/operator_endpoints/:id/rotate_secret': async () =>
    internalCall(svc.url, TOKEN, 'POST', `/operator_endpoints/${await operatorEndpoint()}/rotate_secret`),
  'DELETE /internal/v1/operator_endpoints/:id': async () =>
    internalCall(svc.url, TOKEN, 'DELETE', `/operator_endpoints/${await operatorEndpoint()}`),
  // A health mail's one-click unsubscribe link (RFC 8058), as a mail client posts it.
  'POST /email/unsubscribe': async () => {
    const user = await newUser('developer');
    const link = unsubscribeUrl(svc.ctx.secrets, svc.url, { user: user.session.user.id });
    const res = await fetch(link, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'List-Unsubscribe=One-Click',
    });
    return { status: res.status, headers: res.headers, text: await res.text() };
  },
  'POST /portal/api/account/two_factor/setup': async () => (await newUser('viewer')).call('POST', '/account/two_factor/setup'),
  'POST /portal/api/account/two_factor/enable': async () => {
    const user = await newUser('viewer');
    const setup = await user.call('POST', '/account/two_factor/setup');
    return user.call('POST', '/account/two_factor/enable', { code: totpCode(setup.body.secret, new Date()) });
  },
  'DELETE /portal/api/account/two_factor': async () =>
    (await twoFactorUser()).client.call('DELETE', '/account/two_factor', { password: 'a long enough password' }),
  'POST /portal/api/account/two_factor/recovery_codes': async () =>
    (await twoFactorUser()).client.call('POST', '/account/two_factor/recovery_codes', { password: 'a long enough password' }),
};

describe('the audit trail is complete', () => {
  it('every route that changes something, read from the route table, writes an entry naming its request when it succeeds', async () => {
    const changing = routesOf(svc.app).filter((r) => isMutatingRoute(r.method));
    expect(changing.length).toBeGreaterThan(40);
    const missing: string[] = [];
    for (const route of changing as RouteInfo[]) {
      const name = `${route.method} ${route.url}`;
      const audit = route.config.audit!;
      expect(audit, name).toBeDefined();
      if ('exempt' in audit) continue;
      const recipe = RECIPES[name];
      if (!recipe) {
        missing.push(name);
        continue;
      }
      const res = await recipe();
      expect(res.status, `${name}: ${res.text ?? JSON.stringify(res.body)}`).toBeLessThan(400);
      const entries = await entriesOf(res.headers.get('request-id'));
      expect(entries.length, `${name} wrote no audit entry`).toBeGreaterThan(0);
      // The entry is in the Platform's trail (the operator's, for its endpoints), a success, and
      // about the resource the route declares.
      for (const e of entries) {
        expect(e.outcome, name).toBe('succeeded');
        expect(e.platform_id, name).toBe(route.url.startsWith('/internal/v1/operator_endpoints') ? 'plt_operator' : p.platform_id);
      }
      expect(
        entries.some((e) => e.action.startsWith(`${audit.resource}.`) || e.action === audit.action),
        `${name}: ${JSON.stringify(entries)}`,
      ).toBe(true);
    }
    expect(missing, 'changing routes without a recipe in this test: add one').toEqual([]);
  });

  it('the routes exempt from the trail are few, and each says why', () => {
    const exempt = routesOf(svc.app)
      .filter((r) => isMutatingRoute(r.method) && r.config.audit && 'exempt' in r.config.audit)
      .map((r) => `${r.method} ${r.url}`)
      .sort();
    expect(exempt).toEqual(
      [
        'POST /checkout/:id/cancel',
        'POST /internal/v1/events',
        'POST /internal/v1/events/batch',
        'POST /listen/:id',
        'POST /api/v1/listen_sessions/:id/results',
        'POST /portal/api/invitation/inspect',
        'POST /portal/api/password_reset/inspect',
      ].sort(),
    );
  });
});

describe('what an entry says', () => {
  it('who (portal user), from where (address, user agent, request id), what (changed fields, never the secret) and the outcome', async () => {
    const created = await admin.call('POST', '/endpoints', { url: `${receiver.url}/c`, enabled_events: ['payment.succeeded'] });
    expect(created.status).toBe(201);
    const list = await admin.call('GET', '/audit_events?action=webhook_endpoint.create&limit=1');
    const entry = list.body.data[0];
    expect(entry).toMatchObject({
      object: 'audit_event',
      action: 'webhook_endpoint.create',
      outcome: 'succeeded',
      environment: 'sandbox',
      actor: { type: 'user', id: admin.session.user.id, email: p.portal.email },
      resource: { type: 'webhook_endpoint', id: created.body.id },
      origin: { ip: '127.0.0.1', request_id: created.headers.get('request-id') },
      changes: { url: `${receiver.url}/c`, enabled_events: ['payment.succeeded'] },
    });
    expect(entry.origin.user_agent).toBeTruthy();
    expect(JSON.stringify(entry)).not.toContain(created.body.secret);
    expect(JSON.stringify(entry)).not.toMatch(/whsec_[A-Za-z0-9]/);
  });

  it('a refused change is recorded too: a viewer denied a replay (denied), a key refused by a rule (failed), with the error code; a malformed request is not', async () => {
    const viewer = await newUser('viewer');
    const delivery = await deliveryIn('failed_retrying');
    const denied = await viewer.call('POST', `/deliveries/${delivery}/replay`);
    expect(denied.status).toBe(403);
    const [deniedEntry] = (await admin.call('GET', `/audit_events?resource_id=${delivery}`)).body.data;
    expect(deniedEntry).toMatchObject({
      action: 'webhook_delivery.replay',
      outcome: 'denied',
      error_code: 'insufficient_role',
      actor: { type: 'user', id: viewer.session.user.id },
    });
    // A live endpoint must use https: refused by a rule (422), recorded with the rule's code.
    const refused = await svc.api(p.keys.live, 'POST', '/api/v1/webhook_endpoints', {
      url: 'http://plain.example/h',
      enabled_events: ['*'],
    });
    expect(refused.status).toBe(422);
    const failed = (await admin.call('GET', `/audit_events?actor_type=api_key&outcome=failed`)).body.data.find(
      (e: { origin: { request_id: string } }) => e.origin.request_id === refused.headers.get('request-id'),
    );
    expect(failed).toMatchObject({ action: 'webhook_endpoint.create', outcome: 'failed', error_code: 'url_insecure', environment: 'live' });
    // A malformed request is not an attempt at a change: no entry.
    const malformed = await api('POST', '/api/v1/webhook_endpoints', { url: 5 });
    expect(malformed.status).toBe(400);
    expect(await entriesOf(malformed.headers.get('request-id'))).toEqual([]);
  });

  it("an embedded user is named by the payment service's own user id", async () => {
    const embedded = await embeddedSignIn(svc.url, TOKEN, {
      merchant_id: p.merchant_id,
      environment: 'sandbox',
      role: 'developer',
      user: { id: 'dashboard-user-42', email: 'ana@dashboard.example', name: 'Ana' },
    });
    const created = await embedded.call('POST', '/endpoints', { url: `${receiver.url}/d`, enabled_events: ['*'] });
    expect(created.status).toBe(201);
    const list = await admin.call('GET', `/audit_events?resource_id=${created.body.id}`);
    expect(list.body.data[0]).toMatchObject({
      action: 'webhook_endpoint.create',
      actor: { type: 'embedded_user', id: 'dashboard-user-42', email: 'ana@dashboard.example', name: 'Ana' },
    });
  });
});

describe('GET /api/v1/audit_events', () => {
  it("filters by actor, resource, action and time, pages with starting_after, and shows a key its environment's entries and the Platform-wide ones only", async () => {
    const other = await svc.platform('Another');
    const ep = await newEndpoint();
    await api('PATCH', `/api/v1/webhook_endpoints/${ep}`, { description: 'one' });
    await api('PATCH', `/api/v1/webhook_endpoints/${ep}`, { description: 'two' });
    await svc.api(p.keys.live, 'POST', '/api/v1/webhook_endpoints', { url: 'https://live.example/h', enabled_events: ['*'] });
    const byResource = await api('GET', `/api/v1/audit_events?resource_id=${ep}`);
    expect(byResource.status).toBe(200);
    expect(byResource.body.data.map((e: { action: string }) => e.action)).toEqual([
      'webhook_endpoint.update',
      'webhook_endpoint.update',
      'webhook_endpoint.create',
    ]);
    const page1 = await api('GET', `/api/v1/audit_events?resource_id=${ep}&limit=2`);
    expect(page1.body.has_more).toBe(true);
    const page2 = await api('GET', `/api/v1/audit_events?resource_id=${ep}&limit=2&starting_after=${page1.body.data[1].id}`);
    expect(page2.body.data.map((e: { id: string }) => e.id)).toEqual([byResource.body.data[2].id]);
    const byAction = await api('GET', '/api/v1/audit_events?action=webhook_endpoint.update&limit=100');
    expect(byAction.body.data.every((e: { action: string }) => e.action === 'webhook_endpoint.update')).toBe(true);
    // A sandbox key never sees live entries; settings (Platform-wide) are seen by both.
    const all = await api('GET', '/api/v1/audit_events?limit=100');
    expect(all.body.data.some((e: { environment: string | null }) => e.environment === 'live')).toBe(false);
    expect(
      all.body.data.some((e: { environment: string | null; action: string }) => e.environment === null && e.action === 'settings.update'),
    ).toBe(true);
    const future = await api('GET', '/api/v1/audit_events?created[gte]=2999-01-01T00:00:00Z');
    expect(future.body.data).toEqual([]);
    // Another Platform's key sees none of this Platform's entries, and its cursor ids are unknown.
    const foreign = await svc.api(other.keys.sandbox, 'GET', `/api/v1/audit_events?resource_id=${ep}`);
    expect(foreign.body.data).toEqual([]);
    const probe = await svc.api(other.keys.sandbox, 'GET', `/api/v1/audit_events?starting_after=${page1.body.data[0].id}`);
    expect(probe.status).toBe(400);
    const bad = await api('GET', '/api/v1/audit_events?outcome=maybe');
    expect(bad.status).toBe(400);
    expect(bad.body.error.param).toBe('outcome');
  });
});

/** The database's refusal of a statement, through the driver's error and its cause. */
async function refusal(statement: Promise<unknown>): Promise<string> {
  try {
    await statement;
  } catch (err) {
    const messages: string[] = [];
    for (let e = err as { message?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e) messages.push(String(e.message));
    return messages.join(' / ');
  }
  return 'not refused';
}

describe('append-only, in the database', () => {
  it("the service's own database user can add entries but neither change nor delete them, not even in a week's partition", async () => {
    const db = svc.ctx.database;
    const [row] = await db.query<{ id: string }>('SELECT id FROM audit_events LIMIT 1', []);
    expect(row).toBeDefined();
    for (const sql of [
      `UPDATE audit_events SET action = 'forged' WHERE id = '${row!.id}'`,
      `DELETE FROM audit_events WHERE id = '${row!.id}'`,
      'TRUNCATE audit_events',
    ]) {
      expect(await refusal(db.query(sql, [])), sql).toMatch(/append-only/);
    }
    const parts = await db.query<{ relname: string }>(
      `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'audit_events'::regclass`,
      [],
    );
    expect(parts.length).toBeGreaterThan(1);
    let withRows = 0;
    for (const { relname } of parts) {
      // Row triggers fire for rows: an empty week's DELETE has nothing to refuse. TRUNCATE is refused whatever it holds.
      const [n] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${relname}`, []);
      if (Number(n?.n) > 0) {
        withRows++;
        expect(await refusal(db.query(`DELETE FROM ${relname}`, [])), relname).toMatch(/append-only/);
        expect(await refusal(db.query(`UPDATE ${relname} SET outcome = 'failed'`, [])), relname).toMatch(/append-only/);
      }
      expect(await refusal(db.query(`TRUNCATE ${relname}`, [])), relname).toMatch(/append-only/);
    }
    expect(withRows).toBeGreaterThan(0);
    const [still] = await db.query<{ action: string }>('SELECT action FROM audit_events WHERE id = $1', [row!.id]);
    expect(still?.action).not.toBe('forged');
  });
});

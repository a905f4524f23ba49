import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PORTAL_LINK_TTL_MS } from '../../src/accounts/portal-links.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import { ManualClock, startService, type TestService } from '../helpers/service.ts';
import { clientOf, embeddedSignIn, internalCall, portalRequest, portalSignIn, tokenOf } from '../helpers/portal.ts';

/**
 * Sign-in from the payment service: its backend asks for a single-use link for one of its
 * merchant users, and the link starts an ordinary portal session for that user, bound to the
 * merchant's Platform and the environment named, carried in a header (not a cookie) so it works
 * inside the payment service's frame.
 *
 * PostgreSQL only: every one of these routes also runs once on the embedded database in
 * audit-trail.test.ts (its completeness test calls each changing route for real), which is what
 * the second backend adds; starting more embedded databases here cost 10 s each.
 */

const TOKEN = 'internal-token-for-the-embedding-test-0123456789ab';
const DASHBOARD = 'http://localhost:4321';
let svc: TestService;
let clock: ManualClock;
let a: CreatedPlatform;
let b: CreatedPlatform;

beforeAll(async () => {
  clock = new ManualClock(new Date());
  svc = await startService({ internalToken: TOKEN, portalFrameAncestors: [DASHBOARD] }, { clock });
  a = await svc.platform('Merchant A');
  b = await svc.platform('Merchant B');
});
afterAll(async () => svc?.close());

const request = (overrides: Record<string, unknown> = {}) => ({
  merchant_id: a.merchant_id,
  environment: 'sandbox',
  role: 'developer',
  user: { id: 'dash_user_7', email: 'lee@merchant-a.example', name: 'Lee' },
  return_url: `${DASHBOARD}/webhooks`,
  ...overrides,
});
const open = (url: string) => portalRequest(svc.url, 'POST', '/session/link', { token: tokenOf(url) }, { origin: svc.url });

describe('POST /internal/v1/portal_sessions', () => {
  it('answers 201 {url, expires_at}: a link into the portal that expires within a minute, its token only in the fragment', async () => {
    const r = await internalCall(svc.url, TOKEN, 'POST', '/portal_sessions', request());
    expect(r.status, r.text).toBe(201);
    expect(r.body).toEqual({ object: 'portal_session_link', url: expect.any(String), expires_at: expect.any(String) });
    expect(r.body.url).toMatch(new RegExp(`^${svc.url}/portal/launch#token=[A-Za-z0-9_-]{43}$`));
    expect(new Date(r.body.expires_at).getTime() - clock.now().getTime()).toBe(PORTAL_LINK_TTL_MS);
  });

  it('needs the internal token, a known merchant, a role of the three and a proper return_url', async () => {
    const noToken = await fetch(`${svc.url}/internal/v1/portal_sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(request()),
    });
    expect(noToken.status).toBe(401);
    const cases: Array<[Record<string, unknown>, number, string]> = [
      [{ merchant_id: 'mch_nobody' }, 404, 'merchant_id'],
      [{ role: 'superuser' }, 400, 'role'],
      [{ environment: 'staging' }, 400, 'environment'],
      [{ return_url: 'javascript:alert(1)' }, 400, 'return_url'],
      [{ user: { email: 'no-id@example.com' } }, 400, 'user[id]'],
    ];
    for (const [change, status, param] of cases) {
      const r = await internalCall(svc.url, TOKEN, 'POST', '/portal_sessions', request(change));
      expect([r.status, r.body.error?.param], JSON.stringify(change)).toEqual([status, param]);
    }
  });
});

describe('opening the link', () => {
  it("starts a session for the payment service's user with the role named, no password, carried as a bearer token", async () => {
    const link = await internalCall(svc.url, TOKEN, 'POST', '/portal_sessions', request());
    const opened = await open(link.body.url);
    expect(opened.status, opened.text).toBe(200);
    expect(opened.body).toMatchObject({
      kind: 'embedded',
      role: 'developer',
      environment: 'sandbox',
      environment_locked: true,
      user: { id: 'dash_user_7', email: 'lee@merchant-a.example', name: 'Lee' },
      platform: { id: a.platform_id },
      return_url: `${DASHBOARD}/webhooks`,
      frame_ancestors: [DASHBOARD],
    });
    expect(opened.body.session_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // No cookie: inside another site's frame the browser may not send one back.
    expect(opened.headers.getSetCookie()).toEqual([]);
    const session = clientOf(svc.url, opened, { bearer: opened.body.session_token });
    const created = await session.call('POST', '/endpoints', { url: 'https://a.example/hook', enabled_events: ['*'] });
    expect(created.status).toBe(201);
  });

  it('works once: a second open of the same link is refused', async () => {
    const link = await internalCall(svc.url, TOKEN, 'POST', '/portal_sessions', request());
    expect((await open(link.body.url)).status).toBe(200);
    const again = await open(link.body.url);
    expect([again.status, again.body.error.code]).toEqual([401, 'portal_link_invalid']);
  });

  it('expires unopened after a minute', async () => {
    const link = await internalCall(svc.url, TOKEN, 'POST', '/portal_sessions', request());
    clock.advance(PORTAL_LINK_TTL_MS + 1);
    const late = await open(link.body.url);
    expect([late.status, late.body.error.code]).toEqual([401, 'portal_link_invalid']);
  });

  it("a link for merchant B sees only B's objects; a link for sandbox can't switch to live", async () => {
    const endpointOfA = await svc.api(a.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url: 'https://a.example/x',
      enabled_events: ['*'],
    });
    const forB = await embeddedSignIn(svc.url, TOKEN, request({ merchant_id: b.merchant_id, role: 'admin' }));
    expect(forB.session.platform.id).toBe(b.platform_id);
    expect((await forB.call('GET', `/endpoints/${endpointOfA.body.id}`)).status).toBe(404);
    expect((await forB.call('DELETE', `/endpoints/${endpointOfA.body.id}`)).status).toBe(404);
    const list = await forB.call('GET', '/endpoints');
    expect(list.body.data.map((e: { id: string }) => e.id)).not.toContain(endpointOfA.body.id);
    const switched = await forB.call('PUT', '/session/environment', { environment: 'live' });
    expect([switched.status, switched.body.error.code]).toEqual([403, 'environment_locked']);
    const live = await embeddedSignIn(svc.url, TOKEN, request({ environment: 'live' }));
    expect((await live.call('GET', `/endpoints/${endpointOfA.body.id}`)).status).toBe(404);
  });

  it("an embedded sandbox admin gets no more than its link named: no invitation (so no password account of its own, and no way to live), no team, and only sandbox's and Platform-wide audit entries", async () => {
    const sandboxAdmin = await embeddedSignIn(svc.url, TOKEN, request({ role: 'admin', user: { id: 'dash_admin_1' } }));
    // The attack: invite an admin from the embedded session, accept it, switch to live.
    const invite = await sandboxAdmin.call('POST', '/invitations', { email: 'sneaky@attacker.example', role: 'admin' });
    expect([invite.status, invite.body.error?.code]).toEqual([403, 'embedded_session_not_allowed']);
    expect(invite.body.url).toBeUndefined();
    expect(invite.body.error.message).toContain("payment service's dashboard");
    for (const [method, path, body] of [
      ['GET', '/invitations', undefined],
      ['GET', '/users', undefined],
      ['PATCH', '/users/usr_any', { role: 'viewer' }],
      ['DELETE', '/users/usr_any', undefined],
      ['DELETE', '/invitations/inv_any', undefined],
    ] as const) {
      const r = await sandboxAdmin.call(method, path, body);
      expect([r.status, r.body.error?.code], `${method} ${path}`).toEqual([403, 'embedded_session_not_allowed']);
    }
    const [made] = await svc.ctx.database.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM account_tokens WHERE purpose = 'invitation' AND email = 'sneaky@attacker.example'`,
      [],
    );
    expect(Number(made!.n)).toBe(0);
    // A password admin of the same Platform still manages the team.
    const standalone = await portalSignIn(svc.url, a.portal.email, a.portal.password);
    expect((await standalone.call('GET', '/users')).status).toBe(200);

    // The audit log: a live change and a live embedded sign-in are not the sandbox session's to read.
    const liveEndpoint = await svc.api(a.keys.live, 'POST', '/api/v1/webhook_endpoints', {
      url: 'https://a.example/live-only',
      enabled_events: ['*'],
    });
    expect(liveEndpoint.status).toBe(201);
    await embeddedSignIn(svc.url, TOKEN, request({ environment: 'live', role: 'admin', user: { id: 'dash_live_admin' } }));
    await svc.api(a.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url: 'https://a.example/sandbox', enabled_events: ['*'] });
    const entries = (await sandboxAdmin.call('GET', '/audit_events?limit=100')).body.data as {
      environment: string | null;
      resource: { id: string | null };
      actor: { id: string | null };
    }[];
    expect(entries.length).toBeGreaterThan(0);
    expect(entries.filter((e) => e.environment === 'live')).toEqual([]);
    expect(entries.map((e) => e.resource.id)).not.toContain(liveEndpoint.body.id);
    expect(entries.map((e) => e.actor.id)).not.toContain('dash_live_admin');
    expect(entries.some((e) => e.environment === 'sandbox')).toBe(true);
    const askLive = await sandboxAdmin.call('GET', '/audit_events?environment=live');
    expect([askLive.status, askLive.body.error.code]).toEqual([403, 'environment_locked']);
    // A password admin reads both.
    const all = (await standalone.call('GET', '/audit_events?limit=100')).body.data as { resource: { id: string | null } }[];
    expect(all.map((e) => e.resource.id)).toContain(liveEndpoint.body.id);
  });

  it('CSRF stays as strong: a request with the bearer token but without the CSRF token, or from another origin, is refused', async () => {
    const s = await embeddedSignIn(svc.url, TOKEN, request());
    const noCsrf = await s.call('POST', '/endpoints', { url: 'https://a.example/y', enabled_events: ['*'] }, { csrf: null });
    expect([noCsrf.status, noCsrf.body.error.code]).toEqual([403, 'csrf_token_invalid']);
    const fromDashboard = await s.call('POST', '/endpoints', { url: 'https://a.example/y', enabled_events: ['*'] }, { origin: DASHBOARD });
    expect([fromDashboard.status, fromDashboard.body.error.code]).toEqual([403, 'cross_origin_request']);
    // Without the token a request has no session at all, whatever cookies it carries.
    const anonymous = await portalRequest(svc.url, 'GET', '/endpoints', undefined, { origin: svc.url });
    expect(anonymous.status).toBe(401);
  });
});

describe('framing and password sign-in', () => {
  it("only the configured origins may frame the portal (CSP frame-ancestors; with none configured, portal-api.test.ts sees 'none')", async () => {
    for (const path of ['/portal/launch', '/portal/', '/portal/api/session']) {
      const page = await fetch(`${svc.url}${path}`);
      expect(page.headers.get('content-security-policy'), path).toContain(`frame-ancestors ${DASHBOARD}`);
      expect(page.headers.get('x-frame-options'), path).toBeNull();
    }
  });

  it("PAYHOOKS_PORTAL_PASSWORD_SIGN_IN=false: no password sign-in, invitation or reset; the payment service's links still work", async () => {
    const embedOnly = await startService({ internalToken: TOKEN, portalPasswordSignIn: false });
    try {
      const p = await embedOnly.platform('Embed only');
      const signIn = await portalRequest(
        embedOnly.url,
        'POST',
        '/session',
        { email: p.portal.email, password: p.portal.password },
        { origin: embedOnly.url },
      );
      expect([signIn.status, signIn.body.error.code]).toEqual([403, 'password_sign_in_disabled']);
      const s = await embeddedSignIn(embedOnly.url, TOKEN, { ...request(), merchant_id: p.merchant_id, role: 'admin' });
      expect(s.session.password_sign_in).toBe(false);
      const invite = await s.call('POST', '/invitations', { email: 'x@embed.example', role: 'viewer' });
      expect([invite.status, invite.body.error.code]).toEqual([403, 'embedded_session_not_allowed']);
      const inspect = await portalRequest(embedOnly.url, 'POST', '/invitation/inspect', { token: 'x' }, { origin: embedOnly.url });
      expect([inspect.status, inspect.body.error.code]).toEqual([403, 'password_sign_in_disabled']);
    } finally {
      await embedOnly.close();
    }
  });

  it('an embedded user has no payhooks password to change: the account routes say where to go', async () => {
    const s = await embeddedSignIn(svc.url, TOKEN, request());
    const r = await s.call('PUT', '/account/password', { current_password: 'x', new_password: 'something long enough' });
    expect([r.status, r.body.error.code]).toEqual([403, 'not_a_portal_user']);
    // And a standalone user's cookie session is untouched by any of this.
    const standalone = await portalSignIn(svc.url, a.portal.email, a.portal.password);
    expect((await standalone.call('GET', '/session')).body.kind).toBe('password');
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routesOf } from '../../src/api/app.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import { startService, type TestService } from '../helpers/service.ts';
import { embeddedSignIn, inviteAndAccept, portalSignIn, type PortalClient } from '../helpers/portal.ts';

/**
 * Roles are enforced by the server on every portal route. The matrix below is read from the
 * app's route table (each route declares the least role it needs), so a new route is in it the
 * moment it exists; the expected table makes any change of a route's role a deliberate one.
 *
 * PostgreSQL only: every one of these routes also runs once on the embedded database in
 * audit-trail.test.ts (its completeness test calls each changing route for real), which is what
 * the second backend adds; starting more embedded databases here cost 10 s each.
 */

const TOKEN = 'internal-token-for-the-portal-roles-test-0123456789';
type Role = 'viewer' | 'developer' | 'admin';
const RANK: Record<Role, number> = { viewer: 0, developer: 1, admin: 2 };

let svc: TestService;
let p: CreatedPlatform;
let admin: PortalClient;

beforeAll(async () => {
  svc = await startService({ internalToken: TOKEN });
  p = await svc.platform('Roles');
  admin = await portalSignIn(svc.url, p.portal.email, p.portal.password);
  await inviteAndAccept(svc.url, admin, 'dev@roles.example', 'developer');
  await inviteAndAccept(svc.url, admin, 'viewer@roles.example', 'viewer');
});
afterAll(async () => svc?.close());

const EXPECTED_ROLES: Record<string, Role> = {
  'GET /portal/api/session': 'viewer',
  'PUT /portal/api/session/environment': 'viewer',
  'DELETE /portal/api/session': 'viewer',
  'GET /portal/api/catalog': 'viewer',
  'GET /portal/api/endpoints': 'viewer',
  'POST /portal/api/endpoints': 'developer',
  'GET /portal/api/endpoints/:id': 'viewer',
  'GET /portal/api/endpoints/:id/stats': 'viewer',
  'GET /portal/api/stats': 'viewer',
  'PATCH /portal/api/endpoints/:id': 'developer',
  'DELETE /portal/api/endpoints/:id': 'developer',
  'POST /portal/api/endpoints/:id/rotate_secret': 'developer',
  'POST /portal/api/endpoints/:id/rotate_signing_key': 'developer',
  'POST /portal/api/endpoints/:id/test_event': 'developer',
  'GET /portal/api/endpoints/:id/bulk_replays/preview': 'developer',
  'POST /portal/api/endpoints/:id/bulk_replays': 'developer',
  'GET /portal/api/bulk_replays/:id': 'viewer',
  'GET /portal/api/deliveries': 'viewer',
  'GET /portal/api/deliveries/:id': 'viewer',
  'POST /portal/api/deliveries/:id/replay': 'developer',
  'POST /portal/api/deliveries/:id/resend': 'developer',
  'POST /portal/api/deliveries/:id/cancel': 'developer',
  'GET /portal/api/event_types': 'viewer',
  'GET /portal/api/events/:id': 'viewer',
  'GET /portal/api/settings': 'admin',
  'PUT /portal/api/settings': 'admin',
  'GET /portal/api/users': 'admin',
  'PATCH /portal/api/users/:id': 'admin',
  'DELETE /portal/api/users/:id': 'admin',
  'GET /portal/api/invitations': 'admin',
  'POST /portal/api/invitations': 'admin',
  'DELETE /portal/api/invitations/:id': 'admin',
  'GET /portal/api/account': 'viewer',
  'PUT /portal/api/account/password': 'viewer',
  'PUT /portal/api/account/health_mail': 'viewer',
  'POST /portal/api/account/two_factor/setup': 'viewer',
  'POST /portal/api/account/two_factor/enable': 'viewer',
  'DELETE /portal/api/account/two_factor': 'viewer',
  'POST /portal/api/account/two_factor/recovery_codes': 'viewer',
  'GET /portal/api/audit_events': 'admin',
};

const PUBLIC = [
  'POST /portal/api/session',
  'POST /portal/api/session/two_factor',
  'POST /portal/api/session/link',
  'POST /portal/api/invitation/inspect',
  'POST /portal/api/invitation/accept',
  'POST /portal/api/password_reset/inspect',
  'POST /portal/api/password_reset',
];

const portalRoutes = () => routesOf(svc.app).filter((r) => r.url.startsWith('/portal/api/') && r.url !== '/portal/api/openapi.json');

/** A path for a route: ids that exist nowhere (the role check comes before any lookup). */
const pathOf = (url: string) => url.replace('/portal/api', '').replace(':id', 'zz_unknown_id');

describe('roles, enforced by the server', () => {
  it('every portal route declares its least role (or is one of the public sign-in forms), as the table says', () => {
    const declared = Object.fromEntries(
      portalRoutes()
        .filter((r) => !r.config.public)
        .map((r) => [`${r.method} ${r.url}`, r.config.role]),
    );
    expect(declared).toEqual(EXPECTED_ROLES);
    expect(
      portalRoutes()
        .filter((r) => r.config.public)
        .map((r) => `${r.method} ${r.url}`)
        .sort(),
    ).toEqual([...PUBLIC].sort());
  });

  it("every portal route, called with every role: a role below the route's gets 403 insufficient_role, and the server does nothing", async () => {
    // Signing out last, so each role's session serves every other route first.
    const routes = portalRoutes()
      .filter((r) => !r.config.public)
      .sort(
        (a, b) =>
          Number(a.method === 'DELETE' && a.url === '/portal/api/session') -
          Number(b.method === 'DELETE' && b.url === '/portal/api/session'),
      );
    // Sessions of their own: the last route signs them out.
    const matrix: Record<Role, PortalClient> = {
      admin: await portalSignIn(svc.url, p.portal.email, p.portal.password),
      developer: await portalSignIn(svc.url, 'dev@roles.example', 'a long enough password'),
      viewer: await portalSignIn(svc.url, 'viewer@roles.example', 'a long enough password'),
    };
    let refused = 0;
    for (const route of routes) {
      for (const role of ['viewer', 'developer', 'admin'] as const) {
        const needed = route.config.role as Role;
        const r = await matrix[role].call(
          route.method,
          pathOf(route.url),
          route.method === 'GET' || route.method === 'DELETE' ? undefined : {},
        );
        const name = `${route.method} ${route.url} as ${role}`;
        if (RANK[role] < RANK[needed]) {
          expect([r.status, r.body?.error?.code], name).toEqual([403, 'insufficient_role']);
          refused++;
        } else {
          expect(r.body?.error?.code, `${name}: ${r.text}`).not.toBe('insufficient_role');
          expect(r.status, `${name}: ${r.text}`).not.toBe(401);
        }
      }
    }
    const expected = routes.reduce(
      (n, r) => n + (['viewer', 'developer', 'admin'] as const).filter((role) => RANK[role] < RANK[r.config.role as Role]).length,
      0,
    );
    expect(refused).toBe(expected);
    expect(refused).toBeGreaterThan(20);
    // The refusals changed nothing: each is a `denied` entry, never a success.
    const deniedWrites = await svc.ctx.database.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM audit_events WHERE outcome = 'denied' AND error_code = 'insufficient_role'",
      [],
    );
    expect(Number(deniedWrites[0]!.n)).toBeGreaterThan(10);
  });
});

describe('role escalation through the API', () => {
  it("a developer can't make themselves admin, invite an admin or change settings; an embedded developer can't either", async () => {
    const dev = await inviteAndAccept(svc.url, admin, 'climber@roles.example', 'developer');
    const self = await dev.call('PATCH', `/users/${dev.session.user.id}`, { role: 'admin' });
    expect([self.status, self.body.error.code]).toEqual([403, 'insufficient_role']);
    const invite = await dev.call('POST', '/invitations', { email: 'friend@roles.example', role: 'admin' });
    expect(invite.status).toBe(403);
    const settings = await dev.call('PUT', '/settings', { require_two_factor: false });
    expect(settings.status).toBe(403);
    const users = await admin.call('GET', '/users');
    expect(users.body.data.find((u: { email: string }) => u.email === 'climber@roles.example').role).toBe('developer');

    const embedded = await embeddedSignIn(svc.url, TOKEN, {
      merchant_id: p.merchant_id,
      environment: 'sandbox',
      role: 'developer',
      user: { id: 'ext-dev' },
    });
    expect(embedded.session.role).toBe('developer');
    for (const [method, path, body] of [
      ['GET', '/audit_events', undefined],
      ['PUT', '/settings', { theme: { mode: 'dark' } }],
      ['POST', '/invitations', { email: 'x@roles.example', role: 'admin' }],
    ] as const) {
      const r = await embedded.call(method, path, body);
      expect([r.status, r.body.error.code], `${method} ${path}`).toEqual([403, 'insufficient_role']);
    }
    // A role the session call did not name can't be had: the link fixes it.
    const bogus = await fetch(`${svc.url}/internal/v1/portal_sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ merchant_id: p.merchant_id, environment: 'sandbox', role: 'owner', user: { id: 'x' } }),
    });
    expect(bogus.status).toBe(400);
    expect(((await bogus.json()) as { error: { param: string } }).error.param).toBe('role');
  });

  it("a role change applies at the user's next request, and a Platform always keeps an admin", async () => {
    const second = await inviteAndAccept(svc.url, admin, 'second-admin@roles.example', 'admin');
    expect((await second.call('GET', '/users')).status).toBe(200);
    const demoted = await admin.call('PATCH', `/users/${second.session.user.id}`, { role: 'viewer' });
    expect(demoted.body.role).toBe('viewer');
    expect((await second.call('GET', '/users')).status).toBe(403);
    expect((await second.call('GET', '/session')).body.role).toBe('viewer');
    // The last admin can't be demoted or removed.
    const lastAdmin = await admin.call('PATCH', `/users/${admin.session.user.id}`, { role: 'developer' });
    expect([lastAdmin.status, lastAdmin.body.error.code]).toEqual([409, 'last_admin']);
    const removeSelf = await admin.call('DELETE', `/users/${admin.session.user.id}`);
    expect([removeSelf.status, removeSelf.body.error.code]).toEqual([409, 'cannot_remove_self']);
    const unknownRole = await admin.call('PATCH', `/users/${second.session.user.id}`, { role: 'owner' });
    expect([unknownRole.status, unknownRole.body.error.param]).toEqual([400, 'role']);
  });

  it("removing a user ends their sessions at once; another Platform's admin can't touch them", async () => {
    const leaving = await inviteAndAccept(svc.url, admin, 'leaving@roles.example', 'developer');
    expect((await leaving.call('GET', '/endpoints')).status).toBe(200);
    const other = await svc.platform('Other');
    const otherAdmin = await portalSignIn(svc.url, other.portal.email, other.portal.password);
    const foreign = await otherAdmin.call('DELETE', `/users/${leaving.session.user.id}`);
    expect(foreign.status).toBe(404);
    const removed = await admin.call('DELETE', `/users/${leaving.session.user.id}`);
    expect(removed.status).toBe(200);
    const after = await leaving.call('GET', '/endpoints');
    expect([after.status, after.body.error.code]).toEqual([401, 'not_signed_in']);
    const signIn = await fetch(`${svc.url}/portal/api/session`, {
      method: 'POST',
      headers: { origin: svc.url, 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'leaving@roles.example', password: 'a long enough password' }),
    });
    expect(signIn.status).toBe(401);
  });
});

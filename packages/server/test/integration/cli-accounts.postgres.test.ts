import { randomBytes } from 'node:crypto';
import { userInfo } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { totpCode } from '../../src/accounts/two-factor.ts';
import { createMigratedPgDatabase } from '../helpers/database.ts';
import { killAllPayhooks, runPayhooks, startServe, type ServeProcess } from '../helpers/cli.ts';
import { clientOf, portalRequest, portalSignIn, tokenOf } from '../helpers/portal.ts';

/**
 * The operator's account commands as real processes on a PostgreSQL that a running
 * `payhooks serve` shares: invite, list-users, set-role, reset-password, reset-two-factor,
 * remove-user. What each does is felt by the users' sessions on the server at once, and each is
 * in the Platform's audit trail with the operator as its actor. (The same commands on the
 * embedded database are the same code; cli.test.ts runs the CLI there.)
 */

const TIMEOUT = 60_000;
let env: Record<string, string>;
let drop = async () => {};
let server: ServeProcess;
let platform: { platform_id: string; portal: { email: string; password: string } };

beforeAll(async () => {
  const db = await createMigratedPgDatabase();
  drop = db.drop;
  env = { DATABASE_URL: db.url, PAYHOOKS_ENCRYPTION_KEY: randomBytes(32).toString('hex') };
  const created = await runPayhooks(['admin', 'create-platform', '--name', 'Ops Team', '--json'], env, TIMEOUT);
  expect(created.code, created.stderr).toBe(0);
  platform = JSON.parse(created.stdout);
  server = await startServe(['--no-worker'], env, TIMEOUT);
  // Links the CLI prints point at the server.
  env.PAYHOOKS_PUBLIC_URL = server.url;
}, 120_000);
afterAll(async () => {
  await server?.stop();
  await killAllPayhooks();
  await drop();
});

const run = async (args: string[]) => {
  const r = await runPayhooks(['admin', ...args], env, TIMEOUT);
  expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
  return r.stdout;
};

describe('payhooks admin account commands', () => {
  it('invite prints a single-use link; set-role, reset-password, reset-two-factor and remove-user act on the running server at once; each is audited as the operator', async () => {
    const invitation = JSON.parse(
      await run(['invite', '--platform', platform.platform_id, '--email', 'Dev@Ops.example', '--role', 'developer', '--json']),
    );
    expect(invitation).toMatchObject({ object: 'invitation', email: 'dev@ops.example', role: 'developer', emailed: false });
    expect(invitation.url).toMatch(new RegExp(`^${server.url}/portal/invitation#token=`));
    const accepted = await portalRequest(
      server.url,
      'POST',
      '/invitation/accept',
      { token: tokenOf(invitation.url), password: 'dev chose this one' },
      { origin: server.url },
    );
    expect(accepted.status, accepted.text).toBe(200);
    const dev = clientOf(server.url, accepted);

    const listed = JSON.parse(await run(['list-users', '--platform', platform.platform_id, '--json']));
    expect(listed.map((u: { email: string; role: string }) => [u.email, u.role]).sort()).toEqual(
      [
        [platform.portal.email, 'admin'],
        ['dev@ops.example', 'developer'],
      ].sort(),
    );

    expect(await run(['set-role', '--email', 'dev@ops.example', '--role', 'viewer'])).toContain('dev@ops.example is now viewer');
    const refused = await dev.call('POST', '/endpoints', { url: 'https://ops.example/h', enabled_events: ['*'] });
    expect([refused.status, refused.body.error.code]).toEqual([403, 'insufficient_role']);

    // Two-factor sign-in on; then the operator turns it off for a lost phone.
    const setup = await dev.call('POST', '/account/two_factor/setup');
    expect((await dev.call('POST', '/account/two_factor/enable', { code: totpCode(setup.body.secret, new Date()) })).status).toBe(200);
    expect(
      (
        await portalRequest(
          server.url,
          'POST',
          '/session',
          { email: 'dev@ops.example', password: 'dev chose this one' },
          { origin: server.url },
        )
      ).body.object,
    ).toBe('two_factor_challenge');
    expect(await run(['reset-two-factor', '--email', 'dev@ops.example'])).toContain('two-factor sign-in is off');
    expect((await dev.call('GET', '/account')).status).toBe(401);
    const again = await portalSignIn(server.url, 'dev@ops.example', 'dev chose this one');
    expect(again.session.role).toBe('viewer');

    const reset = JSON.parse(await run(['reset-password', '--email', 'dev@ops.example', '--json']));
    expect(reset.url).toMatch(new RegExp(`^${server.url}/portal/reset-password#token=`));
    const chosen = await portalRequest(
      server.url,
      'POST',
      '/password_reset',
      { token: tokenOf(reset.url), password: 'after the reset' },
      { origin: server.url },
    );
    expect(chosen.status, chosen.text).toBe(200);
    expect((await again.call('GET', '/account')).status).toBe(401);
    const afterReset = await portalSignIn(server.url, 'dev@ops.example', 'after the reset');

    expect(await run(['remove-user', '--email', 'dev@ops.example'])).toContain('their sessions have ended');
    const key = JSON.parse(await run(['create-key', '--platform', platform.platform_id, '--environment', 'sandbox', '--json']));
    expect(await run(['revoke-key', key.id])).toContain(`revoked ${key.id}`);
    expect((await afterReset.call('GET', '/endpoints')).status).toBe(401);

    const admin = await portalSignIn(server.url, platform.portal.email, platform.portal.password);
    const trail = await admin.call('GET', '/audit_events?actor_type=operator&limit=100');
    const login = userInfo().username;
    expect(trail.body.data.every((e: { actor: { id: string } }) => e.actor.id === login)).toBe(true);
    const actions = trail.body.data.map((e: { action: string }) => e.action);
    expect(actions.slice(0, 7)).toEqual([
      'api_key.revoke',
      'api_key.create',
      'portal_user.remove',
      'portal_user.password_reset_issue',
      'portal_user.two_factor_reset',
      'portal_user.role_change',
      'portal_user.invite',
    ]);
    // create-platform's four entries share its transaction (and often its millisecond).
    expect(actions.slice(7).sort()).toEqual(['api_key.create', 'api_key.create', 'platform.create', 'portal_user.create']);
    expect(trail.body.data[0].resource).toEqual({ type: 'api_key', id: key.id });
    expect(trail.body.data[0].origin.user_agent).toMatch(/^payhooks-cli on /);
  }, 180_000);

  it('an email with accounts on two Platforms: a command naming it by email alone exits 1 asking for --platform, and acts on the one --platform names', async () => {
    const second = JSON.parse(await run(['create-platform', '--name', 'Second team', '--email', 'both@ops.example', '--json']));
    const first = JSON.parse(await run(['create-platform', '--name', 'First team', '--email', 'both@ops.example', '--json']));
    const ambiguous = await runPayhooks(['admin', 'reset-password', '--email', 'both@ops.example'], env, TIMEOUT);
    expect(ambiguous.code).toBe(1);
    expect(ambiguous.stderr).toContain('has an account on several Platforms');
    expect(ambiguous.stderr).toContain('--platform');
    const named = JSON.parse(await run(['reset-password', '--email', 'both@ops.example', '--platform', second.platform_id, '--json']));
    const [owner] = JSON.parse(await run(['list-users', '--platform', second.platform_id, '--json']));
    expect(named.user_id).toBe(owner.id);
    expect(first.platform_id).not.toBe(second.platform_id);
  });

  it('a bad role, an unknown email or removing the last admin exits 1 with one line saying why', async () => {
    const badRole = await runPayhooks(['admin', 'set-role', '--email', platform.portal.email, '--role', 'owner'], env, TIMEOUT);
    expect(badRole.code).toBe(1);
    expect(badRole.stderr).toContain('owner');
    const unknown = await runPayhooks(['admin', 'reset-password', '--email', 'nobody@ops.example'], env, TIMEOUT);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^payhooks: No portal user with the email nobody@ops\.example/);
    const last = await runPayhooks(['admin', 'remove-user', '--email', platform.portal.email], env, TIMEOUT);
    expect(last.code).toBe(1);
    expect(last.stderr).toContain('last admin');
    expect(last.stderr).not.toMatch(/\n\s+at /);
  }, 120_000);
});

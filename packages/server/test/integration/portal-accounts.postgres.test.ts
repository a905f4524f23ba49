import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIGN_IN_LIMITS } from '../../src/api/portal/sign-in-limits.ts';
import { TWO_FACTOR_MAX_ATTEMPTS } from '../../src/accounts/sign-in.ts';
import { totpCode, TOTP_PERIOD_S } from '../../src/accounts/two-factor.ts';
import { ManualClock, startService, type TestService } from '../helpers/service.ts';
import { clientOf, inviteAndAccept, portalRequest, portalSignIn, tokenOf, type PortalClient } from '../helpers/portal.ts';
import { startSmtp } from '../helpers/smtp.ts';

/**
 * Accounts of the standalone portal: invitations (mailed through a real SMTP server on this
 * machine), one's own password, an operator's reset, two-factor sign-in (RFC 6238) with
 * recovery codes and a per-Platform requirement, session timeouts, and the sign-in limits on
 * every new form.
 *
 * PostgreSQL only: every one of these routes also runs once on the embedded database in
 * audit-trail.test.ts (its completeness test calls each changing route for real), which is what
 * the second backend adds; starting more embedded databases here cost 10 s each.
 */

/** The text of a mail's body, with quoted-printable soft line breaks joined. */
const bodyOf = (raw: string) => raw.replace(/=\r?\n/g, '').replace(/=3D/g, '=');

let smtp: Awaited<ReturnType<typeof startSmtp>>;
let svc: TestService;
let clock: ManualClock;
let admin: PortalClient;
let platform: Awaited<ReturnType<TestService['platform']>>;
const PASSWORD = 'a long enough password';
/** Another client address (the test trusts its proxy): the tests below keep their own sign-in allowance. */
const otherAddress = { 'x-forwarded-for': '198.51.100.77' };

beforeAll(async () => {
  smtp = await startSmtp();
  clock = new ManualClock(new Date());
  svc = await startService(
    {
      smtpUrl: smtp.url,
      smtpFrom: 'Webhooks <webhooks@payments.example>',
      portalIdleTimeoutMs: 10 * 60_000,
      portalSessionLifetimeMs: 3_600_000,
      // Each request's X-Forwarded-For is its client address (the limits test below).
      trustProxy: ['127.0.0.1'],
    },
    { clock },
  );
  platform = await svc.platform('Accounts');
  admin = await portalSignIn(svc.url, platform.portal.email, platform.portal.password);
});
afterAll(async () => {
  await svc?.close();
  await smtp?.close();
});

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  portalRequest(svc.url, 'POST', path, body, { origin: svc.url, ...headers });

describe('invitations', () => {
  it('an admin invites a teammate: the single-use link is shown once and mailed through SMTP; accepting it signs them in with their role', async () => {
    const invited = await admin.call('POST', '/invitations', { email: 'New.Person@Team.example', role: 'developer' });
    expect(invited.status).toBe(201);
    expect(invited.body).toMatchObject({ object: 'invitation', email: 'new.person@team.example', role: 'developer', emailed: true });
    expect(invited.body.url).toMatch(new RegExp(`^${svc.url}/portal/invitation#token=[A-Za-z0-9_-]{43}$`));
    const mail = smtp.mails.find((m) => m.to === 'new.person@team.example');
    expect(mail, JSON.stringify(smtp.mails)).toBeDefined();
    expect(mail!.raw).toContain('From: Webhooks <webhooks@payments.example>');
    expect(mail!.raw).toMatch(/Subject: You are invited to Accounts on payhooks/);
    expect(bodyOf(mail!.raw)).toContain(invited.body.url);
    // Listed while open, never with its link.
    const open = await admin.call('GET', '/invitations');
    expect(open.body.data.map((i: { email: string }) => i.email)).toContain('new.person@team.example');
    expect(JSON.stringify(open.body)).not.toContain(tokenOf(invited.body.url));

    const token = tokenOf(invited.body.url);
    const preview = await post('/invitation/inspect', { token });
    expect(preview.body).toMatchObject({ email: 'new.person@team.example', role: 'developer', platform_name: 'Accounts' });
    const short = await post('/invitation/accept', { token, password: 'short' });
    expect([short.status, short.body.error.code]).toEqual([400, 'password_too_short']);
    const accepted = await post('/invitation/accept', { token, password: PASSWORD, name: 'New Person' });
    expect(accepted.status, accepted.text).toBe(200);
    expect(accepted.body).toMatchObject({
      kind: 'password',
      role: 'developer',
      user: { email: 'new.person@team.example', name: 'New Person' },
    });
    const member = clientOf(svc.url, accepted);
    expect((await member.call('GET', '/endpoints')).status).toBe(200);
    // Single use: the same link again is refused, and so is a revoked one.
    const again = await post('/invitation/accept', { token, password: PASSWORD });
    expect([again.status, again.body.error.code]).toEqual([401, 'invitation_invalid']);
    const second = await admin.call('POST', '/invitations', { email: 'revoked@team.example', role: 'viewer' });
    expect((await admin.call('DELETE', `/invitations/${second.body.id}`)).status).toBe(200);
    const revoked = await post('/invitation/accept', { token: tokenOf(second.body.url), password: PASSWORD });
    expect(revoked.status).toBe(401);
    const taken = await admin.call('POST', '/invitations', { email: 'new.person@team.example', role: 'viewer' });
    expect([taken.status, taken.body.error.code]).toEqual([409, 'email_taken']);
  });

  it("an admin learns nothing about other Platforms' users: inviting one's email answers as for an unknown one, and accepting makes a separate account on this team", async () => {
    const other = await svc.platform('Other team');
    const victim = other.portal.email;
    const unknown = `nobody-yet-${Date.now()}@other.example`;
    const toVictim = await admin.call('POST', '/invitations', { email: victim, role: 'viewer' });
    const toUnknown = await admin.call('POST', '/invitations', { email: unknown, role: 'viewer' });
    expect([toVictim.status, toUnknown.status]).toEqual([201, 201]);
    expect(Object.keys(toVictim.body).sort()).toEqual(Object.keys(toUnknown.body).sort());
    expect(toVictim.body).toMatchObject({ object: 'invitation', email: victim, role: 'viewer', emailed: true });
    // Accepting (by whoever holds the link) goes the same way for both.
    const [a, b] = [
      await post('/invitation/accept', { token: tokenOf(toVictim.body.url), password: 'chosen on this team 1' }, otherAddress),
      await post('/invitation/accept', { token: tokenOf(toUnknown.body.url), password: 'chosen on this team 2' }, otherAddress),
    ];
    expect([a.status, b.status], a.text + b.text).toEqual([200, 200]);
    expect(a.body.platform.id).toBe(platform.platform_id);
    // Two accounts for the victim's email now, one per Platform, each opened by its own password.
    const here = await post('/session', { email: victim, password: 'chosen on this team 1' }, otherAddress);
    expect(here.body.platform?.id).toBe(platform.platform_id);
    const there = await post('/session', { email: victim, password: other.portal.password }, otherAddress);
    expect(there.body.platform?.id).toBe(other.platform_id);
    // The same email is on this team now: a second invitation is the one refusal, about this team.
    const again = await admin.call('POST', '/invitations', { email: victim, role: 'viewer' });
    expect([again.status, again.body.error.code]).toEqual([409, 'email_taken']);
    expect(again.body.error.message).toContain('already on your team');
  });

  it("an email's accounts on two Platforms can't share a password (sign-in picks the account by it)", async () => {
    const other = await svc.platform('Third team');
    const invited = await admin.call('POST', '/invitations', { email: other.portal.email, role: 'viewer' });
    const reused = await post('/invitation/accept', { token: tokenOf(invited.body.url), password: other.portal.password }, otherAddress);
    expect([reused.status, reused.body.error.code, reused.body.error.param]).toEqual([400, 'password_reused', 'password']);
  });

  it('an invitation expires after a week', async () => {
    const invited = await admin.call('POST', '/invitations', { email: 'late@team.example', role: 'viewer' });
    clock.advance(7 * 86_400_000 + 1000);
    try {
      const late = await post('/invitation/accept', { token: tokenOf(invited.body.url), password: PASSWORD });
      expect([late.status, late.body.error.code]).toEqual([401, 'invitation_invalid']);
    } finally {
      clock.advance(-(7 * 86_400_000 + 1000));
    }
  });
});

describe('passwords', () => {
  it('a user changes their own password: the current one is checked, their other sessions end, this one goes on', async () => {
    const user = await inviteAndAccept(svc.url, admin, 'changer@team.example', 'viewer');
    const elsewhere = await portalSignIn(svc.url, 'changer@team.example', PASSWORD);
    const wrong = await user.call('PUT', '/account/password', { current_password: 'not it at all', new_password: 'a new long password' });
    expect([wrong.status, wrong.body.error.code]).toEqual([401, 'invalid_password']);
    const changed = await user.call('PUT', '/account/password', { current_password: PASSWORD, new_password: 'a new long password' });
    expect(changed.status, changed.text).toBe(200);
    expect((await user.call('GET', '/account')).status).toBe(200);
    expect((await elsewhere.call('GET', '/account')).status).toBe(401);
    expect((await post('/session', { email: 'changer@team.example', password: PASSWORD })).status).toBe(401);
    expect((await post('/session', { email: 'changer@team.example', password: 'a new long password' })).status).toBe(200);
  });

  it("an operator's reset link lets the user choose a new password once; every session of theirs ends", async () => {
    const user = await inviteAndAccept(svc.url, admin, 'forgetful@team.example', 'developer');
    const reset = await svc.ctx.accounts.resets.issue('forgetful@team.example', { actor: { type: 'operator', id: 'ops' } });
    expect(reset.emailed).toBe(true);
    const resetMail = smtp.mails.filter((m) => m.to === 'forgetful@team.example').at(-1)!;
    expect(resetMail.raw).toMatch(/Subject: Choose a new payhooks portal password/);
    expect(bodyOf(resetMail.raw)).toContain(reset.url);
    const token = tokenOf(reset.url);
    expect((await post('/password_reset/inspect', { token })).body.email).toBe('forgetful@team.example');
    const done = await post('/password_reset', { token, password: 'chosen after reset' });
    expect(done.status, done.text).toBe(200);
    expect((await user.call('GET', '/account')).status).toBe(401);
    expect((await post('/password_reset', { token, password: 'chosen again later' })).status).toBe(401);
    expect((await post('/session', { email: 'forgetful@team.example', password: 'chosen after reset' })).status).toBe(200);
  });

  it('a reset link ends when a newer one is issued, when another completes, and when the user changes the password', async () => {
    // Few requests: the reset form and sign-in share per-address limits with the tests below.
    const user = await inviteAndAccept(svc.url, admin, 'twice@team.example', 'viewer');
    const issue = async () =>
      tokenOf((await svc.ctx.accounts.resets.issue('twice@team.example', { actor: { type: 'operator', id: 'ops' } })).url);
    const refused = async (token: string, what: string) => {
      const r = await post('/password_reset', { token, password: `set by an old link ${what}` }, otherAddress);
      expect([r.status, r.body.error?.code], what).toEqual([401, 'password_reset_invalid']);
    };

    // A link issued, then the password changed under Account: the link is dead.
    const early = await issue();
    const changed = await user.call('PUT', '/account/password', { current_password: PASSWORD, new_password: 'changed under account' });
    expect(changed.status, changed.text).toBe(200);
    await refused(early, 'after a password change');

    // The attack: link 1, link 2, complete link 2; link 1 must not set a password afterwards.
    const first = await issue();
    const second = await issue();
    expect((await post('/password_reset', { token: second, password: 'chosen with link two' }, otherAddress)).status).toBe(200);
    await refused(first, 'after a newer link completed');
    // Superseded without any completion: a newer link ends the one before it at once.
    const third = await issue();
    await issue();
    await refused(third, 'superseded by a newer link');
    expect((await post('/session', { email: 'twice@team.example', password: 'chosen with link two' }, otherAddress)).status).toBe(200);
  });
});

describe('two-factor sign-in (RFC 6238)', () => {
  it('set up with a code from the app; sign-in then asks for a code; each code and each recovery code works once', async () => {
    const user = await inviteAndAccept(svc.url, admin, 'careful@team.example', 'developer');
    const setup = await user.call('POST', '/account/two_factor/setup');
    expect(setup.body.otpauth_uri).toMatch(/^otpauth:\/\/totp\/payhooks:careful%40team\.example\?.*secret=/);
    const wrong = await user.call('POST', '/account/two_factor/enable', { code: '000000' });
    expect(wrong.status).toBe(400);
    const enabled = await user.call('POST', '/account/two_factor/enable', { code: totpCode(setup.body.secret, clock.now()) });
    expect(enabled.status, enabled.text).toBe(200);
    expect(enabled.body.codes).toHaveLength(10);
    expect((await user.call('GET', '/account')).body.two_factor).toEqual({ enabled: true, required: false, recovery_codes_left: 10 });

    // The password alone no longer starts a session.
    const first = await post('/session', { email: 'careful@team.example', password: PASSWORD });
    expect(first.body.object).toBe('two_factor_challenge');
    expect(first.headers.getSetCookie().some((c) => c.startsWith('payhooks_portal='))).toBe(false);
    // The code that enabled it was used: the same 30-second code is refused.
    const replayed = await post('/session/two_factor', { challenge: first.body.challenge, code: totpCode(setup.body.secret, clock.now()) });
    expect([replayed.status, replayed.body.error.code]).toEqual([401, 'invalid_two_factor_code']);
    clock.advance(TOTP_PERIOD_S * 1000);
    const ok = await post('/session/two_factor', { challenge: first.body.challenge, code: totpCode(setup.body.secret, clock.now()) });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.user.email).toBe('careful@team.example');

    // A recovery code, once.
    const [code] = enabled.body.codes as string[];
    const viaRecovery = await post('/session', { email: 'careful@team.example', password: PASSWORD });
    expect((await post('/session/two_factor', { challenge: viaRecovery.body.challenge, code })).status).toBe(200);
    const reused = await post('/session', { email: 'careful@team.example', password: PASSWORD });
    expect((await post('/session/two_factor', { challenge: reused.body.challenge, code })).status).toBe(401);
    expect((await clientOf(svc.url, ok).call('GET', '/account')).body.two_factor.recovery_codes_left).toBe(9);
  });

  it(`a challenge takes ${TWO_FACTOR_MAX_ATTEMPTS} wrong codes, then it is spent even for the right one`, async () => {
    const user = await inviteAndAccept(svc.url, admin, 'guessed@team.example', 'viewer');
    const setup = await user.call('POST', '/account/two_factor/setup');
    await user.call('POST', '/account/two_factor/enable', { code: totpCode(setup.body.secret, clock.now()) });
    clock.advance(TOTP_PERIOD_S * 1000);
    const { challenge } = (await post('/session', { email: 'guessed@team.example', password: PASSWORD })).body;
    const codes: string[] = [];
    for (let i = 0; i < TWO_FACTOR_MAX_ATTEMPTS; i++)
      codes.push((await post('/session/two_factor', { challenge, code: `00000${i}` })).body.error.code);
    expect(codes.at(-1)).toBe('two_factor_challenge_expired');
    const right = await post('/session/two_factor', { challenge, code: totpCode(setup.body.secret, clock.now()) });
    expect([right.status, right.body.error.code]).toEqual([401, 'two_factor_challenge_expired']);
  });

  it("a Platform can require it: a user without it can do nothing but set it up; then it can't be turned off", async () => {
    const user = await inviteAndAccept(svc.url, admin, 'required@team.example', 'developer');
    expect((await admin.call('PUT', '/settings', { require_two_factor: true })).body.require_two_factor).toBe(true);
    try {
      const signedIn = await post('/session', { email: 'required@team.example', password: PASSWORD });
      expect(signedIn.body.needs_two_factor_setup).toBe(true);
      const pending = clientOf(svc.url, signedIn);
      const blocked = await pending.call('GET', '/endpoints');
      expect([blocked.status, blocked.body.error.code]).toEqual([403, 'two_factor_setup_required']);
      const setup = await pending.call('POST', '/account/two_factor/setup');
      const enabled = await pending.call('POST', '/account/two_factor/enable', { code: totpCode(setup.body.secret, clock.now()) });
      expect(enabled.status).toBe(200);
      expect((await pending.call('GET', '/endpoints')).status).toBe(200);
      const off = await pending.call('DELETE', '/account/two_factor', { password: PASSWORD });
      expect([off.status, off.body.error.code]).toEqual([409, 'two_factor_required']);
      // The session that existed before the requirement is unaffected only until its next sign-in.
      expect((await user.call('GET', '/endpoints')).status).toBe(200);
    } finally {
      await admin.call('PUT', '/settings', { require_two_factor: false });
    }
  });
});

describe('sessions end', () => {
  it('after the idle timeout, saying so; activity keeps a session alive until its absolute lifetime', async () => {
    const user = await inviteAndAccept(svc.url, admin, 'idle@team.example', 'viewer');
    clock.advance(10 * 60_000 + 1000);
    const idle = await user.call('GET', '/endpoints');
    expect([idle.status, idle.body.error.code]).toEqual([401, 'session_idle']);
    expect(idle.body.error.message).toContain('10 minutes without activity');

    const busy = await portalSignIn(svc.url, 'idle@team.example', PASSWORD);
    for (let i = 0; i < 11; i++) {
      clock.advance(5 * 60_000);
      expect((await busy.call('GET', '/endpoints')).status, `minute ${(i + 1) * 5}`).toBe(200);
    }
    clock.advance(5 * 60_000);
    const expired = await busy.call('GET', '/endpoints');
    expect([expired.status, expired.body.error.code]).toEqual([401, 'session_expired']);
  });
});

describe('the sign-in limits hold for every new form', () => {
  it('invitation, reset and link forms are limited per address; the two-factor step per email like the password', async () => {
    const from = { 'x-forwarded-for': '198.51.100.9' };
    const statuses: number[] = [];
    for (let i = 0; i < SIGN_IN_LIMITS.perAddress + 1; i++) {
      const path = ['/invitation/accept', '/password_reset', '/session/link'][i % 3]!;
      const body = path === '/session/link' ? { token: 'x'.repeat(43) } : { token: 'x'.repeat(43), password: PASSWORD };
      statuses.push((await post(path, body, from)).status);
    }
    expect(statuses.slice(0, -1).every((s) => s === 401)).toBe(true);
    expect(statuses.at(-1)).toBe(429);
    const other = await post('/invitation/inspect', { token: 'x'.repeat(43) }, { 'x-forwarded-for': '198.51.100.10' });
    expect(other.status).toBe(401);

    // The admin's earlier session ended in the idle test above.
    const freshAdmin = await portalSignIn(svc.url, platform.portal.email, platform.portal.password);
    const user = await inviteAndAccept(svc.url, freshAdmin, 'limited@team.example', 'viewer');
    const setup = await user.call('POST', '/account/two_factor/setup');
    await user.call('POST', '/account/two_factor/enable', { code: totpCode(setup.body.secret, clock.now()) });
    const guesses: number[] = [];
    const at = { 'x-forwarded-for': '198.51.100.20' };
    for (let i = 0; i < SIGN_IN_LIMITS.perEmailAndAddress + 1; i++) {
      const first = await post('/session', { email: 'limited@team.example', password: PASSWORD }, at);
      if (first.status !== 200) {
        guesses.push(first.status);
        continue;
      }
      guesses.push((await post('/session/two_factor', { challenge: first.body.challenge, code: '123456' }, at)).status);
    }
    // Password and code count together against the email from one address: 10 a minute.
    expect(guesses.filter((s) => s === 401).length).toBeLessThan(SIGN_IN_LIMITS.perEmailAndAddress);
    expect(guesses.at(-1)).toBe(429);
  });
});

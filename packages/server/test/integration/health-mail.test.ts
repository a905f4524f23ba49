import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { publish } from '../helpers/publish.ts';
import { internalCall, portalSignIn } from '../helpers/portal.ts';
import { parseMail, startSmtp, type ReceivedMail } from '../helpers/smtp.ts';
import { createPortalUser } from '../../src/accounts/users.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';
import type { AutoDisableJob } from '../../src/endpoints/auto-disable.ts';

/**
 * Mail to the merchant's team when an endpoint's health changes (alerts/health-mail.ts), through a
 * real SMTP server: to developers and admins (not viewers, not those who turned it off) and the
 * Platform's alert addresses; one mail per change however many workers sweep, one digest for
 * several; live on and sandbox off by default; one-click unsubscribe (RFC 8058); a payment service
 * turning it off for a Platform through the internal API. On the injected clock.
 */

const MIN = 60_000;
const HOUR = 60 * MIN;
const TOKEN = 'health-mail-internal-token-0123456789abcdef';
const T0 = Date.UTC(2026, 11, 2, 9, 0, 0);
const clock = new ManualClock(T0);
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let svc: TestService;
let worker: DeliveryWorker;
let sweepers: AutoDisableJob[];
let receiver: TestReceiver;

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
  receiver = await startReceiver((req) => (req.path.startsWith('/down') ? { status: 503, body: 'maintenance' } : { status: 200 }));
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
  await smtp?.close();
});

const at = (path: string) => receiver.url.replace('/webhooks', path);

/** The clock moves; due attempts are made; two workers sweep (health, auto-disable, mail) side by side. */
async function step(ms: number) {
  clock.set(ms);
  await worker.drain();
  await Promise.all(sweepers.map((s) => s.runOnce()));
}

async function team(p: CreatedPlatform) {
  const add = (email: string, role: 'viewer' | 'developer' | 'admin') =>
    createPortalUser(
      svc.ctx.database.db,
      { platformId: p.platform_id, email, role, password: 'a long enough password' },
      svc.ctx.passwordCost,
    );
  return {
    dev: await add(`dev-${p.platform_id}@shop.example`, 'developer'),
    viewer: await add(`viewer-${p.platform_id}@shop.example`, 'viewer'),
  };
}

const mailsTo = (email: string, from: number) => smtp.mails.slice(from).filter((m) => m.to === email);
const endpoint = async (p: CreatedPlatform, path: string, environment: 'live' | 'sandbox') =>
  (
    await svc.api(environment === 'live' ? p.keys.live : p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url: at(path),
      enabled_events: ['*'],
      description: `Orders (${path})`,
    })
  ).body as { id: string };

describe('health mail', () => {
  it('a live endpoint failing, warned, disabled and recovering mails the developers, admins and alert addresses once per change, with what to fix and where', async () => {
    const p = await svc.platform('Acme Shop');
    const { dev, viewer } = await team(p);
    const set = await internalCall(svc.url, TOKEN, 'PUT', `/platforms/${p.platform_id}/alert_settings`, {
      emails: ['OnCall@Shop.example'],
      endpoint_link_template: 'https://dashboard.example.com/webhooks/endpoints/{endpoint_id}',
    });
    expect(set.status, set.text).toBe(200);
    expect(set.body).toMatchObject({ mail_live: true, mail_sandbox: false, emails: ['oncall@shop.example'] });
    const ep = await endpoint(p, '/down/live', 'live');
    const from = smtp.mails.length;

    await publish(svc.ctx, p.merchant_id, { environment: 'live' });
    await publish(svc.ctx, p.merchant_id, { environment: 'live' });
    for (const m of [0, 5, 10, 15]) await step(T0 + m * MIN);
    const recipients = [p.portal.email, dev.email, 'oncall@shop.example'];
    const failing = recipients.map((r) => mailsTo(r, from));
    expect(failing.map((m) => m.length)).toEqual([1, 1, 1]);
    expect(mailsTo(viewer.email, from)).toEqual([]);
    const mail = parseMail(failing[1]![0]!.raw);
    expect(mail.headers.subject).toBe(`[Acme Shop] Live webhook endpoint ${at('/down/live')} is failing`);
    expect(mail.headers['list-unsubscribe']).toMatch(/^<https:\/\/webhooks\.payments\.example\/email\/unsubscribe\?token=u\.[^>]+>$/);
    expect(mail.headers['list-unsubscribe-post']).toBe('List-Unsubscribe=One-Click');
    expect(mail.text).toContain(`Endpoint: ${at('/down/live')} (${ep.id})`);
    expect(mail.text).toContain('Description: Orders (/down/live)');
    expect(mail.text).toContain('Environment: Live');
    expect(mail.text).toContain('Every attempt has failed since 2026-12-02T09:00:00Z. It will be disabled at 2026-12-02T13:00:00Z');
    expect(mail.text).toMatch(/Last attempts: 2026-12-02T09:15:00Z HTTP 503; /);
    expect(mail.text).toContain('Deliveries waiting for a retry: 2.');
    expect(mail.text).toContain(`Open it: https://dashboard.example.com/webhooks/endpoints/${ep.id}`);
    // The alert address's unsubscribe link names the address, not a user.
    expect(parseMail(failing[2]![0]!.raw).headers['list-unsubscribe']).toContain('token=a.');

    // Warnings, then disabled: one mail each per recipient, whatever two workers do.
    await step(T0 + 2 * HOUR);
    await step(T0 + 3.6 * HOUR);
    await step(T0 + 4 * HOUR);
    const subjects = mailsTo(dev.email, from).map((m) => parseMail(m.raw).headers.subject);
    expect(subjects).toEqual([
      `[Acme Shop] Live webhook endpoint ${at('/down/live')} is failing`,
      `[Acme Shop] Live webhook endpoint ${at('/down/live')} will be disabled at 2026-12-02T13:00:00Z unless a delivery succeeds (50% of the way)`,
      `[Acme Shop] Live webhook endpoint ${at('/down/live')} will be disabled at 2026-12-02T13:00:00Z unless a delivery succeeds (90% of the way)`,
      `[Acme Shop] Live webhook endpoint ${at('/down/live')} was disabled after failing`,
    ]);
    const disabled = parseMail(mailsTo(dev.email, from)[3]!.raw).text;
    expect(disabled).toContain('Deliveries waiting for a retry: 2. Exhausted (every attempt failed) in the last 7 days: 0.');
    expect(disabled).toContain('Disabled at 2026-12-02T13:00:00Z: new events are not sent to it.');
    expect(mailsTo('oncall@shop.example', from)).toHaveLength(4);

    // Fixed (a new URL) and enabled: the first 2xx is a recovery, mailed once.
    const fixed = await svc.api(p.keys.live, 'PATCH', `/api/v1/webhook_endpoints/${ep.id}`, { url: at('/up/live'), status: 'enabled' });
    expect(fixed.status, JSON.stringify(fixed.body)).toBe(200);
    await publish(svc.ctx, p.merchant_id, { environment: 'live' });
    await step(T0 + 5 * HOUR);
    await step(T0 + 5 * HOUR + MIN);
    const last = mailsTo(dev.email, from).map((m) => parseMail(m.raw));
    expect(last).toHaveLength(5);
    expect(last[4]!.headers.subject).toBe(`[Acme Shop] Live webhook endpoint ${at('/up/live')} recovered`);
    expect(last[4]!.text).toContain('Recovered at 2026-12-02T14:00:00Z');
  });

  it('several endpoints changing at once make one digest; sandbox is off by default and on when the Platform says so', async () => {
    const p = await svc.platform('Digest Shop');
    const { dev } = await team(p);
    const start = clock.now().getTime();
    await endpoint(p, '/down/a', 'live');
    await endpoint(p, '/down/b', 'live');
    await endpoint(p, '/down/sandbox', 'sandbox');
    const from = smtp.mails.length;
    await publish(svc.ctx, p.merchant_id, { environment: 'live' });
    await publish(svc.ctx, p.merchant_id, { environment: 'sandbox' });
    for (const m of [0, 5, 10, 15]) await step(start + m * MIN);
    const mails = mailsTo(dev.email, from).map((m) => parseMail(m.raw));
    expect(mails.map((m) => m.headers.subject)).toEqual(['[Digest Shop] 2 live webhook endpoints need attention']);
    expect(mails[0]!.text).toContain(`${at('/down/a')} is failing.`);
    expect(mails[0]!.text).toContain(`${at('/down/b')} is failing.`);
    expect(mails[0]!.text).not.toContain('/down/sandbox');

    // Sandbox mail on: the next sandbox change is mailed.
    const admin = await portalSignIn(svc.url, p.portal.email, p.portal.password);
    const on = await admin.call('PUT', '/settings', { alerts: { mail_sandbox: true } });
    expect(on.body.alerts).toMatchObject({ mail_sandbox: true, mail_live: true });
    const second = clock.now().getTime();
    await endpoint(p, '/down/sandbox-2', 'sandbox');
    await publish(svc.ctx, p.merchant_id, { environment: 'sandbox' });
    for (const m of [0, 5, 10, 15]) await step(second + m * MIN);
    const later = mailsTo(dev.email, from).map((m) => parseMail(m.raw).headers.subject);
    expect(later).toContain(`[Digest Shop] Sandbox webhook endpoint ${at('/down/sandbox-2')} is failing`);
  });

  it('one-click unsubscribe (a mail client posting List-Unsubscribe=One-Click) stops the mail to that user, and a forged link is refused', async () => {
    const p = await svc.platform('Quiet Shop');
    const { dev } = await team(p);
    const start = clock.now().getTime();
    await endpoint(p, '/down/quiet', 'live');
    let from = smtp.mails.length;
    await publish(svc.ctx, p.merchant_id, { environment: 'live' });
    for (const m of [0, 5, 10, 15]) await step(start + m * MIN);
    const [mail] = mailsTo(dev.email, from).map((m: ReceivedMail) => parseMail(m.raw));
    const link = /^<(.+)>$/.exec(mail!.headers['list-unsubscribe']!)![1]!;
    const path = link.replace('https://webhooks.payments.example', '');
    const page = await fetch(`${svc.url}${path}`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<button>Stop these mails</button>');
    const oneClick = await fetch(`${svc.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'List-Unsubscribe=One-Click',
    });
    expect(oneClick.status, await oneClick.clone().text()).toBe(200);
    expect(await oneClick.text()).toContain(`Done: ${dev.email}`);
    const bad = await fetch(`${svc.url}${path.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'))}`, { method: 'POST' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('unsubscribe_link_invalid');

    // The next change reaches the admin but not the developer who left.
    from = smtp.mails.length;
    await step(start + 2 * HOUR);
    expect(mailsTo(p.portal.email, from)).toHaveLength(1);
    expect(mailsTo(dev.email, from)).toEqual([]);
    // Under Account the developer turns it on again.
    const signedIn = await portalSignIn(svc.url, dev.email, 'a long enough password');
    const account = await signedIn.call('PUT', '/account/health_mail', { health_mail: true });
    expect(account.body.health_mail).toBe(true);
  });

  it('a payment service that alerts through its own channels turns the mail off for a Platform: its endpoints change health with no mail', async () => {
    const p = await svc.platform('Own Channels');
    const { dev } = await team(p);
    const off = await internalCall(svc.url, TOKEN, 'PUT', `/platforms/${p.platform_id}/alert_settings`, { mail_live: false });
    expect(off.body.mail_live).toBe(false);
    const start = clock.now().getTime();
    const ep = await endpoint(p, '/down/own', 'live');
    const from = smtp.mails.length;
    await publish(svc.ctx, p.merchant_id, { environment: 'live' });
    for (const m of [0, 5, 10, 15]) await step(start + m * MIN);
    expect((await svc.api(p.keys.live, 'GET', `/api/v1/webhook_endpoints/${ep.id}`)).body.health.state).toBe('failing');
    expect(mailsTo(dev.email, from)).toEqual([]);
    expect(mailsTo(p.portal.email, from)).toEqual([]);
    const bad = await internalCall(svc.url, TOKEN, 'PUT', `/platforms/${p.platform_id}/alert_settings`, {
      endpoint_link_template: 'javascript:alert(1)//{endpoint_id}',
    });
    expect([bad.status, bad.body.error.param]).toEqual([400, 'alerts[endpoint_link_template]']);
  });
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issue, makeCa } from '../helpers/certificates.ts';
import { ManualClock, startService, type TestService } from '../helpers/service.ts';
import { createPortalUser } from '../../src/accounts/users.ts';
import { parseMail, startSmtp } from '../helpers/smtp.ts';
import { certificateStage } from '../../src/endpoints/certificate-expiry.ts';
import type { AutoDisableJob } from '../../src/endpoints/auto-disable.ts';

/**
 * The health alerts warn the merchant's team before an endpoint's client certificate (mutual TLS)
 * expires: 30 days ahead, 7 days ahead and once it has expired, each once however many workers
 * sweep; a new certificate starts again. Through a real SMTP server, on the injected clock.
 */

const DAY = 86_400_000;
const clock = new ManualClock(Date.now());
let dir: string;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let svc: TestService;
let sweepers: AutoDisableJob[];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'payhooks-cert-expiry-'));
  makeCa(dir, 'gw-ca');
  smtp = await startSmtp();
  svc = await startService(
    {
      allowPrivateUrls: true,
      smtpUrl: smtp.url,
      smtpFrom: 'Webhooks <webhooks@payments.example>',
      publicUrl: 'https://webhooks.payments.example',
    },
    { clock },
  );
  sweepers = [svc.ctx.createAutoDisableJob(), svc.ctx.createAutoDisableJob()];
});
afterAll(async () => {
  await svc?.close();
  await smtp?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function sweep(advanceMs: number) {
  clock.advance(advanceMs);
  await Promise.all(sweepers.map((s) => s.runOnce()));
}

describe('health alerts: a client certificate about to expire', () => {
  it('stages: 30 days ahead, then 7 (and expired stays 7); none further out', () => {
    expect(certificateStage(31 * DAY, 0)).toBeNull();
    expect(certificateStage(30 * DAY, 0)).toBe(30);
    expect(certificateStage(7 * DAY + 1, 0)).toBe(30);
    expect(certificateStage(7 * DAY, 0)).toBe(7);
    expect(certificateStage(0, DAY)).toBe(7);
  });

  it('mails the team 30 and 7 days ahead and when it expired, once each; a new certificate is quiet until its own time', async () => {
    const p = await svc.platform('Bank Shop');
    const dev = await createPortalUser(
      svc.ctx.database.db,
      { platformId: p.platform_id, email: `dev-${p.platform_id}@bank.example`, role: 'developer', password: 'a long enough password' },
      svc.ctx.passwordCost,
    );
    const client = issue(dir, 'gw-ca', 'bank-client', 'extendedKeyUsage=clientAuth', 20);
    const created = await svc.api(p.keys.live, 'POST', '/api/v1/webhook_endpoints', {
      url: 'https://127.0.0.1:9/bank',
      enabled_events: ['*'],
      authentication: { type: 'mtls', certificate: client.cert, private_key: client.key },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const { id, authentication } = created.body as { id: string; authentication: { not_after: string; fingerprint: string } };
    const mails = () => smtp.mails.filter((m) => m.to === dev.email).map((m) => parseMail(m.raw));

    await sweep(0);
    await sweep(60_000);
    expect(mails().map((m) => m.headers.subject)).toEqual([
      `[Bank Shop] Live webhook endpoint https://127.0.0.1:9/bank has a client certificate that expires at ${authentication.not_after}`,
    ]);
    const first = mails()[0]!.text;
    expect(first).toContain(`Client certificate: CN=bank-client, issued by CN=gw-ca, SHA-256 ${authentication.fingerprint}.`);
    expect(first).toContain(`Give the endpoint a new certificate before ${authentication.not_after}.`);
    expect(first).toContain(id);

    // 7 days ahead: the second warning, once.
    await sweep(13 * DAY + 60_000);
    await sweep(60_000);
    expect(mails()).toHaveLength(2);
    expect(mails()[1]!.headers.subject).toContain(`expires at ${authentication.not_after}`);

    // Expired: still the last stage, no third mail (it was warned at 7 days), until a new certificate.
    await sweep(8 * DAY);
    expect(mails()).toHaveLength(2);

    // A new certificate, good for 90 days: nothing now; its own warning 30 days before its end.
    clock.set(Date.now());
    const fresh = issue(dir, 'gw-ca', 'bank-client-2', 'extendedKeyUsage=clientAuth', 90);
    const rolled = await svc.api(p.keys.live, 'PATCH', `/api/v1/webhook_endpoints/${id}`, {
      authentication: { type: 'mtls', certificate: fresh.cert, private_key: fresh.key },
    });
    expect(rolled.status, JSON.stringify(rolled.body)).toBe(200);
    await sweep(60_000);
    expect(mails()).toHaveLength(2);
    await sweep(61 * DAY);
    expect(mails()).toHaveLength(3);
    expect(mails()[2]!.text).toContain('Client certificate: CN=bank-client-2');
  });

  it('a certificate first seen after it expired is mailed as expired', async () => {
    const p = await svc.platform('Late Shop');
    const client = issue(dir, 'gw-ca', 'late-client', 'extendedKeyUsage=clientAuth', 2);
    clock.set(Date.now());
    const created = await svc.api(p.keys.live, 'POST', '/api/v1/webhook_endpoints', {
      url: 'https://127.0.0.1:9/late',
      enabled_events: ['*'],
      authentication: { type: 'mtls', certificate: client.cert, private_key: client.key },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    // Its first sweep is days later (the workers were down): one mail, saying it expired.
    const from = smtp.mails.length;
    await sweep(3 * DAY);
    const sent = smtp.mails
      .slice(from)
      .filter((m) => m.to === p.portal.email)
      .map((m) => parseMail(m.raw));
    expect(sent.map((m) => m.headers.subject)).toEqual([
      '[Late Shop] Live webhook endpoint https://127.0.0.1:9/late has an expired client certificate',
    ]);
    expect(sent[0]!.text).toContain("your receiver's gateway refuses it, so deliveries fail");
  });
});

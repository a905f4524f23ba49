import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Frame, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../../../packages/server/test/helpers/browser.ts';
import { startService, type TestService } from '../../../packages/server/test/helpers/service.ts';
import { startReceiver, type TestReceiver } from '../../../packages/server/test/helpers/receiver.ts';
import { drainUntil, internalCall, portalRequest, tokenOf } from '../../../packages/server/test/helpers/portal.ts';
import { publish } from '../../../packages/server/test/helpers/publish.ts';
import type { CreatedPlatform } from '../../../packages/server/src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../../packages/server/src/delivery/worker.ts';

/**
 * The payment service's own portal (this example, on http://localhost:<port>) embeds payhooks'
 * portal (on http://127.0.0.1:<port>: another site) as its Webhooks tab, in real Chromium. Its
 * users sign in to the dashboard only; payhooks knows them by the dashboard's user ids and the
 * roles the dashboard maps theirs to.
 */

const TOKEN = 'internal-token-for-the-dashboard-example-0123456789';
let svc: TestService;
let platform: CreatedPlatform;
let worker: DeliveryWorker;
let receiver: TestReceiver;
let browser: Browser;
let dashboard: Server;
let dashboardUrl: string;
let stranger: Server;
let strangerUrl: string;
let receiverDown = true;

/** An HTTP server on 127.0.0.1:0 whose handler is set once it is listening. */
async function listen(handler: () => ((req: IncomingMessage, res: ServerResponse) => void) | undefined): Promise<[Server, number]> {
  const server = createServer((req, res) => {
    const h = handler();
    if (!h) {
      res.statusCode = 503;
      res.end('starting');
      return;
    }
    h(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return [server, (server.address() as AddressInfo).port];
}

let app: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
let strangerLink = '';

beforeAll(async () => {
  let port: number;
  [dashboard, port] = await listen(() => app);
  // localhost and 127.0.0.1 are two sites: the frame is a third-party frame, as in production.
  dashboardUrl = `http://localhost:${port}`;
  let strangerPort: number;
  [stranger, strangerPort] = await listen(() => (_req, res) => {
    res.setHeader('content-type', 'text/html');
    res.end(`<!doctype html><title>Not allowed</title><iframe id="payhooks" src="${strangerLink}"></iframe>`);
  });
  strangerUrl = `http://127.0.0.1:${strangerPort}`;
  svc = await startService({
    internalToken: TOKEN,
    portalFrameAncestors: [dashboardUrl],
    allowPrivateUrls: true,
    retryScheduleMs: [3_600_000],
  });
  platform = await svc.platform('Acme merchant');
  receiver = await startReceiver(() => (receiverDown ? { status: 503, body: 'down for maintenance' } : { status: 200, body: 'ok' }));
  worker = svc.ctx.createWorker();
  const { createDashboard } = await import('../src/app.js');
  app = createDashboard({ payhooksUrl: svc.url, internalToken: TOKEN, merchantId: platform.merchant_id, publicUrl: dashboardUrl }) as never;
  browser = await launchBrowser();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await receiver?.close();
  dashboard?.closeAllConnections();
  stranger?.closeAllConnections();
  await new Promise((r) => dashboard?.close(r));
  await new Promise((r) => stranger?.close(r));
  await svc?.close();
});

async function signInToDashboard(email: string, password: string): Promise<Page> {
  // Tall enough that the outer page never scrolls: the frame grows and shrinks with its content,
  // and a scroll between finding a link and clicking it would move the click off it.
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 3000 } })).newPage();
  await page.goto(`${dashboardUrl}/login`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('link', { name: 'Webhooks' }).click();
  return page;
}

/** The payhooks frame, once its page has opened the link and shows Webhooks > Endpoints. */
async function portalFrame(page: Page): Promise<Frame> {
  const frame = page.frameLocator('iframe#payhooks');
  await frame.getByRole('navigation', { name: 'Breadcrumb' }).getByText('Endpoints').waitFor({ timeout: 30_000 });
  return page.frames().find((f) => f.url().startsWith(`${svc.url}/portal/`))!;
}

const scope = () => ({
  platformId: platform.platform_id,
  environment: 'sandbox' as const,
  actor: { type: 'operator' as const, id: 'test' },
});

/**
 * The session token the frame's page sends, read off its own requests: inside a cross-site frame
 * Chromium may deny the page storage, so the page keeps it in memory, where no test can reach.
 */
function frameToken(page: Page): () => string {
  let token = '';
  page.on('request', (req) => {
    const auth = req.headers().authorization;
    if (req.url().startsWith(`${svc.url}/portal/api/`) && auth?.startsWith('Bearer ')) token = auth.slice(7);
  });
  return () => token;
}

/** A portal API call with the frame's own session, from outside the browser. */
async function withToken(token: string, method: string, path: string, options: { body?: unknown; csrf?: boolean } = {}) {
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, origin: svc.url };
  if (options.csrf !== false) {
    const session = await portalRequest(svc.url, 'GET', '/session', undefined, headers);
    headers['x-csrf-token'] = session.body.csrf_token;
  }
  return portalRequest(svc.url, method, path, options.body, headers);
}

let deliveryId = '';

describe('examples/merchant-dashboard: payhooks as the Webhooks tab of a payment service portal', () => {
  it('Ana (dashboard owner, payhooks admin) opens Webhooks > Endpoints in the frame, with no payhooks sign-in, sign-out or header; the frame fits its content', async () => {
    const page = await signInToDashboard('ana@dashboard.example', 'ana-dashboard-password');
    const frame = await portalFrame(page);
    expect(await frame.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
    expect(await frame.getByLabel('Password').count()).toBe(0);
    const crumbs = (await frame.getByRole('navigation', { name: 'Breadcrumb' }).innerText()).replace(/\s+/g, ' ');
    expect(crumbs).toMatch(/Webhooks\s*›?>?\s*Endpoints/);
    // The page told the dashboard its height, and the dashboard fitted the frame.
    // An empty endpoint list is shorter than the frame's first 720 px: the frame shrinks to it.
    await expect
      .poll(async () => Number.parseInt(await page.evaluate(() => document.getElementById('payhooks')!.style.height || '0'), 10), {
        timeout: 15_000,
      })
      .toBeGreaterThan(0);
    const fitted = await page.evaluate(() => document.getElementById('payhooks')!.getBoundingClientRect().height);
    expect(fitted).toBeLessThan(720);

    // spec 4.1 rule 2: an endpoint created here shows its whsec_ secret once.
    await frame.getByRole('link', { name: '+ Add endpoint' }).click();
    await frame.getByLabel('Endpoint URL').fill(`${receiver.url}/hooks`);
    await frame.getByRole('button', { name: 'Add endpoint' }).click();
    const secret = await frame.getByRole('textbox', { name: 'Signing secret' }).inputValue();
    expect(secret).toMatch(/^whsec_/);
    const endpointId = frame.url().split('/').pop()!;
    expect(endpointId).toMatch(/^we_/);

    // A delivery that failed while the receiver was down, replayed from the frame once it is back.
    const { event } = await publish(svc.ctx, platform.merchant_id);
    await drainUntil(svc.ctx, worker, scope(), endpointId, 'failed_retrying');
    deliveryId = (await svc.ctx.deliveries.list(scope(), { limit: 1, endpointId })).data[0]!.id;
    receiverDown = false;
    // Around the page as a user goes (a click in the page, not a reload of the frame).
    await frame.getByRole('link', { name: 'Endpoints', exact: true }).first().click();
    await frame.getByRole('link', { name: `${receiver.url}/hooks` }).click();
    await frame.getByRole('heading', { name: `${receiver.url}/hooks` }).waitFor();
    expect(await frame.content()).not.toContain(secret);
    await frame.locator('tr', { hasText: event.id }).getByRole('link', { name: 'payment.succeeded' }).click();
    await frame.getByRole('button', { name: 'Replay' }).click();
    await frame.getByText('Replayed: your endpoint answered 200.').waitFor();

    // The audit log names the dashboard's user by the dashboard's own id.
    await frame.getByRole('link', { name: 'Audit log' }).click();
    const row = frame.locator('tr', { hasText: 'webhook_delivery.replay' }).first();
    await row.waitFor();
    expect(await row.innerText()).toContain('ana@dashboard.example');
    expect(await row.innerText()).toContain('dash_usr_ana');
    // Her session is Sandbox's: the log says so and offers no Live filter (the server refuses it).
    expect(await frame.getByText('Every change in Sandbox and every Platform-wide one').count()).toBe(1);
    expect(await frame.getByLabel('Environment').count()).toBe(0);
    const api = await svc.api(platform.keys.sandbox, 'GET', `/api/v1/audit_events?actor_id=dash_usr_ana&action=webhook_delivery.replay`);
    expect(api.body.data).toHaveLength(1);
    expect(api.body.data[0]).toMatchObject({
      actor: { type: 'embedded_user', id: 'dash_usr_ana', email: 'ana@dashboard.example', name: 'Ana Lima' },
      resource: { type: 'webhook_delivery', id: deliveryId },
      outcome: 'succeeded',
      origin: { ip: '127.0.0.1' },
    });
    expect(api.body.data[0].origin.user_agent).toMatch(/Chrome/);

    // Reloading the frame alone ends its session (its token lived in the page); the page tells
    // the dashboard, which opens a fresh link in the frame: the user is back in, no password.
    const sessionsBefore = (await svc.api(platform.keys.sandbox, 'GET', '/api/v1/audit_events?actor_id=dash_usr_ana&action=session.create'))
      .body.data.length;
    await frame.goto(`${svc.url}/portal/webhooks/endpoints`);
    await portalFrame(page);
    await expect
      .poll(
        async () =>
          (await svc.api(platform.keys.sandbox, 'GET', '/api/v1/audit_events?actor_id=dash_usr_ana&action=session.create')).body.data
            .length,
      )
      .toBe(sessionsBefore + 1);
  }, 120_000);

  it('Victor (dashboard support, payhooks viewer) sees the delivery log but no Replay button, and the server refuses his replay', async () => {
    const page = await signInToDashboard('victor@dashboard.example', 'victor-dashboard-password');
    const token = frameToken(page);
    const frame = await portalFrame(page);
    await frame.getByRole('link', { name: `${receiver.url}/hooks` }).click();
    await frame.locator('tr', { hasText: 'Delivered' }).getByRole('link', { name: 'payment.succeeded' }).click();
    await frame.locator('li.attempt').first().waitFor();
    expect(await frame.getByRole('button', { name: 'Replay' }).count()).toBe(0);
    expect(await frame.getByRole('button', { name: 'Resend' }).count()).toBe(0);
    expect(await frame.getByRole('link', { name: '+ Add endpoint' }).count()).toBe(0);
    // His session, as his frame uses it, asking the server directly: refused.
    expect(token()).toMatch(/^[\w-]{43}$/);
    const refused = await withToken(token(), 'POST', `/deliveries/${deliveryId}/replay`);
    expect([refused.status, refused.body.error.code]).toEqual([403, 'insufficient_role']);
    const denied = await svc.api(platform.keys.sandbox, 'GET', `/api/v1/audit_events?actor_id=dash_usr_victor&outcome=denied`);
    expect(denied.body.data[0]).toMatchObject({ action: 'webhook_delivery.replay', error_code: 'insufficient_role' });
  }, 120_000);

  it('CSRF: inside the frame a request without the CSRF token is refused; from the dashboard page outside it, nothing reaches a session', async () => {
    const page = await signInToDashboard('ana@dashboard.example', 'ana-dashboard-password');
    const token = frameToken(page);
    await portalFrame(page);
    // The frame's own session, without the frame's CSRF token: refused.
    const inside = await withToken(token(), 'POST', '/endpoints', {
      body: { url: 'https://evil.example/in', enabled_events: ['*'] },
      csrf: false,
    });
    expect([inside.status, inside.body.error.code]).toEqual([403, 'csrf_token_invalid']);
    // The framing page can't read the frame's token, and its own requests carry no session: a
    // form posted across sites (into a hidden frame) reaches payhooks and is refused there. (Its
    // scripts can't even fetch payhooks: the dashboard's CSP allows connections to itself only.)
    const outside = await page.evaluate(async (base) => {
      const sink = Object.assign(document.createElement('iframe'), { name: 'sink' });
      document.body.append(sink);
      const form = Object.assign(document.createElement('form'), {
        method: 'POST',
        action: `${base}/portal/api/endpoints`,
        enctype: 'text/plain',
        target: 'sink',
      });
      form.append(
        Object.assign(document.createElement('input'), {
          name: '{"url":"https://evil.example/out","enabled_events":["*"],"x":"',
          value: '"}',
        }),
      );
      document.body.append(form);
      const loaded = new Promise((resolve) => sink.addEventListener('load', resolve, { once: true }));
      form.submit();
      await loaded;
      return 'posted';
    }, svc.url);
    expect(outside).toBe('posted');
    const all = await svc.api(platform.keys.sandbox, 'GET', '/api/v1/webhook_endpoints?limit=100');
    const urls = all.body.data.map((e: { url: string }) => e.url);
    for (const evil of ['https://evil.example/in', 'https://evil.example/out']) expect(urls).not.toContain(evil);
    // Both refusals reached payhooks and were answered there (the trail has no success from them).
    const created = await svc.api(
      platform.keys.sandbox,
      'GET',
      '/api/v1/audit_events?action=webhook_endpoint.create&outcome=succeeded&limit=100',
    );
    expect(JSON.stringify(created.body.data)).not.toContain('evil.example');
  }, 120_000);

  it('the same link opens as a page of its own: the portal, no payhooks sign-in, and a way back to the dashboard', async () => {
    const link = await internalCall(svc.url, TOKEN, 'POST', '/portal_sessions', {
      merchant_id: platform.merchant_id,
      environment: 'sandbox',
      role: 'developer',
      user: { id: 'dash_usr_ana', email: 'ana@dashboard.example', name: 'Ana Lima' },
      return_url: `${dashboardUrl}/webhooks`,
    });
    const page = await (await browser.newContext()).newPage();
    await page.goto(link.body.url);
    await page.getByRole('navigation', { name: 'Breadcrumb' }).getByText('Endpoints').waitFor();
    // The token left the address bar before anything else ran.
    expect(page.url()).toBe(`${svc.url}/portal/webhooks/endpoints`);
    expect(await page.getByRole('link', { name: 'Back to dashboard' }).getAttribute('href')).toBe(`${dashboardUrl}/webhooks`);
    expect(await page.getByLabel('Password').count()).toBe(0);
  }, 120_000);

  it('a page on an origin payhooks does not list cannot frame the portal: the frame stays empty and the link unused', async () => {
    const link = await internalCall(svc.url, TOKEN, 'POST', '/portal_sessions', {
      merchant_id: platform.merchant_id,
      environment: 'sandbox',
      role: 'admin',
      user: { id: 'someone' },
    });
    strangerLink = link.body.url;
    const page = await (await browser.newContext()).newPage();
    const blocked: string[] = [];
    page.on('console', (m) => {
      if (/frame-ancestors|Refused to frame/i.test(m.text())) blocked.push(m.text());
    });
    await page.goto(`${strangerUrl}/`);
    await expect.poll(() => blocked.length, { timeout: 15_000 }).toBeGreaterThan(0);
    const framed = page.frames().find((f) => f !== page.mainFrame());
    expect(framed ? await framed.evaluate(() => document.body?.innerText ?? '').catch(() => '') : '').not.toContain('Endpoints');
    // No script of ours ran in that frame: the link was never opened, and still opens once.
    const opened = await portalRequest(svc.url, 'POST', '/session/link', { token: tokenOf(link.body.url) }, { origin: svc.url });
    expect(opened.status).toBe(200);
  });
});

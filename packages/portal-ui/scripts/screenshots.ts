/**
 * Screenshots of the portal's main screens for docs/portal.md (docs/screenshots/*.png), taken with
 * playwright-core and Debian's Chromium against a real payhooks (in-memory PGlite) with some
 * data: endpoints, real receivers on port 0 (one healthy, one failing), delivered and exhausted
 * deliveries; the team, the audit log and two-factor set-up; the portal opened from the payment
 * service's link inside a dashboard of another origin (an iframe); and the hosted checkout page
 * (desktop, phone, after a failed payment).
 * Run: `npm run screenshots -w packages/portal-ui` (after `npm run build`).
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../server/src/config.ts';
import { systemClock } from '../../server/src/clock.ts';
import { openDatabase } from '../../server/src/db/client.ts';
import { migrate } from '../../server/src/db/migrate.ts';
import { createContext } from '../../server/src/context.ts';
import { buildApp } from '../../server/src/api/app.ts';
import { createLogger } from '../../server/src/logging.ts';
import { createPlatform } from '../../server/src/tenancy/platforms.ts';
import { publishEvent } from '../../server/src/events/publish.ts';
import { AttemptStats } from '../../server/src/delivery/attempt-stats.ts';
import { launchBrowser } from '../../server/test/helpers/browser.ts';
import { internalCall, inviteAndAccept, portalSignIn } from '../../server/test/helpers/portal.ts';

const OUT = fileURLToPath(new URL('../../../docs/screenshots/', import.meta.url));

async function receiver(answer: () => { status: number; body: string }) {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const a = answer();
      res.writeHead(a.status, { 'content-type': 'application/json' }).end(a.body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`, close: () => server.close() };
}

// The payment service's dashboard, on another origin: it frames a fresh portal link per visit.
const INTERNAL_TOKEN = randomBytes(24).toString('base64url');
let portalUrl = '';
let merchantId = '';
const dashboard = createServer((_req, res) => {
  void internalCall(portalUrl, INTERNAL_TOKEN, 'POST', '/portal_sessions', {
    merchant_id: merchantId,
    environment: 'sandbox',
    role: 'admin',
    user: { id: 'dash_user_7', email: 'lee@acme.example', name: 'Lee Ortega' },
  }).then((link) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(dashboardPage(link.body.url)));
});
await new Promise<void>((r) => dashboard.listen(0, '127.0.0.1', r));
const dashboardOrigin = `http://localhost:${(dashboard.address() as AddressInfo).port}`;

const database = await openDatabase({});
await migrate(database);
const config = loadConfig(
  {},
  {
    logLevel: 'silent',
    dev: true,
    port: 0,
    retryScheduleMs: [200, 200],
    dataDir: '/nonexistent',
    internalToken: INTERNAL_TOKEN,
    portalFrameAncestors: [dashboardOrigin],
  },
);
const ctx = createContext({ config, database, clock: systemClock, logger: createLogger(config), encryptionKey: randomBytes(32) });
const app = await buildApp(ctx);
const url = await app.listen({ port: 0, host: '127.0.0.1' });
portalUrl = url;
const worker = ctx.createWorker();
await worker.start();

const platform = await createPlatform(database.db, 'Acme Shop', { portalEmail: 'ops@acme.example' });
merchantId = platform.merchant_id;
const scope = {
  platformId: platform.platform_id,
  environment: 'sandbox' as const,
  actor: { type: 'operator' as const, id: 'screenshots' },
};
const healthy = await receiver(() => ({ status: 200, body: '{"received":true}' }));
const failing = await receiver(() => ({ status: 500, body: '{"error":"database unavailable"}' }));
const shop = await ctx.endpoints.create(scope, {
  url: healthy.url,
  enabled_events: ['payment.succeeded', 'payment.failed', 'payment.expired', 'checkout_session.completed'],
  description: 'Order fulfilment',
});
const ledger = await ctx.endpoints.create(scope, { url: failing.url, enabled_events: ['*'], description: 'Ledger sync (down)' });
let n = 0;
for (const type of [
  'payment.succeeded',
  'payment.failed',
  'payment.succeeded',
  'checkout_session.completed',
  'payment.expired',
  'payment.succeeded',
]) {
  n++;
  const object = type.startsWith('payment.')
    ? {
        id: `pay_demo${n}`,
        object: 'payment',
        status: type.split('.')[1],
        amount: `${10 * n}.00`,
        asset_code: 'USDC.ETH',
        metadata: { order: `ord_${1000 + n}`, account: 'acct_42' },
      }
    : { id: `cs_demo${n}`, object: 'checkout_session', status: 'complete' };
  await database.db.transaction((tx) =>
    publishEvent(tx, { type, merchantId: platform.merchant_id, environment: 'sandbox', object }, new Date()),
  );
}
// Let the schedule run out for the failing endpoint (3 attempts with the short schedule).
for (let i = 0; i < 100; i++) {
  const page = await ctx.deliveries.list(scope, { limit: 100, endpointId: ledger.id, state: 'exhausted' });
  if (page.data.length === 6) break;
  await new Promise((r) => setTimeout(r, 200));
}

// A week of history for the charts (the demo database is new): counted the way workers count
// recorded attempts. The shop endpoint answers in 40-300 ms; the ledger went down 20 hours ago
// (500s, then timeouts once its database stopped answering at all).
const history = new AttemptStats();
const HOUR_MS = 3_600_000;
const thisHour = Math.floor(Date.now() / HOUR_MS) * HOUR_MS;
let seed = 7;
const random = () => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed / 2 ** 31;
};
for (let h = 7 * 24 - 1; h >= 1; h--) {
  const start = thisHour - h * HOUR_MS;
  const busy = 0.5 + 0.5 * Math.sin(((new Date(start).getUTCHours() - 8) / 24) * 2 * Math.PI);
  for (let i = 0; i < 10 + Math.round(40 * busy); i++) {
    const startedAt = new Date(start + Math.floor(random() * HOUR_MS));
    const ms = Math.round(40 + random() ** 3 * 260);
    history.add(shop.id, { succeeded: true, statusCode: 200, errorKind: null, startedAt, durationMs: ms });
    if (h > 20) history.add(ledger.id, { succeeded: true, statusCode: 200, errorKind: null, startedAt, durationMs: ms + 30 });
    else if (h > 12) history.add(ledger.id, { succeeded: false, statusCode: 500, errorKind: 'http_status', startedAt, durationMs: 25 });
    else history.add(ledger.id, { succeeded: false, statusCode: null, errorKind: 'timeout', startedAt, durationMs: 30_000 });
  }
}
await history.flush(database);

const browser = await launchBrowser();
// One browser context for the Platform's admin: signed in once (sign-in is rate-limited per
// email), its pages share the session cookie. Other users and the dashboard get their own.
const adminContext = await browser.newContext();
const shoot = async (width: number, name: string, go: (page: import('playwright-core').Page) => Promise<void>, own = false) => {
  const page = own ? await browser.newPage({ viewport: { width, height: 860 } }) : await adminContext.newPage();
  await page.setViewportSize({ width, height: 860 });
  await go(page);
  await page.screenshot({ path: `${OUT}${name}.png`, fullPage: false });
  await page.close();
};
const signIn = async (page: import('playwright-core').Page) => {
  await page.goto(`${url}/portal/`);
  const endpoints = page.getByRole('link', { name: 'Endpoints', exact: true });
  const form = page.getByLabel('Email');
  await endpoints.or(form).first().waitFor();
  if ((await form.count()) === 0) return;
  await form.fill(platform.portal.email);
  await page.getByLabel('Password').fill(platform.portal.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await endpoints.waitFor();
};
await shoot(
  1280,
  'sign-in',
  async (page) => {
    await page.goto(`${url}/portal/`);
    await page.getByLabel('Email').waitFor();
  },
  true,
);
await shoot(1280, 'endpoints', async (page) => {
  await signIn(page);
  await page.getByRole('link', { name: 'Endpoints', exact: true }).click();
  await page.locator('table.endpoints svg').first().waitFor();
});
await shoot(1280, 'create-endpoint', async (page) => {
  await signIn(page);
  await page.goto(`${url}/portal/webhooks/endpoints/new`);
  await page.getByLabel('Endpoint URL').fill('https://shop.example.com/webhooks/payhooks');
});
await shoot(1280, 'endpoint-secret', async (page) => {
  await signIn(page);
  await page.goto(`${url}/portal/webhooks/endpoints/new`);
  await page.getByLabel('Endpoint URL').fill(healthy.url.replace('/webhooks', '/hooks/new'));
  await page.getByRole('button', { name: 'Add endpoint' }).click();
  await page.getByText('you won’t see this again', { exact: false }).waitFor();
});
await shoot(1280, 'endpoint-deliveries', async (page) => {
  await signIn(page);
  await page.goto(`${url}/portal/webhooks/endpoints/${ledger.id}`);
  await page.locator('[data-delivery-id]').first().waitFor();
});
await shoot(1280, 'delivery', async (page) => {
  await signIn(page);
  const [d] = (await ctx.deliveries.list(scope, { limit: 1, endpointId: ledger.id })).data;
  await page.goto(`${url}/portal/webhooks/deliveries/${d!.id}`);
  await page.getByRole('button', { name: 'Replay' }).waitFor();
  await page.getByText('Request headers').first().click();
});
await shoot(1280, 'bulk-replay-confirm', async (page) => {
  await signIn(page);
  await page.goto(`${url}/portal/webhooks/endpoints/${ledger.id}`);
  await page.getByRole('button', { name: 'Replay all failed since…' }).click();
  await page.getByRole('alertdialog').waitFor();
  await page.getByRole('alertdialog').scrollIntoViewIfNeeded();
});
// The ledger's failures as the health sweep leaves them after 2.6 days: failing, warned at 50 %.
const failingSince = new Date(Date.now() - 2.6 * 86_400_000);
await database.query(
  `UPDATE webhook_endpoints SET failing_since = $2, health_state = 'failing', health_changed_at = $2, health_warned = 50,
     health_disables_at = $3 WHERE id = $1`,
  [ledger.id, failingSince, new Date(failingSince.getTime() + 5 * 86_400_000)],
);
await shoot(1280, 'endpoint-failing', async (page) => {
  await signIn(page);
  await page.goto(`${url}/portal/webhooks/endpoints/${ledger.id}`);
  await page.getByTestId('health-failing').waitFor();
});
await shoot(1280, 'endpoint-health-charts', async (page) => {
  await signIn(page);
  await page.goto(`${url}/portal/webhooks/endpoints/${ledger.id}`);
  await page.getByTestId('attempts-chart').locator('.recharts-bar-rectangle path').first().waitFor({ state: 'attached' });
  await page.getByTestId('stats-panel').scrollIntoViewIfNeeded();
  await page.evaluate(() =>
    window.scrollBy(0, (document.querySelector('[data-testid="stats-panel"]') as HTMLElement).getBoundingClientRect().top - 16),
  );
});
await shoot(1280, 'webhooks-overview', async (page) => {
  await signIn(page);
  await page.goto(`${url}/portal/webhooks`);
  await page.getByTestId('stats-panel').getByLabel('Period').selectOption('7d');
  await page.getByTestId('endpoint-health-table').waitFor();
  await page.getByTestId('attempts-chart').locator('.recharts-bar-rectangle path').first().waitFor({ state: 'attached' });
});
await shoot(1280, 'event-types', async (page) => {
  await signIn(page);
  await page.goto(`${url}/portal/webhooks/event-types`);
  await page.locator('article[data-type="payment.succeeded"] summary', { hasText: 'Example' }).click();
  await page.evaluate(() => window.scrollTo(0, 0));
});
await shoot(1280, 'settings', async (page) => {
  await signIn(page);
  await page.goto(`${url}/portal/settings`);
  await page.getByLabel('Shop name shown to customers').fill('Acme Coffee Roasters');
});
// The team: two more users and an open invitation, then a new one whose link shows once.
const admin = await portalSignIn(url, platform.portal.email, platform.portal.password);
const samPassword = 'correct horse battery staple';
const sam = await inviteAndAccept(url, admin, 'sam@acme.example', 'developer', samPassword);
await inviteAndAccept(url, admin, 'kim@acme.example', 'viewer');
await admin.call('POST', '/invitations', { email: 'alex@acme.example', role: 'viewer' });
await admin.call('PATCH', `/users/${sam.session.user.id}`, { role: 'admin' });
await admin.call('PATCH', `/users/${sam.session.user.id}`, { role: 'developer' });
await shoot(1280, 'team', async (page) => {
  await signIn(page);
  await page.goto(`${url}/portal/team`);
  await page.getByLabel('Email', { exact: true }).fill('jo@acme.example');
  await page.getByLabel('Role', { exact: true }).selectOption('developer');
  await page.getByRole('button', { name: 'Invite', exact: true }).click();
  await page.getByTestId('invitation-link').scrollIntoViewIfNeeded();
});
await shoot(1280, 'audit-log', async (page) => {
  await signIn(page);
  await page.goto(`${url}/portal/audit`);
  const row = page.locator('tr[data-action="portal_user.role_change"]').first();
  await row.getByRole('button', { name: 'Details' }).click();
  await page.getByTestId('audit-details').waitFor();
});
await shoot(
  1280,
  'account-two-factor',
  async (page) => {
    await page.goto(`${url}/portal/`);
    await page.getByLabel('Email').fill('sam@acme.example');
    await page.getByLabel('Password').fill(samPassword);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('link', { name: 'Account' }).click();
    await page.getByRole('button', { name: 'Set up' }).click();
    await page.getByRole('img', { name: 'QR code of your two-factor secret' }).waitFor();
    await page.getByLabel('Enter the 6-digit code the app shows').scrollIntoViewIfNeeded();
  },
  true,
);
await shoot(390, 'mobile-delivery-log', async (page) => {
  await signIn(page);
  await page.goto(`${url}/portal/webhooks`);
  await page.locator('[data-delivery-id]').first().waitFor();
  await page.locator('section.log').scrollIntoViewIfNeeded();
});
// The hosted checkout page a customer sees: desktop, phone, and after a failed payment.
const checkoutSession = (description: string) =>
  database.db.transaction((tx) =>
    ctx.checkout.create(
      scope,
      {
        amount: '1249.00',
        asset_code: 'USDC.ETH',
        description,
        metadata: { order: 'ord_1042' },
        success_url: 'https://shop.example.com/orders/1042/thanks',
        cancel_url: 'https://shop.example.com/cart',
      },
      tx,
    ),
  );
const open = await checkoutSession('Order #1042: two ceramic mugs and a teapot');
await shoot(1280, 'checkout', (page) => page.goto(open.url).then(() => undefined), true);
await shoot(390, 'mobile-checkout', (page) => page.goto(open.url).then(() => undefined), true);
const failed = await checkoutSession('Order #1043: one teapot');
await database.db.transaction((tx) => ctx.checkout.fail(failed.id, tx));
await shoot(1280, 'checkout-failed', (page) => page.goto(failed.url).then(() => undefined), true);
// Inside the payment service's dashboard, in the Platform's colours.
await admin.call('PUT', '/settings', { theme: { accent_color: '#0f766e', name: 'Acme Shop', mode: 'light' } });
await shoot(
  1280,
  'embedded-endpoints',
  async (page) => {
    await page.goto(`${dashboardOrigin}/`);
    const frame = page.frameLocator('iframe');
    await frame.locator('table.endpoints svg').first().waitFor();
    await page.waitForFunction(() => (document.querySelector('iframe')?.getBoundingClientRect().height ?? 0) > 300);
  },
  true,
);
await browser.close();
dashboard.close();
await worker.stop();
await app.close();
await ctx.close();
healthy.close();
failing.close();
await database.close();
process.stdout.write(`screenshots written to ${OUT}\n`);

/** A stand-in for the payment service's merchant dashboard: its own navigation, and Webhooks in a frame sized by the portal's messages. */
function dashboardPage(link: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Dashboard · Webhooks</title>
<style>
  body { margin: 0; font: 15px/1.5 system-ui, sans-serif; color: #1f2937; background: #f3f4f6; display: flex; min-height: 100vh; }
  nav { width: 210px; background: #0f172a; color: #cbd5e1; padding: 1.25rem 1rem; }
  nav strong { display: block; color: #fff; font-size: 1.1rem; margin-bottom: 1.5rem; }
  nav a { display: block; color: inherit; text-decoration: none; padding: 0.4rem 0.6rem; border-radius: 6px; }
  nav a.on { background: #1e293b; color: #fff; }
  main { flex: 1; padding: 1.25rem 1.75rem; }
  h1 { font-size: 1.35rem; margin: 0 0 1rem; }
  iframe { width: 100%; border: 1px solid #e5e7eb; border-radius: 10px; background: #fff; display: block; height: 600px; }
</style></head>
<body><nav><strong>PayCo Dashboard</strong><a href="#">Home</a><a href="#">Payments</a><a href="#">Customers</a><a class="on" href="#">Webhooks</a><a href="#">Settings</a></nav>
<main><h1>Webhooks</h1><iframe title="Webhooks" src="${link}"></iframe></main>
<script>
  // The portal tells its height (payhooks:resize) to this origin only; the frame grows to fit.
  addEventListener('message', (e) => {
    if (e.origin !== ${JSON.stringify(new URL(link).origin)}) return;
    if (e.data && e.data.type === 'payhooks:resize') document.querySelector('iframe').style.height = e.data.height + 'px';
  });
</script></body></html>`;
}

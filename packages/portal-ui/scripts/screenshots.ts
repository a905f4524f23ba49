/**
 * Screenshots of the portal's main screens for the README (docs/screenshots/*.png), taken with
 * playwright-core and Debian's Chromium against a real payhooks (in-memory PGlite) with some
 * data: endpoints, real receivers on port 0 (one healthy, one failing), delivered and exhausted
 * deliveries; and the hosted checkout page (desktop, phone, after a failed payment).
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
import { createLogger } from '../../server/src/runtime.ts';
import { createPlatform } from '../../server/src/tenancy/platforms.ts';
import { publishEvent } from '../../server/src/events/publish.ts';
import { launchBrowser } from '../../server/test/helpers/browser.ts';

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

const database = await openDatabase({});
await migrate(database);
const config = loadConfig({}, { logLevel: 'silent', dev: true, port: 0, retryScheduleMs: [200, 200], dataDir: '/nonexistent' });
const ctx = createContext({ config, database, clock: systemClock, logger: createLogger(config), encryptionKey: randomBytes(32) });
const app = await buildApp(ctx);
const url = await app.listen({ port: 0, host: '127.0.0.1' });
const worker = ctx.createWorker();
await worker.start();

const platform = await createPlatform(database.db, 'Acme Shop', { portalEmail: 'ops@acme.example' });
const scope = { platformId: platform.platform_id, environment: 'sandbox' as const, apiKeyId: 'screenshots' };
const healthy = await receiver(() => ({ status: 200, body: '{"received":true}' }));
const failing = await receiver(() => ({ status: 500, body: '{"error":"database unavailable"}' }));
await ctx.endpoints.create(scope, {
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

const browser = await launchBrowser();
const shoot = async (width: number, name: string, go: (page: import('playwright-core').Page) => Promise<void>) => {
  const page = await browser.newPage({ viewport: { width, height: 860 } });
  await go(page);
  await page.screenshot({ path: `${OUT}${name}.png`, fullPage: false });
  await page.close();
};
const signIn = async (page: import('playwright-core').Page) => {
  await page.goto(`${url}/portal/`);
  await page.getByLabel('Email').fill(platform.portal.email);
  await page.getByLabel('Password').fill(platform.portal.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('link', { name: 'Endpoints', exact: true }).waitFor();
};
await shoot(1280, 'sign-in', async (page) => {
  await page.goto(`${url}/portal/`);
  await page.getByLabel('Email').waitFor();
});
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
await shoot(1280, 'settings', async (page) => {
  await signIn(page);
  await page.goto(`${url}/portal/settings`);
  await page.getByLabel('Shop name shown to customers').fill('Acme Coffee Roasters');
});
await shoot(390, 'mobile-delivery-log', async (page) => {
  await signIn(page);
  await page.goto(`${url}/portal/webhooks`);
  await page.locator('[data-delivery-id]').first().waitFor();
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
await shoot(1280, 'checkout', (page) => page.goto(open.url).then(() => undefined));
await shoot(390, 'mobile-checkout', (page) => page.goto(open.url).then(() => undefined));
const failed = await checkoutSession('Order #1043: one teapot');
await database.db.transaction((tx) => ctx.checkout.fail(failed.id, tx));
await shoot(1280, 'checkout-failed', (page) => page.goto(failed.url).then(() => undefined));
await browser.close();
await worker.stop();
await app.close();
await ctx.close();
healthy.close();
failing.close();
await database.close();
process.stdout.write(`screenshots written to ${OUT}\n`);

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { checkSignature } from '@payhooks/contract';
import { startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { launchBrowser } from '../helpers/browser.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';

let svc: TestService;
let receiver: TestReceiver;
let worker: DeliveryWorker;
let browser: Browser;
let shop: Server;
let shopUrl: string;
const shopVisits: string[] = [];

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true });
  receiver = await startReceiver();
  worker = svc.ctx.createWorker();
  await worker.start();
  // The merchant's shop: a real HTTP server the customer is sent back to.
  shop = createServer((req, res) => {
    shopVisits.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>Thanks</title><h1 id="thanks">Thanks for your order</h1>');
  });
  await new Promise<void>((r) => shop.listen(0, '127.0.0.1', r));
  shopUrl = `http://127.0.0.1:${(shop.address() as AddressInfo).port}`;
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await worker?.stop();
  await new Promise<void>((r) => (shop ? shop.close(() => r()) : r()));
  await receiver?.close();
  await svc?.close();
});

describe('hosted checkout in Chromium', () => {
  it('spec 1: a customer pays on the hosted page and lands on success_url; the webhooks carry the full session and payment with metadata', async () => {
    const p = await svc.platform('Browser Shop');
    const endpoint = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url: receiver.url,
      enabled_events: ['checkout_session.completed', 'payment.succeeded'],
    });
    const metadata = { order_id: 'ord_42', customer: 'Zoë <z@example.com>' };
    const created = await svc.api(p.keys.sandbox, 'POST', '/api/v1/checkout_sessions', {
      amount: '42.50',
      asset_code: 'USDC-E.ARB',
      metadata,
      description: 'Order 42: a blue teapot',
      success_url: `${shopUrl}/orders/ord_42/thanks?lang=en`,
      cancel_url: `${shopUrl}/cart`,
    });
    expect(created.status).toBe(201);
    const session = created.body;

    const page = await browser.newPage();
    const cspViolations: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) cspViolations.push(m.text());
    });
    await page.goto(session.url);
    expect(await page.textContent('#shop')).toBe('Browser Shop');
    expect(await page.textContent('#description')).toBe('Order 42: a blue teapot');
    expect(await page.textContent('#amount')).toBe('42.50');
    expect(await page.textContent('#asset')).toBe('USDC-E');
    expect(await page.textContent('#network')).toBe('on ARB');
    expect(await page.textContent('#expiry')).toMatch(/^Expires in (59|60) minutes \(at \d\d:\d\d UTC( tomorrow)?\)$/);
    // One font stack: the buttons use the page's font, not the browser's form-control font.
    const fonts = await page.$$eval('body, button', (els) => els.map((el) => (globalThis as any).getComputedStyle(el).fontFamily));
    expect(new Set(fonts).size).toBe(1);
    // The stylesheet loaded under the CSP (no inline styles, no script).
    expect(await page.$eval('main', (el) => (globalThis as any).getComputedStyle(el).borderRadius)).toBe('12px');
    await Promise.all([page.waitForURL(`${shopUrl}/**`), page.click('#pay')]);

    const landed = new URL(page.url());
    expect(landed.pathname).toBe('/orders/ord_42/thanks');
    expect(landed.searchParams.get('lang')).toBe('en');
    expect(landed.searchParams.get('checkout_session_id')).toBe(session.id);
    expect(await page.textContent('#thanks')).toBe('Thanks for your order');
    expect(cspViolations).toEqual([]);
    await page.close();

    // The webhooks race the redirect (spec 1); both arrive, signed, with the full objects.
    await receiver.waitFor(2);
    const events = receiver.requests.map((r) => {
      const check = checkSignature({
        header: String(r.headers['service-signature']),
        rawBody: r.raw,
        secrets: [endpoint.body.secret],
        nowSeconds: Math.floor(Date.now() / 1000),
      });
      expect(check.ok).toBe(true);
      return JSON.parse(r.raw.toString('utf8'));
    });
    const byType = Object.fromEntries(events.map((e) => [e.type, e]));
    expect(Object.keys(byType).sort()).toEqual(['checkout_session.completed', 'payment.succeeded']);
    const completed = (await svc.api(p.keys.sandbox, 'GET', `/api/v1/checkout_sessions/${session.id}`)).body;
    const payment = (await svc.api(p.keys.sandbox, 'GET', `/api/v1/payments/${session.payment}`)).body;
    expect(byType['checkout_session.completed'].data.object).toEqual(completed);
    expect(byType['payment.succeeded'].data.object).toEqual(payment);
    expect(completed).toMatchObject({ status: 'complete', metadata, payment: payment.id });
    expect(payment).toMatchObject({
      status: 'succeeded',
      amount: '42.50',
      asset_code: 'USDC-E.ARB',
      metadata,
      checkout_session: session.id,
    });
    expect(shopVisits.some((v) => v.includes(`checkout_session_id=${session.id}`))).toBe(true);
  });

  it('issue 22: after a failed payment the customer sees why and follows a link back to the shop; on a phone nothing overflows', async () => {
    const p = await svc.platform('Phone Shop');
    const created = await svc.api(p.keys.sandbox, 'POST', '/api/v1/checkout_sessions', {
      amount: '1249.00',
      asset_code: 'USDC.ETH',
      description: 'A very long description of what is bought, long enough to wrap on a narrow screen, twice over, with no break',
      success_url: `${shopUrl}/thanks`,
      cancel_url: `${shopUrl}/cart`,
    });
    const page = await browser.newPage({ viewport: { width: 360, height: 740 } });
    await page.goto(created.body.url);
    // The card keeps margins on a phone and nothing is wider than the screen.
    const box = (await page.locator('main').boundingBox())!;
    expect(box.x).toBeGreaterThan(0);
    expect(box.x + box.width).toBeLessThan(360);
    expect(await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth)).toBeLessThanOrEqual(360);
    await Promise.all([page.waitForURL(/\/checkout\/cs_/), page.click('#fail')]);
    expect(await page.textContent('#status')).toContain('The payment failed');
    await Promise.all([page.waitForURL(`${shopUrl}/cart`), page.click('#back')]);
    expect(await page.textContent('#thanks')).toBe('Thanks for your order');
    await page.close();
  });
});

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
    expect(await page.textContent('#merchant')).toBe('Browser Shop');
    expect(await page.textContent('#amount')).toBe('42.50');
    expect(await page.textContent('#asset')).toBe('USDC-E.ARB');
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
});

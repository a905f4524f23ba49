import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { launchBrowser } from '../../../packages/server/test/helpers/browser.ts';
import { startHarness, type Harness } from './helpers/harness.ts';
import { until } from '../../../packages/server/test/helpers/wait.ts';

// The shop run with PAYHOOKS_DOUBLE_DELIVERY (its checkout sessions are created with the sandbox's
// double-delivery case): every event of the checkout reaches the shop twice, under one evt_ id,
// while the customer pays in real Chromium and comes back.

let h: Harness;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  [h, browser] = await Promise.all([startHarness({ doubleDelivery: true }), launchBrowser()]);
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await h?.close();
});
beforeEach(async () => {
  page = await browser.newPage();
});
afterEach(async () => {
  await page?.close();
  await h.stopWorker();
  h.holdReturns(null);
});

/** Buys the tea, pays on the hosted page; `beforeReturn` runs while the browser's return is held in front of the shop. */
async function buyAndPay(beforeReturn: (order: { id: string; payment_id: string }) => Promise<void>) {
  await page.goto(`${h.shopUrl}/`);
  await page.getByRole('button', { name: 'Buy A pot of green tea' }).click();
  await page.waitForURL(/\/checkout\/cs_[^/?#]+$/);
  const sessionId = new URL(page.url()).pathname.split('/').pop()!;
  const order = await h.order({ checkoutSessionId: sessionId });
  const session = await h.api('GET', `/api/v1/checkout_sessions/${sessionId}`);
  expect(session.body.metadata).toEqual({ order_id: order.id });
  h.holdReturns(() => beforeReturn(order));
  await page.getByRole('button', { name: /^Pay / }).click();
  await page.waitForURL((url) => url.href.startsWith(`${h.shopUrl}/success?`));
  expect(h.returnGateErrors).toEqual([]);
  expect(await page.getAttribute('[data-status]', 'data-status')).toBe('paid');
  return order;
}

/** Both copies of `eventId` delivered (200 each) and the shop's work for it done. */
async function bothCopiesProcessed(eventId: string) {
  await until(
    async () => {
      const deliveries = await h.deliveriesOf(eventId);
      return deliveries.length === 2 && deliveries.every((d) => d.state === 'delivered');
    },
    { message: `both deliveries of ${eventId}` },
  );
  await h.shop.webhooks.drain();
  expect(h.webhookHits.filter((x) => x.eventId === eventId)).toEqual([
    { eventId, status: 200 },
    { eventId, status: 200 },
  ]);
  const { rows } = await h.pool.query('SELECT state FROM payhooks_events WHERE event_id = $1', [eventId]);
  expect(rows).toEqual([{ state: 'done' }]); // recorded once: the second copy was a duplicate
}

async function expectOneLedgerRow(order: { id: string; payment_id: string }, source: string) {
  expect((await h.order({ id: order.id })).status).toBe('paid');
  expect(await h.ledgerOf(order.id)).toEqual([
    { order_id: order.id, payment_id: order.payment_id, amount: '4.50', asset_code: 'USDC.ETH', source },
  ]);
}

describe('examples/merchant-shop with the sandbox double-delivery case (spec 6.2.5)', () => {
  it('spec 6.2.5: both copies of payment.succeeded arrive before the return: one credit, from the webhook', async () => {
    await h.startWorker();
    const order = await buyAndPay(async (o) => {
      await bothCopiesProcessed(await h.eventFor('payment.succeeded', o.payment_id));
    });
    await expectOneLedgerRow(order, 'webhook');
  });

  it('spec 6.2.5: the return first, then both copies at once: one credit, from the verified GET', async () => {
    const order = await buyAndPay(async () => {});
    await expectOneLedgerRow(order, 'success_page');
    await h.startWorker();
    await bothCopiesProcessed(await h.eventFor('payment.succeeded', order.payment_id));
    await expectOneLedgerRow(order, 'success_page');
  });
});

import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { launchBrowser } from '../../../packages/server/test/helpers/browser.ts';
import { startHarness, type Harness } from './helpers/harness.ts';
import { until } from '../../../packages/server/test/helpers/wait.ts';

// A customer in real Chromium buys on the shop, pays on payhooks' hosted checkout page and comes
// back to the shop's success page, while payhooks' worker delivers the webhook over real HTTP.
// Each test forces one ordering of the two and asserts the shop's ledger, not just the page.

let h: Harness;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  [h, browser] = await Promise.all([startHarness(), launchBrowser()]);
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
  h.setWebhooksDown(false);
  h.holdReturns(null);
});

const TEA = { name: 'A pot of green tea', amount: '4.50', asset_code: 'USDC.ETH' };

/** From the product page to payhooks' hosted page; returns the checkout session's id. */
async function buy(): Promise<string> {
  await page.goto(`${h.shopUrl}/`);
  await page.getByRole('button', { name: `Buy ${TEA.name}` }).click();
  await page.waitForURL(/\/checkout\/cs_[^/?#]+$/);
  const sessionId = new URL(page.url()).pathname.split('/').pop()!;
  // The hosted page shows what the shop asked for.
  await expect.poll(() => page.textContent('body')).toContain(TEA.amount);
  return sessionId;
}

/** Clicks Pay on the hosted page; resolves once the browser shows the shop's success page. */
async function payAndReturn(sessionId: string): Promise<void> {
  await page.getByRole('button', { name: /^Pay / }).click();
  await page.waitForURL((url) => url.href.startsWith(`${h.shopUrl}/success?`));
  expect(new URL(page.url()).searchParams.get('checkout_session_id')).toBe(sessionId);
}

const statusShown = () => page.getAttribute('[data-status]', 'data-status');

/** The order is paid, with exactly one ledger row for its payment, written by `source`. */
async function expectPaidOnce(orderId: string, source: 'webhook' | 'success_page') {
  const order = await h.order({ id: orderId });
  expect(order.status).toBe('paid');
  expect(await h.ledgerOf(orderId)).toEqual([
    { order_id: orderId, payment_id: order.payment_id, amount: TEA.amount, asset_code: TEA.asset_code, source },
  ]);
  const { rows } = await h.pool.query('SELECT count(*)::int AS n FROM ledger_entries WHERE payment_id = $1', [order.payment_id]);
  expect(rows[0].n).toBe(1);
}

/** Waits until the shop has acknowledged `eventId` and finished its work. */
async function shopProcessed(eventId: string) {
  await until(async () => (await h.deliveriesOf(eventId)).every((d) => d.state === 'delivered'), { message: `delivery of ${eventId}` });
  await h.shop.webhooks.drain();
  const { rows } = await h.pool.query('SELECT state FROM payhooks_events WHERE event_id = $1', [eventId]);
  expect(rows).toEqual([{ state: 'done' }]);
}

describe('examples/merchant-shop: an order is paid exactly once, whichever arrives first (spec 1, 6.2)', () => {
  it('spec 1: webhook first, then the redirect: the webhook credits, the success page shows it and credits nothing', async () => {
    await h.startWorker();
    const sessionId = await buy();
    const order = await h.order({ checkoutSessionId: sessionId });
    expect(order.status).toBe('pending');
    // Hold the browser's return in front of the shop until the webhook has credited the order.
    h.holdReturns(async () => {
      await until(async () => (await h.ledgerOf(order.id)).length === 1, { message: 'the webhook to credit' });
    });
    await payAndReturn(sessionId);
    expect(h.returnGateErrors).toEqual([]);
    expect(await statusShown()).toBe('paid');
    await shopProcessed(await h.eventFor('payment.succeeded', order.payment_id));
    await expectPaidOnce(order.id, 'webhook');
  });

  it('spec 1: redirect first (no worker running yet): the verified GET credits, the late webhook credits nothing', async () => {
    const sessionId = await buy();
    const order = await h.order({ checkoutSessionId: sessionId });
    await payAndReturn(sessionId);
    expect(await statusShown()).toBe('paid');
    await expectPaidOnce(order.id, 'success_page');
    const eventId = await h.eventFor('payment.succeeded', order.payment_id);
    expect(h.webhookHits.filter((x) => x.eventId === eventId)).toEqual([]); // nothing delivered yet

    await h.startWorker(); // the webhook arrives now
    await shopProcessed(eventId);
    expect(h.webhookHits.filter((x) => x.eventId === eventId)).toEqual([{ eventId, status: 200 }]);
    await expectPaidOnce(order.id, 'success_page');
    // And the customer reloading the page changes nothing.
    await page.reload();
    expect(await statusShown()).toBe('paid');
    await expectPaidOnce(order.id, 'success_page');
  });

  it('spec 6.2.5: double delivery: the same evt_ delivered twice credits once; the return finds the order paid', async () => {
    await h.startWorker();
    const sessionId = await buy();
    const order = await h.order({ checkoutSessionId: sessionId });
    // The sandbox moves the session's payment to succeeded with the double-delivery case.
    expect((await h.api('POST', `/api/v1/sandbox/payments/${order.payment_id}/simulate`, { status: 'processing' })).status).toBe(200);
    const simulated = await h.api('POST', `/api/v1/sandbox/payments/${order.payment_id}/simulate`, {
      status: 'succeeded',
      double_delivery: true,
    });
    expect(simulated.status).toBe(200);
    expect(simulated.body.status).toBe('succeeded');
    const eventId = await h.eventFor('payment.succeeded', order.payment_id);
    await until(
      async () => (await h.deliveriesOf(eventId)).length === 2 && (await h.deliveriesOf(eventId)).every((d) => d.state === 'delivered'),
      { message: 'both deliveries' },
    );
    await shopProcessed(eventId);
    // Both copies were acknowledged with 200; the receiver ran the work for one.
    expect(h.webhookHits.filter((x) => x.eventId === eventId)).toEqual([
      { eventId, status: 200 },
      { eventId, status: 200 },
    ]);
    await expectPaidOnce(order.id, 'webhook');

    // The customer comes back to the shop's success page.
    await page.goto(`${h.shopUrl}/success?checkout_session_id=${sessionId}`);
    expect(await statusShown()).toBe('paid');
    await expectPaidOnce(order.id, 'webhook');
  });

  it('spec 1: a failed payment credits nothing, even when the browser is sent to success_url anyway', async () => {
    await h.startWorker();
    const sessionId = await buy();
    const order = await h.order({ checkoutSessionId: sessionId });
    await page.getByRole('button', { name: 'Fail' }).click();
    await expect.poll(async () => (await h.api('GET', `/api/v1/payments/${order.payment_id}`)).body.status).toBe('failed');
    // Someone opens the success URL by hand (or a script forges the redirect).
    await page.goto(`${h.shopUrl}/success?checkout_session_id=${sessionId}`);
    expect(await statusShown()).toBe('pending');
    expect(await page.textContent('.note')).toContain('The payment failed: nothing was charged.');
    expect(await page.locator('meta[http-equiv="refresh"]').count()).toBe(0);
    expect(await h.ledgerOf(order.id)).toEqual([]);
    expect((await h.order({ id: order.id })).status).toBe('pending');
  });

  it('spec 6.2.3: a delivery replayed from the delivery log after the order was paid credits nothing', async () => {
    h.setWebhooksDown(true); // the shop's webhook route is down: every automatic attempt fails
    await h.startWorker();
    const sessionId = await buy();
    const order = await h.order({ checkoutSessionId: sessionId });
    await payAndReturn(sessionId);
    expect(await statusShown()).toBe('paid');
    await expectPaidOnce(order.id, 'success_page');

    const eventId = await h.eventFor('payment.succeeded', order.payment_id);
    await until(async () => ['failed_retrying', 'exhausted'].includes((await h.deliveriesOf(eventId))[0]?.state ?? ''), {
      message: 'a failed attempt',
    });
    expect(h.webhookHits.filter((x) => x.eventId === eventId).every((x) => x.status === 503)).toBe(true);
    // No automatic retry from here on: what reaches the shop next is the replay.
    await h.stopWorker();
    h.setWebhooksDown(false);
    const [delivery] = await h.deliveriesOf(eventId);
    const replayed = await h.svc.ctx.deliveries.replay(
      { platformId: h.platform.platform_id, environment: 'sandbox', actor: { type: 'operator' as const, id: 'test' } },
      delivery!.id,
    );
    expect(replayed.state).toBe('delivered');
    expect(replayed.attempts.at(-1)).toMatchObject({ trigger: 'manual', status_code: 200 });
    await shopProcessed(eventId);
    await expectPaidOnce(order.id, 'success_page');
  });
});

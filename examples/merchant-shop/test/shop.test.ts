import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { signTestDelivery } from '@payhooks/receiver';
import { startHarness, type Harness } from './helpers/harness.ts';
import { until } from '../../../packages/server/test/helpers/wait.ts';

// The shop over plain HTTP against a real payhooks: what a forged or early return, a forged or
// mismatching webhook and an abandoned checkout do to the ledger; the HTML it serves; `npm start`.

const EXAMPLE_DIR = fileURLToPath(new URL('..', import.meta.url));
let h: Harness;

beforeAll(async () => {
  h = await startHarness();
}, 120_000);
afterAll(async () => {
  await h?.close();
});
afterEach(async () => {
  await h.stopWorker();
});

/** POST /orders as the product page's form does; returns the order and where the shop redirected. */
async function buy(productId = 'tea') {
  const response = await fetch(`${h.shopUrl}/orders`, {
    method: 'POST',
    body: new URLSearchParams({ product_id: productId }),
    redirect: 'manual',
  });
  expect(response.status).toBe(303);
  const location = response.headers.get('location')!;
  const sessionId = location.match(/\/checkout\/(cs_[^/?#]+)$/)?.[1];
  expect(sessionId, `a hosted checkout page: ${location}`).toBeDefined();
  return { location, sessionId: sessionId!, order: await h.order({ checkoutSessionId: sessionId! }) };
}

const page = async (path: string) => {
  const response = await fetch(`${h.shopUrl}${path}`);
  const html = await response.text();
  return { status: response.status, html, headers: response.headers, status_shown: html.match(/data-status="([a-z]+)"/)?.[1] };
};

const simulate = (paymentId: string, status: string) => h.api('POST', `/api/v1/sandbox/payments/${paymentId}/simulate`, { status });

describe('examples/merchant-shop over HTTP', () => {
  it('Buy creates a pending order and a checkout session for exactly its price, with metadata.order_id', async () => {
    const { sessionId, order } = await buy('mug');
    expect(order).toMatchObject({ status: 'pending', amount: '25.00', asset_code: 'USDC.ETH' });
    const session = await h.api('GET', `/api/v1/checkout_sessions/${sessionId}`);
    expect(session.status).toBe(200);
    expect(session.body).toMatchObject({
      status: 'open',
      amount: '25.00',
      asset_code: 'USDC.ETH',
      metadata: { order_id: order.id },
      payment: order.payment_id,
      success_url: `${h.shopUrl}/success`,
      cancel_url: `${h.shopUrl}/orders/${order.id}`,
    });
    expect(await h.ledgerOf(order.id)).toEqual([]);
  });

  it('an unknown product is a 400 page, and no order or session is created', async () => {
    const before = (await h.pool.query('SELECT count(*)::int AS n FROM orders')).rows[0].n;
    const response = await fetch(`${h.shopUrl}/orders`, {
      method: 'POST',
      body: new URLSearchParams({ product_id: 'nope' }),
      redirect: 'manual',
    });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('Unknown product');
    expect((await h.pool.query('SELECT count(*)::int AS n FROM orders')).rows[0].n).toBe(before);
  });

  it('spec 1: returning to success_url before paying credits nothing; once payhooks says succeeded, the verified GET credits once', async () => {
    const { sessionId, order } = await buy();
    // Anyone can open the success URL with the session id before paying.
    const early = await page(`/success?checkout_session_id=${sessionId}`);
    expect(early.status).toBe(200);
    expect(early.status_shown).toBe('pending');
    expect(early.html).toContain('payhooks reports the payment as created');
    expect(await h.ledgerOf(order.id)).toEqual([]);
    // The payment goes through (no worker: no webhook), then the customer reloads.
    expect((await simulate(order.payment_id, 'processing')).status).toBe(200);
    expect((await page(`/success?checkout_session_id=${sessionId}`)).status_shown).toBe('pending');
    expect((await simulate(order.payment_id, 'succeeded')).status).toBe(200);
    const [a, b] = await Promise.all([
      page(`/success?checkout_session_id=${sessionId}`),
      page(`/success?checkout_session_id=${sessionId}`),
    ]);
    expect([a.status_shown, b.status_shown]).toEqual(['paid', 'paid']);
    expect(await h.ledgerOf(order.id)).toEqual([
      { order_id: order.id, payment_id: order.payment_id, amount: '4.50', asset_code: 'USDC.ETH', source: 'success_page' },
    ]);
  });

  it('spec 6.2.3: the webhook and several returns racing for one payment credit it once', async () => {
    const { sessionId, order } = await buy();
    expect((await simulate(order.payment_id, 'processing')).status).toBe(200);
    expect((await simulate(order.payment_id, 'succeeded')).status).toBe(200);
    // The worker delivers the webhook while the customer's browser (and a double-click) return.
    const worker = h.startWorker();
    const returns = await Promise.all(Array.from({ length: 8 }, () => page(`/success?checkout_session_id=${sessionId}`)));
    await worker;
    expect(returns.map((r) => r.status_shown)).toEqual(Array(8).fill('paid'));
    const eventId = await h.eventFor('payment.succeeded', order.payment_id);
    await until(async () => (await h.deliveriesOf(eventId)).every((d) => d.state === 'delivered'), { message: 'the delivery' });
    await h.shop.webhooks.drain();
    expect((await h.pool.query('SELECT state FROM payhooks_events WHERE event_id = $1', [eventId])).rows).toEqual([{ state: 'done' }]);
    const ledger = await h.ledgerOf(order.id);
    expect(ledger).toHaveLength(1);
    expect(ledger[0]).toMatchObject({ payment_id: order.payment_id, amount: '4.50' });
    expect(['webhook', 'success_page']).toContain(ledger[0]!.source);
  });

  it('spec 1: a return naming an unknown or missing checkout session shows an error and never asks for or credits anything', async () => {
    const unknown = await page(`/success?checkout_session_id=cs_${randomBytes(8).toString('hex')}`);
    expect(unknown.status).toBe(404);
    expect(unknown.html).toContain('No order of this shop has that checkout session.');
    const missing = await page('/success');
    expect(missing.status).toBe(400);
    // Whatever is in the URL never becomes markup.
    const hostile = await page(`/success?checkout_session_id=${encodeURIComponent('<script>alert(1)</script>')}`);
    expect(hostile.status).toBe(404);
    expect(hostile.html).not.toContain('<script>');
  });

  it('spec 5.1.7: a webhook signed with another secret is refused with 400 and credits nothing', async () => {
    const { order } = await buy();
    expect((await simulate(order.payment_id, 'processing')).status).toBe(200);
    const payment = (await simulate(order.payment_id, 'succeeded')).body;
    const event = {
      id: `evt_${randomBytes(8).toString('hex')}`,
      object: 'event',
      type: 'payment.succeeded',
      api_version: 'v1',
      environment: 'sandbox',
      merchant_id: h.platform.merchant_id,
      created_at: '2026-11-23T01:00:00Z',
      data: { object: payment },
    };
    const forged = signTestDelivery({ event: event as never, secret: `whsec_${randomBytes(24).toString('hex')}` });
    const response = await fetch(`${h.shopUrl}/webhooks/payhooks`, { method: 'POST', body: forged.body, headers: forged.headers });
    expect(response.status).toBe(400);
    await h.shop.webhooks.drain();
    expect(await h.ledgerOf(order.id)).toEqual([]);
    expect((await h.order({ id: order.id })).status).toBe('pending');
  });

  it('spec 6.2.3: a correctly signed payment.succeeded that does not match its order (amount, asset, payment id) is acknowledged but never credits', async () => {
    const { order } = await buy();
    expect((await simulate(order.payment_id, 'processing')).status).toBe(200);
    const payment = (await simulate(order.payment_id, 'succeeded')).body;
    const wrong = [
      { ...payment, amount: '0.01' },
      { ...payment, asset_code: 'USDT.TRX' },
      { ...payment, id: `pay_${randomBytes(8).toString('hex')}` },
    ];
    const ids: string[] = [];
    for (const object of wrong) {
      const event = {
        id: `evt_${randomBytes(8).toString('hex')}`,
        object: 'event',
        type: 'payment.succeeded',
        api_version: 'v1',
        environment: 'sandbox',
        merchant_id: h.platform.merchant_id,
        created_at: '2026-11-23T01:00:00Z',
        data: { object },
      };
      ids.push(event.id);
      const d = signTestDelivery({ event: event as never, secret: h.endpoint.secret });
      const response = await fetch(`${h.shopUrl}/webhooks/payhooks`, { method: 'POST', body: d.body, headers: d.headers });
      expect(response.status).toBe(200); // acknowledged: retrying the delivery would not help
    }
    await h.shop.webhooks.drain();
    // The work failed for good and stays in the shop's inbox with the reason, for a human.
    await until(
      async () => (await h.pool.query(`SELECT 1 FROM payhooks_events WHERE event_id = ANY($1) AND state = 'failed'`, [ids])).rowCount === 3,
      { message: 'the work to fail' },
    );
    const { rows } = await h.pool.query('SELECT last_error FROM payhooks_events WHERE event_id = ANY($1) ORDER BY event_id', [ids]);
    for (const row of rows) expect(row.last_error).toMatch(/PaymentMismatchError/);
    expect(await h.ledgerOf(order.id)).toEqual([]);
    expect((await h.order({ id: order.id })).status).toBe('pending');
    // The real payment still pays the order.
    expect((await page(`/success?checkout_session_id=${order.checkout_session_id}`)).status_shown).toBe('paid');
    expect(await h.ledgerOf(order.id)).toHaveLength(1);
  });

  it('an abandoned checkout: checkout_session.expired marks the order expired, and it can no longer be paid', async () => {
    await h.startWorker();
    const { sessionId, order } = await buy();
    const expired = await h.api('POST', `/api/v1/checkout_sessions/${sessionId}/expire`);
    expect(expired.status).toBe(200);
    await until(async () => (await h.order({ id: order.id })).status === 'expired', { message: 'the order to expire' });
    const shown = await page(`/success?checkout_session_id=${sessionId}`);
    expect(shown.status_shown).toBe('expired');
    expect(await h.ledgerOf(order.id)).toEqual([]);
    // The payment expired with the session: payhooks itself refuses to succeed it.
    expect((await simulate(order.payment_id, 'processing')).status).toBe(409);
  });

  it('the pages escape what they show and forbid scripts (Content-Security-Policy)', async () => {
    const home = await page('/');
    expect(home.status).toBe(200);
    expect(home.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(home.html).toContain('The payhooks mug &lt;limited &amp; &quot;signed&quot;&gt;');
    expect(home.html).not.toContain('<limited');
    const ledger = await page('/ledger');
    expect(ledger.status).toBe(200);
  });

  it('`npm start` (node server.js) refuses to start without its keys and serves the shop with them', async () => {
    const run = (env: Record<string, string>) =>
      spawn(process.execPath, ['server.js'], {
        cwd: EXAMPLE_DIR,
        env: { PATH: process.env.PATH, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    const collect = (child: ChildProcess) => {
      const out = { text: '' };
      child.stdout!.on('data', (c) => (out.text += c));
      child.stderr!.on('data', (c) => (out.text += c));
      return out;
    };
    const bare = run({});
    const bareOut = collect(bare);
    expect(await new Promise((r) => bare.once('exit', r))).toBe(1);
    expect(bareOut.text).toContain('Set PAYHOOKS_API_KEY and PAYHOOKS_WEBHOOK_SECRET');

    const child = run({
      PORT: '0',
      DATABASE_URL: (h.pool as unknown as { options: { connectionString: string } }).options.connectionString,
      PAYHOOKS_API_KEY: h.key,
      PAYHOOKS_WEBHOOK_SECRET: h.endpoint.secret,
      PAYHOOKS_URL: h.svc.url,
    });
    const out = collect(child);
    try {
      await until(() => /shop listening on/.test(out.text), { message: 'the shop to start' });
      const url = out.text.match(/http:\/\/127\.0\.0\.1:\d+/)![0];
      const home = await fetch(`${url}/`);
      expect(home.status).toBe(200);
      expect(await home.text()).toContain('A pot of green tea');
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  });
});

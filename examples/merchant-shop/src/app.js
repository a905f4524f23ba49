// The shop: a product page, "Buy" (an order and a payhooks checkout session), the page the customer
// comes back to, the webhook route, and the ledger. Who may mark an order paid, and why, is in
// fulfilment.js; this file is the HTTP around it.
import express from 'express';
import { createWebhookHandler, expressWebhook, pgStore } from '@payhooks/receiver';
import { PRODUCTS, productById } from './catalog.js';
import { attachCheckout, expireOrder, insertOrder, ledger, migrate, newOrderId, orderById, orderBySession } from './db.js';
import { PaymentMismatchError, fulfil } from './fulfilment.js';
import { payhooksClient } from './payhooks.js';
import { errorPage, ledgerPage, orderPage, productsPage } from './views.js';

const PUBLIC_DIR = new URL('../public/', import.meta.url).pathname;

/** Payment statuses after which the order can never be paid by that payment. */
const FINAL_FAILURES = ['failed', 'cancelled', 'expired'];

/** No script anywhere, styles from our own origin only, never framed. */
const CSP = "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; frame-ancestors 'none'";

/**
 * @param {{
 *   pool: import('pg').Pool,
 *   webhookSecret: string | string[],
 *   apiKey: string,
 *   payhooksUrl: string,
 *   publicUrl: string,
 *   doubleDelivery?: boolean,
 *   retryDelaysMs?: number[],
 *   log?: (message: string, error?: unknown) => void,
 * }} options
 */
export async function createShop({
  pool,
  webhookSecret,
  apiKey,
  payhooksUrl,
  publicUrl,
  doubleDelivery = false,
  retryDelaysMs,
  log = defaultLog,
}) {
  await migrate(pool);
  const store = pgStore({ pool }); // payhooks_events (seen evt_ ids, durable work) and payhooks_credits
  await store.migrate();
  const api = payhooksClient({ baseUrl: payhooksUrl, apiKey });
  const shopUrl = publicUrl.replace(/\/+$/, '');
  const deps = { pool, store };

  const webhooks = createWebhookHandler({
    secret: webhookSecret,
    store,
    // Everything else is answered 200 and ignored (spec 6.1.1).
    types: ['payment.succeeded', 'checkout_session.expired'],
    onEvent: async (event) => {
      if (event.type === 'payment.succeeded') await fulfil(deps, event.data.object, 'webhook');
      if (event.type === 'checkout_session.expired') await expireOrder(pool, event.data.object.id);
    },
    onError: (error, info) =>
      log(`webhook work for ${info.event?.id ?? 'a delivery'} failed (${info.phase}, will retry: ${info.willRetry})`, error),
    ...(retryDelaysMs ? { retryDelaysMs } : {}),
  });

  const app = express();
  app.disable('x-powered-by');
  app.use((_req, res, next) => {
    res.set({ 'Content-Security-Policy': CSP, 'X-Content-Type-Options': 'nosniff', 'Referrer-Policy': 'same-origin' });
    next();
  });

  // Before any body parser: the signature covers the raw bytes (spec 5.1.4). Verification,
  // deduplication on the evt_ id and the 200 are @payhooks/receiver's; the work is onEvent above.
  app.post('/webhooks/payhooks', expressWebhook(webhooks));

  app.use(express.static(PUBLIC_DIR, { index: false }));

  app.get('/', (_req, res) => {
    res.type('html').send(productsPage(PRODUCTS));
  });

  app.post('/orders', express.urlencoded({ extended: false, limit: '4kb' }), async (req, res) => {
    const product = productById(req.body?.product_id);
    if (!product) return res.status(400).type('html').send(errorPage('Unknown product', 'Choose a product from the list.'));
    const order = await insertOrder(pool, { id: newOrderId(), product });
    let session;
    try {
      session = await api.createCheckoutSession({
        order,
        successUrl: `${shopUrl}/success`,
        cancelUrl: `${shopUrl}/orders/${order.id}`,
        doubleDelivery,
      });
    } catch (error) {
      log(`checkout session for ${order.id} failed`, error);
      return res
        .status(502)
        .type('html')
        .send(errorPage('Checkout unavailable', 'The payment service could not start a checkout. Please try again in a moment.'));
    }
    await attachCheckout(pool, order.id, { checkoutSessionId: session.id, paymentId: session.payment });
    res.redirect(303, session.url);
  });

  // Where checkout sends the customer back: `success_url?checkout_session_id=cs_...`. Anyone can
  // open this URL with any id, so it is only a reason to ask payhooks. The order is marked paid
  // only if the payment, fetched server-side with the API key, has succeeded and matches it.
  app.get('/success', async (req, res) => {
    const sessionId = req.query.checkout_session_id;
    if (typeof sessionId !== 'string' || sessionId === '') {
      return res
        .status(400)
        .type('html')
        .send(errorPage('Missing checkout', 'This page needs the checkout_session_id payhooks adds when it sends you back.'));
    }
    let order = await orderBySession(pool, sessionId);
    if (!order) return res.status(404).type('html').send(errorPage('Unknown checkout', 'No order of this shop has that checkout session.'));
    let note;
    let refresh = true;
    if (order.status === 'pending') {
      try {
        const payment = await api.getPayment(order.payment_id);
        if (payment.status === 'succeeded') {
          await fulfil(deps, payment, 'success_page');
          order = await orderById(pool, order.id);
        } else if (FINAL_FAILURES.includes(payment.status)) {
          note = `The payment ${payment.status === 'failed' ? 'failed' : `was ${payment.status}`}: nothing was charged. You can start again from the products page.`;
          refresh = false;
        } else {
          note = `payhooks reports the payment as ${payment.status}; this page updates by itself.`;
        }
      } catch (error) {
        log(`confirming ${order.id} on return failed`, error);
        const mismatched = error instanceof PaymentMismatchError;
        note = mismatched
          ? 'This payment does not match the order, so the order stays unpaid. Please contact us.'
          : 'We could not confirm the payment yet. This page retries by itself.';
        refresh = !mismatched;
      }
    }
    res.type('html').send(
      orderPage(order, {
        title: order.status === 'paid' ? 'Thank you' : 'Your order',
        note,
        refresh: order.status === 'pending' && refresh,
      }),
    );
  });

  app.get('/orders/:id', async (req, res) => {
    const order = await orderById(pool, req.params.id);
    if (!order) return res.status(404).type('html').send(errorPage('Unknown order', 'There is no such order.'));
    res.type('html').send(orderPage(order));
  });

  app.get('/ledger', async (_req, res) => {
    res.type('html').send(ledgerPage(await ledger(pool)));
  });

  app.use((_req, res) => {
    res.status(404).type('html').send(errorPage('Not found', 'There is no such page.'));
  });
  // Express 5 passes rejected promises here. Nothing about the error reaches the page.
  app.use((error, req, res, next) => {
    log(`${req.method} ${req.path} failed`, error);
    if (res.headersSent) return next(error);
    const status = error.status >= 400 && error.status < 500 ? error.status : 500;
    res
      .status(status)
      .type('html')
      .send(
        errorPage(
          status === 500 ? 'Something went wrong' : 'Bad request',
          status === 500 ? 'Please try again.' : 'The request could not be read.',
        ),
      );
  });

  return { app, webhooks, store, close: () => webhooks.close() };
}

function defaultLog(message, error) {
  console.error(`[shop] ${message}${error ? `: ${error instanceof Error ? error.message : String(error)}` : ''}`);
}

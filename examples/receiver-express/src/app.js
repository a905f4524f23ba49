// A merchant's payhooks receiver. Everything that matters for correctness is here:
// the webhook route gets the raw body, @payhooks/receiver verifies it (spec 5.1), records the
// evt_ id in PostgreSQL (spec 6.2.1), answers 200 at once and runs the work from a durable queue
// (spec 6.2.2); the work credits the customer through creditOnce (spec 6.2.3). The browser's
// return from checkout credits nothing (spec 1).
import express from 'express';
import { createWebhookHandler, expressWebhook, isPaymentEvent, pgStore } from '@payhooks/receiver';

export const LEDGER_SQL = `
CREATE TABLE IF NOT EXISTS ledger_entries (
  id          bigserial PRIMARY KEY,
  account     text NOT NULL,
  amount      numeric(20, 2) NOT NULL,
  asset_code  text NOT NULL,
  payment_id  text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
)`;

/**
 * @param {{ pool: import('pg').Pool, secret: string | string[], onError?: (error: unknown, info: object) => void }} options
 */
export async function createReceiver({ pool, secret, onError }) {
  await pool.query(LEDGER_SQL);
  const store = pgStore({ pool }); // creates payhooks_events and payhooks_credits on first use
  await store.migrate();

  /** Credits a succeeded payment exactly once, whoever asks: the webhook, a replay, a status poll. */
  async function creditPayment(payment) {
    // `payhooks check-receiver` sends made-up payments (metadata.payhooks_check): nothing to credit.
    if (payment.metadata?.payhooks_check === true) {
      console.log(`[receiver] ${payment.id} is a payhooks check-receiver test payment; nothing to credit`);
      return { credited: false };
    }
    const account = payment.metadata?.account;
    if (typeof account !== 'string') {
      // Retried, then kept as a failed row in payhooks_events for a human to look at.
      throw new Error(`payment ${payment.id} has no metadata.account`);
    }
    return store.creditOnce(payment.id, (tx) =>
      tx.query('INSERT INTO ledger_entries (account, amount, asset_code, payment_id) VALUES ($1, $2, $3, $4)', [
        account,
        payment.amount,
        payment.asset_code,
        payment.id,
      ]),
    );
  }

  const webhooks = createWebhookHandler({
    secret,
    store,
    types: ['payment.succeeded'], // every other type: 200 and ignored (spec 6.1.1)
    onEvent: async (event) => {
      if (isPaymentEvent(event) && event.data.object.status === 'succeeded') await creditPayment(event.data.object);
    },
    // One line per failed attempt at the work (the event and the reason), not a stack trace.
    onError:
      onError ??
      ((error, info) =>
        console.error(
          `[receiver] ${info.phase} error${info.event ? ` for ${info.event.id}` : ''}: ${error instanceof Error ? error.message : String(error)}${info.willRetry ? '; will retry' : ''}`,
        )),
  });

  const app = express();
  // The webhook route comes before express.json(): the signature covers the raw bytes.
  app.post('/webhooks/payhooks', expressWebhook(webhooks));
  app.use(express.json());

  // Where the checkout sends the customer back. It never credits: the redirect may be forged,
  // may come before the webhook, or never come (spec 1).
  app.get('/checkout/return', (_req, res) => {
    res.type('text').send('Thanks! Your payment is being confirmed; your balance updates as soon as it is.');
  });

  app.get('/accounts/:account/balance', async (req, res) => {
    const { rows } = await pool.query(
      'SELECT asset_code, sum(amount)::text AS balance FROM ledger_entries WHERE account = $1 GROUP BY asset_code ORDER BY asset_code',
      [req.params.account],
    );
    res.json({ account: req.params.account, balances: rows });
  });

  return { app, webhooks, store, creditPayment };
}

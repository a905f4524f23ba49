// The one place an order becomes paid. Both sources of truth call it with a Payment they got from
// payhooks itself: the webhook route (signature verified by @payhooks/receiver) and the /success
// page (a server-side GET with the API key). The browser's redirect is never one of them.
import { orderById } from './db.js';

/** The payment does not belong to the order it names, or differs from it: never credited. */
export class PaymentMismatchError extends Error {
  constructor(message) {
    super(message);
    this.name = 'PaymentMismatchError';
  }
}

/** Why `payment` cannot pay `order`, or null when it matches it exactly. */
export function mismatch(order, payment) {
  if (!order) return `no order ${payment.metadata?.order_id ?? '(metadata.order_id missing)'}`;
  if (order.payment_id !== payment.id) return `order ${order.id} is paid by ${order.payment_id ?? 'no payment yet'}, not ${payment.id}`;
  if (payment.metadata?.order_id !== order.id) return `payment ${payment.id} names order ${payment.metadata?.order_id}, not ${order.id}`;
  if (payment.amount !== order.amount) return `payment ${payment.id} is ${payment.amount}, order ${order.id} costs ${order.amount}`;
  if (payment.asset_code !== order.asset_code)
    return `payment ${payment.id} is in ${payment.asset_code}, order ${order.id} in ${order.asset_code}`;
  return null;
}

/**
 * Marks the order of a succeeded payment paid and writes its ledger row, exactly once per
 * payment id however many times and from however many places it is called (spec 6.2.3):
 * `creditOnce` inserts the payment id into payhooks_credits in the same transaction as the order
 * update and the ledger row, so concurrent callers wait on that row and all but one see
 * `credited: false`.
 *
 * @param {{ pool: import('pg').Pool, store: ReturnType<typeof import('@payhooks/receiver').pgStore> }} deps
 * @param {object} payment the Payment resource, as payhooks sent or returned it
 * @param {'webhook' | 'success_page'} source
 * @returns {Promise<{ credited: boolean }>}
 */
export async function fulfil({ pool, store }, payment, source) {
  if (payment.status !== 'succeeded') throw new TypeError(`payment ${payment.id} is ${payment.status}, not succeeded`);
  const order = await orderById(pool, payment.metadata?.order_id);
  const problem = mismatch(order, payment);
  if (problem) throw new PaymentMismatchError(problem);
  const result = await store.creditOnce(payment.id, async (tx) => {
    const updated = await tx.query(`UPDATE orders SET status = 'paid', paid_at = now() WHERE id = $1 AND status = 'pending'`, [order.id]);
    // Not pending and not credited for this payment: expired before it succeeded. Roll back and
    // let a human look (the webhook's work ends as `failed` in payhooks_events with this message).
    if (updated.rowCount !== 1) throw new Error(`order ${order.id} is ${(await orderById(tx, order.id)).status}, not pending`);
    await tx.query('INSERT INTO ledger_entries (order_id, payment_id, amount, asset_code, source) VALUES ($1, $2, $3, $4, $5)', [
      order.id,
      payment.id,
      payment.amount,
      payment.asset_code,
      source,
    ]);
  });
  return { credited: result.credited };
}

// The shop's own tables: orders and the ledger. @payhooks/receiver adds payhooks_events (seen
// evt_ ids and their work) and payhooks_credits (credited payment ids) next to them.
import { randomBytes } from 'node:crypto';

export const SCHEMA_SQL = `
CREATE TABLE IF NOT EXISTS orders (
  id                  text PRIMARY KEY,
  product_id          text NOT NULL,
  amount              numeric(20, 2) NOT NULL CHECK (amount > 0),
  asset_code          text NOT NULL,
  status              text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'paid', 'expired')),
  -- Set once the checkout session exists; what /success and the webhook look the order up by.
  checkout_session_id text UNIQUE,
  payment_id          text UNIQUE,
  paid_at             timestamptz,
  created_at          timestamptz NOT NULL DEFAULT now()
);
-- One row per credited payment. UNIQUE (payment_id) backs up creditOnce: even a bug that bypassed
-- it could not write a second row for one payment.
CREATE TABLE IF NOT EXISTS ledger_entries (
  id          bigserial PRIMARY KEY,
  order_id    text NOT NULL REFERENCES orders (id),
  payment_id  text NOT NULL UNIQUE,
  amount      numeric(20, 2) NOT NULL,
  asset_code  text NOT NULL,
  -- Which path confirmed the payment first: a verified webhook or the verified GET behind /success.
  source      text NOT NULL CHECK (source IN ('webhook', 'success_page')),
  created_at  timestamptz NOT NULL DEFAULT now()
);`;

/** Creates the shop's tables (idempotent; serialised, so several processes may start at once). */
export async function migrate(pool) {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('merchant_shop_migrate'))`);
    await client.query(SCHEMA_SQL);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

const ORDER_COLUMNS = `id, product_id, amount::text AS amount, asset_code, status, checkout_session_id, payment_id, paid_at, created_at`;

export function newOrderId() {
  return `ord_${randomBytes(12).toString('base64url')}`;
}

export async function insertOrder(pool, { id, product }) {
  const { rows } = await pool.query(
    `INSERT INTO orders (id, product_id, amount, asset_code) VALUES ($1, $2, $3, $4) RETURNING ${ORDER_COLUMNS}`,
    [id, product.id, product.amount, product.asset_code],
  );
  return rows[0];
}

export async function attachCheckout(pool, orderId, { checkoutSessionId, paymentId }) {
  await pool.query('UPDATE orders SET checkout_session_id = $2, payment_id = $3 WHERE id = $1', [orderId, checkoutSessionId, paymentId]);
}

export async function orderById(pool, id) {
  return (await pool.query(`SELECT ${ORDER_COLUMNS} FROM orders WHERE id = $1`, [id])).rows[0];
}

export async function orderBySession(pool, checkoutSessionId) {
  return (await pool.query(`SELECT ${ORDER_COLUMNS} FROM orders WHERE checkout_session_id = $1`, [checkoutSessionId])).rows[0];
}

/** An abandoned checkout: the order can no longer be paid. Only a pending order changes. */
export async function expireOrder(pool, checkoutSessionId) {
  await pool.query(`UPDATE orders SET status = 'expired' WHERE checkout_session_id = $1 AND status = 'pending'`, [checkoutSessionId]);
}

export async function ledger(pool, limit = 100) {
  const { rows } = await pool.query(
    `SELECT id::text, order_id, payment_id, amount::text AS amount, asset_code, source, created_at
     FROM ledger_entries ORDER BY id DESC LIMIT $1`,
    [limit],
  );
  return rows;
}

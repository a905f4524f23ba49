// Server-rendered pages. Every value goes through `h` (escape-html) at the point it is written
// into the HTML, so nothing from a URL, the database or payhooks can become markup. There is no
// script at all, and the Content-Security-Policy set in app.js forbids any.
import escapeHtml from 'escape-html';
import { productById } from './catalog.js';

const h = (value) => escapeHtml(String(value ?? ''));

function layout(title, body, { refreshSeconds } = {}) {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${h(title)} · payhooks shop</title>
<link rel="stylesheet" href="/style.css">${refreshSeconds ? `\n<meta http-equiv="refresh" content="${Number(refreshSeconds)}">` : ''}
</head>
<body>
<header><a href="/">payhooks shop</a></header>
<main>
<h1>${h(title)}</h1>
${body}
</main>
</body>
</html>`;
}

export function productsPage(products) {
  const items = products
    .map(
      (p) => `<form class="product" method="post" action="/orders">
  <span><span class="name">${h(p.name)}</span> · ${h(p.amount)} ${h(p.asset_code)}</span>
  <input type="hidden" name="product_id" value="${h(p.id)}">
  <button type="submit" aria-label="Buy ${h(p.name)}">Buy</button>
</form>`,
    )
    .join('\n');
  return layout('Products', `${items}\n<p><a href="/ledger">Ledger</a></p>`);
}

const STATUS_TEXT = {
  paid: 'Paid. Thank you!',
  pending: 'Waiting for the payment to be confirmed.',
  expired: 'This checkout expired before it was paid.',
};

function orderSummary(order) {
  const product = productById(order.product_id);
  return `<dl>
  <dt>Order</dt><dd><code class="order-id">${h(order.id)}</code></dd>
  <dt>Item</dt><dd>${h(product?.name ?? order.product_id)}</dd>
  <dt>Amount</dt><dd>${h(order.amount)} ${h(order.asset_code)}</dd>
  <dt>Status</dt><dd><span class="status status-${h(order.status)}" data-status="${h(order.status)}">${h(order.status)}</span> ${h(STATUS_TEXT[order.status])}</dd>
</dl>`;
}

/**
 * The page the customer lands on from checkout. `note` explains a pending order; a pending order
 * reloads itself every few seconds (meta refresh: no script needed), and each reload asks payhooks
 * again, unless `refresh` is false (the payment ended without succeeding).
 */
export function orderPage(order, { title = 'Your order', note, refresh = order.status === 'pending' } = {}) {
  const body = `${orderSummary(order)}${note ? `\n<p class="note">${h(note)}</p>` : ''}`;
  return layout(title, body, { refreshSeconds: refresh ? 3 : undefined });
}

export function ledgerPage(entries) {
  const rows = entries
    .map(
      (e) =>
        `<tr><td>${h(e.id)}</td><td><a href="/orders/${encodeURIComponent(e.order_id)}"><code>${h(e.order_id)}</code></a></td><td><code>${h(e.payment_id)}</code></td><td>${h(e.amount)} ${h(e.asset_code)}</td><td>${h(e.source)}</td><td>${h(e.created_at.toISOString().slice(0, 19).replace('T', ' '))}Z</td></tr>`,
    )
    .join('\n');
  return layout(
    'Ledger',
    `<table>
<thead><tr><th>#</th><th>Order</th><th>Payment</th><th>Amount</th><th>Confirmed by</th><th>At</th></tr></thead>
<tbody>
${rows || '<tr><td colspan="6">Nothing credited yet.</td></tr>'}
</tbody>
</table>`,
  );
}

export function errorPage(title, message) {
  return layout(title, `<p class="error">${h(message)}</p>\n<p><a href="/">Back to the products</a></p>`);
}

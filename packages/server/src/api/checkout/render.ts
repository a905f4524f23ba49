/**
 * Server-rendered HTML of the hosted checkout page. Every interpolated value goes through `html`
 * (escaped as text); merchant names and metadata are attacker-controlled from the customer's
 * point of view and are never rendered as markup. No script at all: the page is plain forms.
 */

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** Markup that is already safe (built by `html`). */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

type Part = string | number | SafeHtml | null | undefined | false | Part[];

function render(part: Part): string {
  if (part === null || part === undefined || part === false) return '';
  if (part instanceof SafeHtml) return part.value;
  if (Array.isArray(part)) return part.map(render).join('');
  return escapeHtml(String(part));
}

/** Tagged template: the literal text is markup, every `${value}` is escaped unless it is SafeHtml. */
export function html(strings: TemplateStringsArray, ...values: Part[]): SafeHtml {
  let out = strings[0]!;
  values.forEach((v, i) => {
    out += render(v) + strings[i + 1]!;
  });
  return new SafeHtml(out);
}

export const STYLESHEET_PATH = '/checkout/assets/checkout.css';

/** One font stack for everything, buttons included; margins on a phone; no script anywhere. */
export const STYLESHEET = `
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;min-height:100vh;display:flex;align-items:flex-start;justify-content:center;padding:48px 16px;background:#f4f5f7;color:#1a1f36;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
button,input{font:inherit}
main{background:#fff;border-radius:12px;box-shadow:0 4px 24px rgba(0,0,0,.08);padding:32px 28px;width:100%;max-width:440px}
.top{display:flex;align-items:center;justify-content:space-between;gap:12px;margin-bottom:20px}
.shop{margin:0;font-size:1.05rem;font-weight:600;overflow-wrap:anywhere}
.badge{flex:none;padding:2px 8px;border-radius:4px;background:#fff3cd;color:#7a5b00;font-size:.75rem;font-weight:700;text-transform:uppercase;letter-spacing:.03em}
.label{margin:0;color:#697386;font-size:.875rem}
.description{margin:2px 0 16px;white-space:pre-line;overflow-wrap:anywhere}
.amount{margin:0;font-size:2.25rem;font-weight:700;letter-spacing:-.01em;line-height:1.2}
.asset{font-size:1.1rem;font-weight:600;color:#697386;margin-left:.3em}
.network{margin:2px 0 20px;color:#697386;font-size:.875rem}
.expiry{margin:0 0 20px;color:#697386;font-size:.875rem}
.status{padding:12px 14px;border-radius:8px;background:#f4f5f7;margin:16px 0}
.status.bad{background:#fde8e8;color:#9b1c1c}
.status.good{background:#e3f9e5;color:#05603a}
.back{display:block;text-align:center;margin:16px 0 0;color:#635bff;font-weight:600;text-decoration:none}
.back:hover,.back:focus{text-decoration:underline}
form{margin:8px 0}
button{width:100%;padding:12px;border:0;border-radius:8px;font-weight:600;cursor:pointer}
.pay{background:#635bff;color:#fff}
.fail{background:#fde8e8;color:#9b1c1c}
.cancel{background:transparent;color:#697386}
.ref{margin:24px 0 0;color:#8792a2;font-size:.75rem;overflow-wrap:anywhere}
@media (max-width:480px){body{padding:16px 12px}main{padding:24px 18px}.amount{font-size:1.9rem}}
`;

export interface PageModel {
  /** The shop's name as the customer knows it (display name, else the Platform's name). */
  shopName: string;
  /** What the customer pays for, or null. */
  description: string | null;
  sessionId: string;
  sessionStatus: 'open' | 'complete' | 'expired';
  paymentStatus: string;
  amount: string;
  assetCode: string;
  environment: 'live' | 'sandbox';
  csrfToken: string;
  expiresAt: Date;
  now: Date;
  /** Where "back to the shop" goes: the cancel URL, else the success URL's origin; null if neither parses. */
  shopUrl: string | null;
}

/** "1234.50" -> "1,234.50": digits grouped, the two decimals kept as they are. */
export function formatAmount(amount: string): string {
  const [whole, decimals] = amount.split('.');
  return `${whole!.replace(/\B(?=(\d{3})+(?!\d))/g, ',')}${decimals === undefined ? '' : `.${decimals}`}`;
}

/** "USDC.ETH" -> { asset: "USDC", network: "ETH" }. */
export function splitAssetCode(code: string): { asset: string; network: string | null } {
  const dot = code.lastIndexOf('.');
  return dot > 0 ? { asset: code.slice(0, dot), network: code.slice(dot + 1) } : { asset: code, network: null };
}

/**
 * "Expires in 42 minutes (at 14:05 UTC)". The page runs no script, so the customer's time zone is
 * unknown to it: the time is given in UTC, labelled, beside the minutes left, which need no zone.
 */
export function describeExpiry(expiresAt: Date, now: Date): string {
  const minutes = Math.max(0, Math.ceil((expiresAt.getTime() - now.getTime()) / 60_000));
  const at = `${String(expiresAt.getUTCHours()).padStart(2, '0')}:${String(expiresAt.getUTCMinutes()).padStart(2, '0')} UTC`;
  const dayDiff = Math.floor(expiresAt.getTime() / 86_400_000) - Math.floor(now.getTime() / 86_400_000);
  const day = dayDiff === 0 ? '' : dayDiff === 1 ? ' tomorrow' : ` on ${expiresAt.toISOString().slice(0, 10)}`;
  const left = minutes >= 120 ? `${Math.floor(minutes / 60)} hours` : minutes === 1 ? '1 minute' : `${minutes} minutes`;
  return `Expires in ${left} (at ${at}${day})`;
}

function layout(title: string, body: SafeHtml): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="${STYLESHEET_PATH}">
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`.value;
}

function button(sessionId: string, action: 'pay' | 'fail' | 'cancel', label: string, token: string): SafeHtml {
  return html`<form method="post" action="/checkout/${sessionId}/${action}">
<input type="hidden" name="csrf_token" value="${token}">
<button type="submit" class="${action}" id="${action}">${label}</button>
</form>`;
}

function backLink(m: PageModel): SafeHtml | null {
  return m.shopUrl ? html`<a class="back" id="back" href="${m.shopUrl}">Return to ${m.shopName}</a>` : null;
}

function statusLine(m: PageModel): SafeHtml {
  if (m.sessionStatus === 'complete') return html`<p class="status good" id="status">Paid. Thank you!</p>`;
  if (m.sessionStatus === 'expired')
    return html`<p class="status bad" id="status">This checkout has expired: nothing was paid.</p>${backLink(m)}`;
  if (m.paymentStatus === 'failed') return html`<p class="status bad" id="status">The payment failed: nothing was paid.</p>${backLink(m)}`;
  if (m.paymentStatus === 'cancelled')
    return html`<p class="status bad" id="status">The payment was cancelled: nothing was paid.</p>${backLink(m)}`;
  if (m.paymentStatus !== 'created') return html`<p class="status" id="status">Payment ${m.paymentStatus.replace(/_/g, ' ')}.</p>`;
  return html``;
}

export function checkoutPage(m: PageModel): string {
  const open = m.sessionStatus === 'open' && !['failed', 'succeeded', 'cancelled', 'expired'].includes(m.paymentStatus);
  const { asset, network } = splitAssetCode(m.assetCode);
  const controls = !open
    ? null
    : m.environment === 'sandbox'
      ? html`${button(m.sessionId, 'pay', `Pay ${formatAmount(m.amount)} ${asset}`, m.csrfToken)}${button(m.sessionId, 'fail', 'Simulate a failed payment', m.csrfToken)}${button(m.sessionId, 'cancel', `Cancel and return to ${m.shopName}`, m.csrfToken)}`
      : html`<p class="status">Complete the payment with your wallet; this page shows its status.</p>`;
  return layout(
    `Pay ${m.shopName}`,
    html`<div class="top"><p class="shop" id="shop">${m.shopName}</p>${m.environment === 'sandbox' ? html`<span class="badge">Sandbox</span>` : null}</div>
${m.description ? html`<p class="label">You pay for</p><p class="description" id="description">${m.description}</p>` : null}
<p class="amount"><span id="amount">${formatAmount(m.amount)}</span><span class="asset" id="asset">${asset}</span></p>
${network ? html`<p class="network" id="network">on ${network}</p>` : null}
${open ? html`<p class="expiry" id="expiry"><time datetime="${m.expiresAt.toISOString()}">${describeExpiry(m.expiresAt, m.now)}</time></p>` : null}
${statusLine(m)}
${controls}
<p class="ref" id="reference">Reference ${m.sessionId}</p>`,
  );
}

export function errorPage(title: string, message: string): string {
  return layout(title, html`<h1>${title}</h1><p class="status bad" id="status">${message}</p>`);
}

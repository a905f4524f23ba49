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

export const STYLESHEET = `
*{box-sizing:border-box}
body{margin:0;min-height:100vh;display:flex;align-items:center;justify-content:center;background:#f4f5f7;font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1a1f36}
main{background:#fff;border-radius:12px;box-shadow:0 4px 24px rgba(0,0,0,.08);padding:32px;width:100%;max-width:420px}
.merchant{margin:0 0 4px;color:#697386;font-weight:600}
.amount{margin:0 0 16px;font-size:2rem}
.asset{font-size:1rem;color:#697386;margin-left:.25em}
.badge{display:inline-block;padding:2px 8px;border-radius:4px;background:#fff3cd;color:#7a5b00;font-size:.75rem;font-weight:700;text-transform:uppercase;margin-bottom:16px}
.status{padding:12px;border-radius:8px;background:#f4f5f7;margin:16px 0}
.status.bad{background:#fde8e8;color:#9b1c1c}
.status.good{background:#e3f9e5;color:#05603a}
form{margin:8px 0}
button{width:100%;padding:12px;border:0;border-radius:8px;font-size:1rem;font-weight:600;cursor:pointer}
.pay{background:#635bff;color:#fff}
.fail{background:#fde8e8;color:#9b1c1c}
.cancel{background:transparent;color:#697386}
dl{margin:16px 0 0;font-size:.85rem;color:#697386}
dt{font-weight:600}
dd{margin:0 0 8px;word-break:break-all}
`;

export interface PageModel {
  merchantName: string;
  sessionId: string;
  sessionStatus: 'open' | 'complete' | 'expired';
  paymentStatus: string;
  amount: string;
  assetCode: string;
  environment: 'live' | 'sandbox';
  hasCancelUrl: boolean;
  csrfToken: string;
  expiresAt: string;
}

function layout(title: string, body: SafeHtml): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
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

function statusLine(m: PageModel): SafeHtml {
  if (m.sessionStatus === 'complete') return html`<p class="status good" id="status">Paid. Thank you!</p>`;
  if (m.sessionStatus === 'expired') return html`<p class="status bad" id="status">This checkout session has expired.</p>`;
  if (m.paymentStatus === 'failed') return html`<p class="status bad" id="status">The payment failed. Return to the shop to try again.</p>`;
  if (m.paymentStatus !== 'created') return html`<p class="status" id="status">Payment status: ${m.paymentStatus}</p>`;
  return html``;
}

export function checkoutPage(m: PageModel): string {
  const payable = m.sessionStatus === 'open' && !['failed', 'succeeded', 'cancelled', 'expired'].includes(m.paymentStatus);
  const controls =
    m.environment === 'sandbox'
      ? html`${payable ? [button(m.sessionId, 'pay', 'Pay', m.csrfToken), button(m.sessionId, 'fail', 'Fail', m.csrfToken)] : null}${m.sessionStatus === 'open' && m.hasCancelUrl ? button(m.sessionId, 'cancel', 'Cancel', m.csrfToken) : null}`
      : html`<p class="status">Complete the payment with your wallet; this page shows its status.</p>`;
  return layout(
    `Pay ${m.merchantName}`,
    html`${m.environment === 'sandbox' ? html`<span class="badge">Sandbox</span>` : null}
<p class="merchant" id="merchant">${m.merchantName}</p>
<h1 class="amount"><span id="amount">${m.amount}</span><span class="asset" id="asset">${m.assetCode}</span></h1>
${statusLine(m)}
${controls}
<dl>
<dt>Checkout session</dt><dd>${m.sessionId}</dd>
<dt>Expires</dt><dd>${m.expiresAt}</dd>
</dl>`,
  );
}

export function errorPage(title: string, message: string): string {
  return layout(title, html`<h1>${title}</h1><p class="status bad" id="status">${message}</p>`);
}

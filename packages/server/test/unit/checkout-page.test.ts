import { describe, expect, it } from 'vitest';
import { checkoutPage, describeExpiry, escapeHtml, formatAmount, html } from '../../src/api/checkout/render.ts';
import { successRedirect, validateReturnUrl } from '../../src/payments/checkout.ts';
import { loadConfig } from '../../src/config.ts';
import { ConfigError } from '../../src/errors.ts';

const NOW = new Date(Date.UTC(2026, 10, 24, 18, 34, 5));
const model = {
  shopName: `<img src=x onerror=alert(1)>"'&`,
  description: 'Order #1042 <b>\nTwo mugs',
  sessionId: 'cs_abc',
  sessionStatus: 'open' as const,
  paymentStatus: 'created',
  amount: '1234.50',
  assetCode: 'USDC.ETH',
  environment: 'sandbox' as const,
  csrfToken: 'tok"en',
  expiresAt: new Date(NOW.getTime() + 42 * 60_000),
  now: NOW,
  shopUrl: 'https://shop.example/cart?x="><script>',
};

describe('hosted page rendering', () => {
  it('escapes every interpolated value, attributes included', () => {
    expect(escapeHtml(`<a href="x">'&`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;');
    expect(html`<p title="${'"><script>'}">${'<b>'}</p>`.value).toBe('<p title="&quot;&gt;&lt;script&gt;">&lt;b&gt;</p>');
    const page = checkoutPage(model);
    expect(page).not.toContain('<img');
    expect(page).toContain('&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;');
    expect(page).toContain('Order #1042 &lt;b&gt;');
    expect(page).toContain('value="tok&quot;en"');
    expect(page).not.toMatch(/<script|<[^>]*\s(style|on\w+)=/i);
  });

  it('issue 22: what the customer pays for, the amount for people, minutes left and no raw ISO timestamp; the session id only as a reference', () => {
    const page = checkoutPage(model);
    expect(page).toContain('<p class="shop" id="shop">');
    expect(page).toMatch(/<span id="amount">1,234\.50<\/span><span class="asset" id="asset">USDC<\/span>/);
    expect(page).toContain('on ETH');
    expect(page).toContain('Expires in 42 minutes (at 19:16 UTC)');
    // The machine-readable time is in the <time> element's attribute only, never shown as text.
    expect(page.replace(/datetime="[^"]*"/g, '')).not.toMatch(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/);
    expect(page).toContain('Reference cs_abc');
    expect(page).not.toContain('Checkout session');
  });

  it('sandbox shows Pay, a simulated failure and Cancel back to the shop; live and finished sessions show no buttons', () => {
    expect(checkoutPage(model)).toMatch(/>Pay 1,234\.50 USDC<[\s\S]*>Simulate a failed payment<[\s\S]*>Cancel and return to /);
    expect(checkoutPage({ ...model, environment: 'live' })).not.toContain('<form');
    expect(checkoutPage({ ...model, sessionStatus: 'complete' })).not.toContain('<form');
    expect(checkoutPage({ ...model, paymentStatus: 'failed' })).not.toContain('<form');
  });

  it('issue 22: after a failure, a cancellation or expiry, a link back to the shop (escaped)', () => {
    for (const m of [{ paymentStatus: 'failed' }, { paymentStatus: 'cancelled' }, { sessionStatus: 'expired' as const }]) {
      const page = checkoutPage({ ...model, ...m });
      expect(page).toContain('<a class="back" id="back" href="https://shop.example/cart?x=&quot;&gt;&lt;script&gt;">Return to ');
      expect(page).toContain('nothing was paid');
    }
    expect(checkoutPage({ ...model, paymentStatus: 'failed', shopUrl: null })).not.toContain('class="back"');
  });

  it('expiry in words', () => {
    expect(describeExpiry(new Date(NOW.getTime() + 60_000), NOW)).toBe('Expires in 1 minute (at 18:35 UTC)');
    expect(describeExpiry(new Date(NOW.getTime() + 3 * 3600_000), NOW)).toBe('Expires in 3 hours (at 21:34 UTC)');
    expect(describeExpiry(new Date(NOW.getTime() + 8 * 3600_000), NOW)).toBe('Expires in 8 hours (at 02:34 UTC tomorrow)');
    expect(formatAmount('999999999.99')).toBe('999,999,999.99');
    expect(formatAmount('0.01')).toBe('0.01');
  });
});

describe('return URLs', () => {
  it('appends checkout_session_id with ? or &', () => {
    expect(successRedirect('https://shop.example/ok', 'cs_1')).toBe('https://shop.example/ok?checkout_session_id=cs_1');
    expect(successRedirect('https://shop.example/ok?order=7', 'cs_1')).toBe('https://shop.example/ok?order=7&checkout_session_id=cs_1');
  });

  it('accepts absolute http(s) URLs without credentials; https only when asked', () => {
    expect(validateReturnUrl('http://127.0.0.1:3000/ok', 'success_url', { requireHttps: false })).toBe('http://127.0.0.1:3000/ok');
    for (const bad of ['/relative', 'javascript:alert(1)', 'data:text/html,x', 'https://a:b@x.example/']) {
      expect(() => validateReturnUrl(bad, 'success_url', { requireHttps: false })).toThrow();
    }
    // Issue 22: control characters, spaces, hosts that are not host names, and over-long URLs.
    for (const bad of [
      'https://shop.example/cancel\n',
      'https://shop.example/can\r\ncel',
      'https://shop.example/a b',
      'https://shop.example/\t',
      'https://shop.example;sandbox/ok',
      "https://shop.example'/ok",
      `https://shop.example/${'a'.repeat(2048)}`,
    ]) {
      expect(() => validateReturnUrl(bad, 'cancel_url', { requireHttps: false }), JSON.stringify(bad)).toThrow(/Invalid 'cancel_url'/);
    }
    expect(validateReturnUrl('https://xn--caf-dma.example/ok?a=%20', 'success_url', { requireHttps: true })).toBe(
      'https://xn--caf-dma.example/ok?a=%20',
    );
    expect(validateReturnUrl('http://[::1]:3000/ok', 'success_url', { requireHttps: false })).toBe('http://[::1]:3000/ok');
    expect(() => validateReturnUrl('http://shop.example/', 'success_url', { requireHttps: true })).toThrow(/https/);
  });

  it('PAYHOOKS_PUBLIC_URL must be an http(s) base URL; a trailing slash is dropped', () => {
    expect(loadConfig({ PAYHOOKS_PUBLIC_URL: 'https://pay.example.com/' }).publicUrl).toBe('https://pay.example.com');
    expect(loadConfig({}).publicUrl).toBeUndefined();
    for (const bad of ['pay.example.com', 'ftp://x.example', 'https://x.example/?a=1'])
      expect(() => loadConfig({ PAYHOOKS_PUBLIC_URL: bad })).toThrow(ConfigError);
    expect(loadConfig({ PAYHOOKS_EXPIRY_INTERVAL: '30s' }).expiryIntervalMs).toBe(30_000);
    expect(() => loadConfig({ PAYHOOKS_EXPIRY_INTERVAL: '2m' })).toThrow(ConfigError);
  });
});

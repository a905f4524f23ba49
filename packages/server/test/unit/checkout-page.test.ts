import { describe, expect, it } from 'vitest';
import { checkoutPage, escapeHtml, html } from '../../src/api/checkout/render.ts';
import { successRedirect, validateReturnUrl } from '../../src/payments/checkout.ts';
import { loadConfig } from '../../src/config.ts';
import { ConfigError } from '../../src/errors.ts';

const model = {
  merchantName: `<img src=x onerror=alert(1)>"'&`,
  sessionId: 'cs_abc',
  sessionStatus: 'open' as const,
  paymentStatus: 'created',
  amount: '1.00',
  assetCode: 'USDC.ETH',
  environment: 'sandbox' as const,
  hasCancelUrl: false,
  csrfToken: 'tok"en',
  expiresAt: '2026-01-01T00:00:00Z',
};

describe('hosted page rendering', () => {
  it('escapes every interpolated value, attributes included', () => {
    expect(escapeHtml(`<a href="x">'&`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;');
    expect(html`<p title="${'"><script>'}">${'<b>'}</p>`.value).toBe('<p title="&quot;&gt;&lt;script&gt;">&lt;b&gt;</p>');
    const page = checkoutPage(model);
    expect(page).not.toContain('<img');
    expect(page).toContain('&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;');
    expect(page).toContain('value="tok&quot;en"');
    expect(page).not.toMatch(/<script|<[^>]*\s(style|on\w+)=/i);
  });

  it('sandbox shows Pay and Fail (Cancel only with a cancel_url); live and finished sessions show no buttons', () => {
    expect(checkoutPage(model)).toMatch(/>Pay<[\s\S]*>Fail</);
    expect(checkoutPage(model)).not.toContain('>Cancel<');
    expect(checkoutPage({ ...model, hasCancelUrl: true })).toContain('>Cancel<');
    expect(checkoutPage({ ...model, environment: 'live' })).not.toContain('<form');
    expect(checkoutPage({ ...model, sessionStatus: 'complete' })).not.toContain('>Pay<');
    expect(checkoutPage({ ...model, sessionStatus: 'expired' })).toContain('expired');
    expect(checkoutPage({ ...model, paymentStatus: 'failed' })).not.toContain('>Pay<');
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

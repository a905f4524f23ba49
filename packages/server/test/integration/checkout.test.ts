import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { ManualClock, startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { parsedEvents, submitCheckout } from '../helpers/checkout.ts';
import { merchants } from '../../src/db/schema.ts';
import { expireDueSessions } from '../../src/payments/expiry.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';
import { until } from '../helpers/wait.ts';

const clock = new ManualClock(Date.UTC(2026, 10, 22, 9, 30, 0));
let svc: TestService;
let p: CreatedPlatform;
let worker: DeliveryWorker;
let receiver: TestReceiver;
const EVIL_NAME = `<script>alert("x")</script> & 'Shop'`;

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true, expiryIntervalMs: 100 }, { clock });
  p = await svc.platform('placeholder');
  // The shop's display name, as the customer sees it on the hosted page.
  await svc.ctx.database.db.update(merchants).set({ displayName: EVIL_NAME }).where(eq(merchants.id, p.merchant_id));
  worker = svc.ctx.createWorker();
  receiver = await startReceiver();
  await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url: receiver.url, enabled_events: ['*'] });
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});
beforeEach(async () => {
  await worker.drain();
  receiver.requests.length = 0;
});

const METADATA = { order_id: 'ord_<b>1</b>', customer: 'Zoë' };
const createSession = async (body: Record<string, unknown> = {}, key = p.keys.sandbox) => {
  const r = await svc.api(key, 'POST', '/api/v1/checkout_sessions', {
    amount: '42.50',
    asset_code: 'USDC.ETH',
    metadata: METADATA,
    success_url: 'https://shop.example/success',
    ...body,
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
};
const getPayment = async (id: string) => (await svc.api(p.keys.sandbox, 'GET', `/api/v1/payments/${id}`)).body;
const getSession = async (id: string) => (await svc.api(p.keys.sandbox, 'GET', `/api/v1/checkout_sessions/${id}`)).body;

describe('checkout sessions', () => {
  it('creates an open session with its Payment linked both ways, payment.created published', async () => {
    const s = await createSession({ cancel_url: 'https://shop.example/cart' });
    expect(s).toMatchObject({
      object: 'checkout_session',
      status: 'open',
      amount: '42.50',
      asset_code: 'USDC.ETH',
      metadata: METADATA,
      success_url: 'https://shop.example/success',
      cancel_url: 'https://shop.example/cart',
      completed_at: null,
      merchant_id: p.merchant_id,
      environment: 'sandbox',
    });
    expect(s.id).toMatch(/^cs_/);
    expect(s.url).toBe(`${svc.url}/checkout/${s.id}`);
    expect(Date.parse(s.expires_at) - Date.parse(s.created_at)).toBe(3_600_000);
    const pay = await getPayment(s.payment);
    expect(pay).toMatchObject({ status: 'created', amount: '42.50', asset_code: 'USDC.ETH', metadata: METADATA, checkout_session: s.id });
    await worker.drain();
    expect(parsedEvents(receiver.requests).map((e) => [e.type, e.data.object.id])).toEqual([['payment.created', s.payment]]);
    const list = await svc.api(p.keys.sandbox, 'GET', '/api/v1/checkout_sessions?limit=1');
    expect(list.body.data[0].id).toBe(s.id);
  });

  it('validates success_url, cancel_url and expires_in (60 to 86400 seconds)', async () => {
    const post = (body: Record<string, unknown>, key = p.keys.sandbox) =>
      svc.api(key, 'POST', '/api/v1/checkout_sessions', {
        amount: '1.00',
        asset_code: 'USDC.ETH',
        success_url: 'https://shop.example/ok',
        ...body,
      });
    for (const [body, param] of [
      [{ success_url: 'not a url' }, 'success_url'],
      [{ success_url: 'javascript:alert(1)' }, 'success_url'],
      [{ success_url: 'https://user:pw@shop.example/' }, 'success_url'],
      [{ cancel_url: 'ftp://shop.example/' }, 'cancel_url'],
      [{ expires_in: 59 }, 'expires_in'],
      [{ expires_in: 86_401 }, 'expires_in'],
      [{ expires_in: 1.5 }, 'expires_in'],
      [{ success_url: undefined }, 'success_url'],
    ] as const) {
      const r = await post(body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.param).toBe(param);
    }
    expect((await post({ expires_in: 60 })).status).toBe(201);
    expect((await post({ expires_in: 86_400 })).status).toBe(201);
    const liveHttp = await post({ success_url: 'http://shop.example/ok' }, p.keys.live);
    expect(liveHttp.status).toBe(400);
    expect(liveHttp.body.error.code).toBe('url_insecure');
  });

  it('POST /:id/expire expires an open session and its created payment; a second expire is a 409', async () => {
    const s = await createSession();
    const r = await svc.api(p.keys.sandbox, 'POST', `/api/v1/checkout_sessions/${s.id}/expire`);
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('expired');
    expect((await getPayment(s.payment)).status).toBe('expired');
    const again = await svc.api(p.keys.sandbox, 'POST', `/api/v1/checkout_sessions/${s.id}/expire`);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('checkout_session_not_open');
    await worker.drain();
    expect(parsedEvents(receiver.requests).map((e) => e.type)).toEqual(['payment.created', 'payment.expired', 'checkout_session.expired']);
  });
});

describe('a session follows its payment', () => {
  it("the rails succeeding a live session's payment complete the session; cancelling an open session's payment is refused", async () => {
    const token = 'internal-token-for-tests-0123456789abcdef';
    const rails = await startService({ allowPrivateUrls: true, internalToken: token });
    try {
      const q = await rails.platform('live shop');
      const created = await rails.api(q.keys.live, 'POST', '/api/v1/checkout_sessions', {
        amount: '3.00',
        asset_code: 'USDC.ETH',
        success_url: 'https://shop.example/ok',
      });
      expect(created.status).toBe(201);
      const cancel = await rails.api(q.keys.live, 'POST', `/api/v1/payments/${created.body.payment}/cancel`);
      expect(cancel.status).toBe(409);
      expect(cancel.body.error.code).toBe('checkout_session_open');
      expect(cancel.body.error.message).toContain(`/api/v1/checkout_sessions/${created.body.id}/expire`);
      const move = (status: string) =>
        fetch(`${rails.url}/internal/v1/payments/${created.body.payment}/transitions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ status }),
        });
      expect((await move('processing')).status).toBe(200);
      expect((await move('succeeded')).status).toBe(200);
      const session = (await rails.api(q.keys.live, 'GET', `/api/v1/checkout_sessions/${created.body.id}`)).body;
      expect(session.status).toBe('complete');
      const types = (await rails.api(q.keys.live, 'GET', '/api/v1/events')).body.data.map((e: { type: string }) => e.type);
      expect(types).toEqual(['checkout_session.completed', 'payment.succeeded', 'payment.processing', 'payment.created']);
    } finally {
      await rails.close();
    }
  });

  it('Pay racing expire on one session: exactly one wins', async () => {
    for (let round = 0; round < 3; round++) {
      const s = await createSession();
      const token = /name="csrf_token" value="([^"]+)"/.exec(await (await fetch(s.url)).text())![1]!;
      const [paid, expired] = await Promise.all([
        submitCheckout(s.url, 'pay', { token }),
        svc.api(p.keys.sandbox, 'POST', `/api/v1/checkout_sessions/${s.id}/expire`),
      ]);
      const session = await getSession(s.id);
      if (session.status === 'complete') {
        expect(paid.status).toBe(303);
        expect(expired.status).toBe(409);
        expect((await getPayment(s.payment)).status).toBe('succeeded');
      } else {
        expect(session.status).toBe('expired');
        expect(expired.status).toBe(200);
        expect(paid.status).toBe(409);
        expect((await getPayment(s.payment)).status).toBe('expired');
      }
    }
  });
});

describe('the hosted checkout page', () => {
  it('is server-rendered HTML with a strict CSP and no script, showing amount, asset and the merchant escaped', async () => {
    const s = await createSession({ cancel_url: 'https://cart.example/back' });
    const res = await fetch(s.url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toMatch(/script-src|unsafe-inline/);
    expect(csp).toContain("form-action 'self' https://shop.example https://cart.example");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    const html = await res.text();
    expect(html).not.toMatch(/<script/i);
    expect(html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;Shop&#39;');
    expect(html).toContain('<span id="amount">42.50</span><span class="asset" id="asset">USDC</span>');
    expect(html).toContain('on ETH');
    for (const button of ['>Pay 42.50 USDC<', '>Simulate a failed payment<', '>Cancel and return to ']) expect(html).toContain(button);
    expect((await fetch(`${svc.url}/checkout/cs_doesnotexist000`)).status).toBe(404);
    expect((await fetch(`${svc.url}/checkout/%3Cscript%3E`)).status).toBe(404);
  });

  it('Pay completes the session and succeeds the payment in one transaction, then redirects to success_url with checkout_session_id', async () => {
    const s = await createSession({ success_url: 'https://shop.example/success?order=ord_1' });
    const token = /name="csrf_token" value="([^"]+)"/.exec(await (await fetch(s.url)).text())![1]!;
    const r = await submitCheckout(s.url, 'pay');
    expect(r.status).toBe(303);
    expect(r.location).toBe(`https://shop.example/success?order=ord_1&checkout_session_id=${s.id}`);
    const session = await getSession(s.id);
    expect(session.status).toBe('complete');
    expect(session.completed_at).toMatch(/Z$/);
    expect((await getPayment(s.payment)).status).toBe('succeeded');
    await worker.drain();
    const events = parsedEvents(receiver.requests);
    expect(events.map((e) => e.type)).toEqual(['payment.created', 'payment.processing', 'payment.succeeded', 'checkout_session.completed']);
    expect(events[3]!.data.object).toEqual(session);
    expect(events[2]!.data.object).toEqual(await getPayment(s.payment));
    // Submitting Pay again (a double click) changes nothing and redirects again.
    const again = await submitCheckout(s.url, 'pay', { token });
    expect(again.status).toBe(303);
    await worker.drain();
    expect(receiver.requests).toHaveLength(4);
    // The page now shows the session paid, without buttons.
    const html = await (await fetch(s.url)).text();
    expect(html).toContain('Paid');
    expect(html).not.toContain('<form');
  });

  it('Fail fails the payment; the session stays open until it expires; Cancel returns to cancel_url without a change', async () => {
    const s = await createSession({ cancel_url: 'https://shop.example/cart' });
    const cancel = await submitCheckout(s.url, 'cancel');
    expect(cancel.status).toBe(303);
    expect(cancel.location).toBe('https://shop.example/cart');
    expect((await getSession(s.id)).status).toBe('open');
    const fail = await submitCheckout(s.url, 'fail');
    expect(fail.status).toBe(303);
    expect(fail.location).toBe(`/checkout/${s.id}`);
    expect((await getPayment(s.payment)).status).toBe('failed');
    expect((await getSession(s.id)).status).toBe('open');
    const failed = await (await fetch(s.url)).text();
    expect(failed).toContain('The payment failed');
    // A way back to the shop: its cancel_url.
    expect(failed).toContain('<a class="back" id="back" href="https://shop.example/cart">Return to ');
    await worker.drain();
    expect(parsedEvents(receiver.requests).map((e) => e.type)).toEqual(['payment.created', 'payment.processing', 'payment.failed']);
  });

  it("issue 22: without a cancel_url, Cancel and the way back after a failure go to the success_url's origin", async () => {
    const s = await createSession({ success_url: 'https://shop.example:8443/orders/7/thanks?x=1' });
    const cancel = await submitCheckout(s.url, 'cancel');
    expect(cancel.location).toBe('https://shop.example:8443/');
    await submitCheckout(s.url, 'fail');
    expect(await (await fetch(s.url)).text()).toContain('href="https://shop.example:8443/">Return to ');
  });

  it('issue 22: description is shown as what the customer pays for, carried in the objects and their events, and bounded', async () => {
    const s = await createSession({ description: 'Two mugs <b>, one teapot\nGift wrapped' });
    expect(s.description).toBe('Two mugs <b>, one teapot\nGift wrapped');
    expect((await getPayment(s.payment)).description).toBe('Two mugs <b>, one teapot\nGift wrapped');
    const html = await (await fetch(s.url)).text();
    expect(html).toContain('<p class="description" id="description">Two mugs &lt;b&gt;, one teapot\nGift wrapped</p>');
    await worker.drain();
    const created = parsedEvents(receiver.requests).find((e) => e.type === 'payment.created');
    expect(created!.data.object.description).toBe('Two mugs <b>, one teapot\nGift wrapped');
    for (const [description, status] of [
      ['x'.repeat(501), 400],
      ['bell\u0007', 400],
      [5, 400],
    ] as const) {
      const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/checkout_sessions', {
        amount: '1.00',
        asset_code: 'USDC.ETH',
        success_url: 'https://shop.example/ok',
        description,
      });
      expect(r.status, JSON.stringify(r.body)).toBe(status);
      expect(r.body.error.param).toBe('description');
    }
    const plain = await svc.api(p.keys.sandbox, 'POST', '/api/v1/payments', { amount: '1.00', asset_code: 'USDC.ETH' });
    expect(plain.body.description).toBeNull();
  });

  it('issue 22: success_url and cancel_url with control characters, spaces or a host that is not a host name are 400 naming the field', async () => {
    for (const [field, url] of [
      ['cancel_url', 'https://shop.example/cart\n'],
      ['cancel_url', 'https://shop.example/cart\r\nSet-Cookie: x=1'],
      ['success_url', 'https://shop.example;sandbox/ok'],
      ['success_url', 'https://shop example/ok'],
      ['success_url', `https://shop.example/${'a'.repeat(2100)}`],
    ] as const) {
      const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/checkout_sessions', {
        amount: '1.00',
        asset_code: 'USDC.ETH',
        success_url: 'https://shop.example/ok',
        [field]: url,
      });
      expect(r.status, url).toBe(400);
      expect(r.body.error.param).toBe(field);
    }
  });

  it('issue 22: a session stored before the checks with such URLs still answers: no 500, nothing copied into the CSP or the Location header', async () => {
    const s = await createSession({ cancel_url: 'https://shop.example/cart' });
    await svc.ctx.database.query('UPDATE checkout_sessions SET success_url = $1, cancel_url = $2 WHERE id = $3', [
      'https://shop.example;sandbox/ok',
      'https://shop.example/can\ncel',
      s.id,
    ]);
    const page = await fetch(s.url);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).not.toContain('sandbox');
    expect(page.headers.get('content-security-policy')).toContain("form-action 'self' https://shop.example;");
    const cancel = await submitCheckout(s.url, 'cancel');
    expect(cancel.status).toBe(303);
    expect(cancel.location).toBe('https://shop.example/cancel');
  });

  it("a POST without the page's CSRF token (or with another session's) is refused with 403 and changes nothing", async () => {
    const s = await createSession();
    const other = await createSession();
    const otherToken = /name="csrf_token" value="([^"]+)"/.exec(await (await fetch(other.url)).text())![1]!;
    for (const token of ['', 'forged', otherToken]) {
      const r = await submitCheckout(s.url, 'pay', { token });
      expect(r.status).toBe(403);
      expect(r.body).toContain('did not come from the checkout page');
    }
    const noBody = await fetch(`${s.url}/pay`, { method: 'POST' });
    expect(noBody.status).toBe(403);
    expect((await getSession(s.id)).status).toBe('open');
  });

  it('a live session shows its status without sandbox buttons, and cannot be paid from the page', async () => {
    const s = await createSession({}, p.keys.live);
    const html = await (await fetch(s.url)).text();
    expect(html).not.toContain('>Pay<');
    const token = /name="csrf_token"/.test(html);
    expect(token).toBe(false);
    const r = await fetch(`${s.url}/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `csrf_token=${svc.ctx.secrets.tag('checkout-csrf', s.id)}`,
      redirect: 'manual',
    });
    expect(r.status).toBe(403);
  });
});

describe('expiry by the worker', () => {
  it('an open session past expires_at is expired with its payment, exactly once; paying after expires_at is refused', async () => {
    const s = await createSession({ expires_in: 60 });
    const paid = await createSession({ expires_in: 60 });
    await submitCheckout(paid.url, 'pay');
    const reviewed = await createSession({ expires_in: 60 });
    await svc.api(p.keys.sandbox, 'POST', `/api/v1/sandbox/payments/${reviewed.payment}/simulate`, { status: 'under_review' });
    await worker.drain();
    receiver.requests.length = 0;

    clock.advance(59_000);
    expect(await expireDueSessions(svc.ctx.database, svc.ctx.checkout)).toBe(0);
    clock.advance(1_000);
    // Past expires_at, the page refuses payment even before the worker has run.
    const late = await submitCheckout(s.url, 'pay').catch(() => null);
    expect(late).toBeNull(); // the page shows no Pay form any more
    // Ours, plus the 60-second session the validation test left open.
    expect(await expireDueSessions(svc.ctx.database, svc.ctx.checkout)).toBe(3);
    expect(await expireDueSessions(svc.ctx.database, svc.ctx.checkout)).toBe(0);
    expect((await getSession(s.id)).status).toBe('expired');
    expect((await getPayment(s.payment)).status).toBe('expired');
    expect((await getSession(paid.id)).status).toBe('complete');
    expect((await getSession(reviewed.id)).status).toBe('expired');
    expect((await getPayment(reviewed.payment)).status).toBe('under_review'); // money may be moving: it carries on
    await worker.drain();
    const ours = new Set([s.id, s.payment, paid.id, paid.payment, reviewed.id, reviewed.payment]);
    const events = parsedEvents(receiver.requests)
      .map((e) => [e.type, e.data.object.id])
      .filter(([, id]) => ours.has(id!));
    expect(events.sort()).toEqual(
      [
        ['payment.expired', s.payment],
        ['checkout_session.expired', s.id],
        ['checkout_session.expired', reviewed.id],
      ].sort(),
    );
  });

  it('the expiry job (started beside workers) expires due sessions on its own, on its interval, until stopped', async () => {
    const s = await createSession({ expires_in: 60 });
    const job = svc.ctx.createExpiryJob();
    job.start();
    try {
      clock.advance(61_000);
      await until(async () => (await getSession(s.id)).status === 'expired', { message: 'the job to expire the session' });
      expect((await getPayment(s.payment)).status).toBe('expired');
    } finally {
      await job.stop();
    }
    const later = await createSession({ expires_in: 60 });
    clock.advance(61_000);
    await new Promise((r) => setTimeout(r, 400));
    expect((await getSession(later.id)).status).toBe('open'); // stopped: nothing runs any more
  });
});

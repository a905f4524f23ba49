import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { REQUIRED_LIVE_EVENT_TYPES, checkSignature } from '@payhooks/contract';
import { launchBrowser } from '../helpers/browser.ts';
import { issue, makeCa } from '../helpers/certificates.ts';
import { ManualClock, startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type Behaviour, type TestReceiver } from '../helpers/receiver.ts';
import { payment, publish } from '../helpers/publish.ts';
import { drainUntil, inviteAndAccept, internalCall, portalSignIn, type PortalClient } from '../helpers/portal.ts';
import { totpCode } from '../../src/accounts/two-factor.ts';
import { fanoutExchange } from '../helpers/rabbit.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';
import type { Scope } from '../../src/scope.ts';

/**
 * The Merchant Portal in a real Chromium (Debian's, through playwright-core) against a real
 * service, database and receivers. One browser for the file; PostgreSQL only (the JSON and
 * security rules run on both backends in portal-api.test.ts).
 */

let svc: TestService;
let a: CreatedPlatform;
let b: CreatedPlatform;
let worker: DeliveryWorker;
let receiver: TestReceiver;
let browser: Browser;
let context: BrowserContext;
let page: Page;
/** Answers per receiver path (`?name` query), so each test has its own behaviour. */
const behaviours = new Map<string, Behaviour>();
const dialogs: string[] = [];
const cspViolations: string[] = [];
const scopeA = (): Scope => ({ platformId: a.platform_id, environment: 'sandbox', actor: { type: 'operator' as const, id: 'test' } });

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true, retryScheduleMs: [1, 1] });
  [a, b] = [await svc.platform('Acme'), await svc.platform('Other Platform')];
  worker = svc.ctx.createWorker();
  receiver = await startReceiver((req) => behaviours.get(req.path) ?? { status: 200, body: 'ok' });
  browser = await launchBrowser();
  context = await browser.newContext({ timezoneId: 'America/New_York', locale: 'en-US' });
  page = await context.newPage();
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) cspViolations.push(m.text());
  });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await receiver?.close();
  await svc?.close();
});

async function signIn(p: Page, who: CreatedPlatform) {
  await p.goto(`${svc.url}/portal/`);
  await p.getByLabel('Email').fill(who.portal.email);
  await p.getByLabel('Password').fill(who.portal.password);
  await p.getByRole('button', { name: 'Sign in' }).click();
  await p.getByRole('link', { name: 'Endpoints', exact: true }).waitFor();
}

/** An endpoint of A (through the domain service) whose receiver path answers `behaviour`. */
async function endpointOfA(name: string, behaviour: Behaviour, events = ['*']) {
  behaviours.set(`/webhooks?${name}`, behaviour);
  return svc.ctx.endpoints.create(scopeA(), { url: `${receiver.url}?${name}`, enabled_events: events });
}

describe('Merchant Portal in Chromium', () => {
  it('sign-in: a wrong password is refused without saying which field was wrong; the right one opens Webhooks -> Endpoints', async () => {
    await page.goto(`${svc.url}/portal/`);
    await page.getByLabel('Email').fill(a.portal.email);
    await page.getByLabel('Password').fill('wrong password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expectText(page.getByRole('alert'), 'Incorrect email or password.');
    await expect(page.getByRole('link', { name: 'Webhooks' }).count()).resolves.toBe(0);

    await page.getByLabel('Password').fill(a.portal.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('link', { name: 'Webhooks', exact: true }).waitFor();
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Endpoints', exact: true }).click();
    await page.getByRole('heading', { name: 'Endpoints' }).waitFor();
    // The session cookie is httpOnly: the page's scripts can't read it.
    expect(await page.evaluate(() => (globalThis as any).document.cookie)).toBe('');
  });

  it('spec 4.1 rule 2: creating an endpoint shows its whsec_ secret once, with the live minimum pre-selected; a reload no longer shows it', async () => {
    await page.goto(`${svc.url}/portal/webhooks/endpoints`);
    await page.getByRole('link', { name: '+ Add endpoint' }).click();
    await page.getByLabel('Endpoint URL').fill(`${receiver.url}?created`);
    for (const t of REQUIRED_LIVE_EVENT_TYPES) expect(await page.getByRole('checkbox', { name: t, exact: true }).isChecked()).toBe(true);
    expect(await page.getByRole('checkbox', { name: 'payment.created', exact: true }).isChecked()).toBe(false);
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByText('you won’t see this again').waitFor();
    const secret = await page.getByRole('textbox', { name: 'Signing secret' }).inputValue();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9]{44}$/);
    await page.getByRole('button', { name: 'Copy', exact: true }).waitFor();
    const url = page.url();
    expect(url).toMatch(/\/portal\/webhooks\/endpoints\/we_/);

    await page.reload();
    await page.getByRole('heading', { name: `${receiver.url}?created` }).waitFor();
    const html = await page.content();
    expect(html).not.toContain('whsec_');
    expect(html).not.toContain(secret);
    // The list shows it with its status and subscribed types.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Endpoints', exact: true }).click();
    const row = page.locator('tr', { hasText: `${receiver.url}?created` });
    await expectText(row, 'Enabled');
    await expectText(row, 'checkout_session.completed');
  });

  it('edit, disable, enable, Send test event and delete (after confirming) from the endpoint page', async () => {
    const ep = await endpointOfA('manage', { status: 200, body: 'ok' }, ['payment.failed']);
    await page.goto(`${svc.url}/portal/webhooks/endpoints/${ep.id}`);
    await page.getByRole('button', { name: 'Edit' }).click();
    await page.getByLabel('Description').fill('Orders service');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Endpoint saved.').waitFor();
    expect((await svc.ctx.endpoints.get(scopeA(), ep.id)).description).toBe('Orders service');

    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByRole('button', { name: 'Enable' }).waitFor();
    expect((await svc.ctx.endpoints.get(scopeA(), ep.id)).status).toBe('disabled');
    await page.getByRole('button', { name: 'Enable' }).click();
    await page.getByRole('button', { name: 'Disable' }).waitFor();

    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.getByText('Test event sent').waitFor();
    const row = page.locator('tr[data-delivery-id]').first();
    await expectText(row, 'payment.succeeded');
    await drainUntil(svc.ctx, worker, scopeA(), ep.id, 'delivered');
    const sent = receiver.requests.find((r) => r.path === '/webhooks?manage');
    expect(JSON.parse(sent!.raw.toString()).data.object.metadata).toEqual({ test: 'true' });

    await page.getByRole('button', { name: 'Delete…' }).click();
    await page.getByRole('alertdialog').getByText('This can’t be undone.').waitFor();
    await page.getByRole('button', { name: 'Cancel' }).click();
    expect((await svc.ctx.endpoints.get(scopeA(), ep.id)).id).toBe(ep.id);
    await page.getByRole('button', { name: 'Delete…' }).click();
    await page.getByRole('button', { name: 'Delete endpoint' }).click();
    await page.getByRole('heading', { name: 'Endpoints' }).waitFor();
    await expect(svc.ctx.endpoints.get(scopeA(), ep.id)).rejects.toThrow(/No such webhook endpoint/);
  });

  it("a failing receiver's delivery shows every attempt with its status code and body; Replay after the receiver is fixed turns it delivered without a reload", async () => {
    const ep = await endpointOfA('failing', { status: 503, body: 'maintenance until 10:00' });
    const { event } = await publish(svc.ctx, a.merchant_id);
    await drainUntil(svc.ctx, worker, scopeA(), ep.id, 'exhausted');

    await page.goto(`${svc.url}/portal/webhooks/endpoints/${ep.id}`);
    const row = page.locator('tr', { hasText: event.id });
    await expectText(row, 'payment.succeeded');
    await expectText(row, 'Exhausted');
    await row.getByRole('link', { name: 'payment.succeeded' }).click();
    await page.getByRole('button', { name: 'Replay' }).waitFor();
    const attempts = page.locator('li.attempt');
    expect(await attempts.count()).toBe(3);
    for (const text of await attempts.allInnerTexts()) {
      expect(text).toContain('503');
      expect(text).toContain('maintenance until 10:00');
      expect(text).toContain('Automatic');
    }
    expect(await page.getByTestId('event-body').innerText()).toContain(`"id": "${event.id}"`);
    // Times are shown in the browser's zone with UTC in the title.
    expect(await page.locator('li.attempt time').first().getAttribute('title')).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);

    behaviours.set('/webhooks?failing', { status: 200, body: 'thanks' });
    await page.evaluate(() => ((globalThis as any).marker = 42));
    await page.getByRole('button', { name: 'Replay' }).click();
    await expectText(page.getByRole('status'), 'Replayed: your endpoint answered 200.');
    await expectText(page.locator('dl.facts'), 'Delivered');
    expect(await attempts.count()).toBe(4);
    await expectText(attempts.first(), 'Manual');
    await expectText(attempts.first(), 'thanks');
    expect(await page.evaluate(() => (globalThis as any).marker)).toBe(42); // no full reload
    expect(await page.getByRole('button', { name: 'Replay' }).count()).toBe(0);
    expect((await svc.ctx.deliveries.list(scopeA(), { limit: 1, endpointId: ep.id })).data[0]!.state).toBe('delivered');
  });

  it('Cancel delivery asks first; then the delivery is cancelled in place, gets no attempt, and the button goes', async () => {
    const ep = await endpointOfA('cancel', { status: 200 });
    await publish(svc.ctx, a.merchant_id);
    const d = (await svc.ctx.deliveries.list(scopeA(), { limit: 1, endpointId: ep.id })).data[0]!;
    await page.goto(`${svc.url}/portal/webhooks/deliveries/${d.id}`);
    const dialog = page.getByRole('alertdialog', { name: 'Cancel this delivery?' });
    await page.getByRole('button', { name: 'Cancel delivery…' }).click();
    await dialog.getByRole('button', { name: 'Keep it' }).click();
    await dialog.waitFor({ state: 'detached' });
    expect((await svc.ctx.deliveries.get(scopeA(), d.id)).state).toBe('pending');
    await page.getByRole('button', { name: 'Cancel delivery…' }).click();
    await dialog.getByRole('button', { name: 'Cancel delivery', exact: true }).click();
    await expectText(page.getByRole('status'), 'Cancelled: no more attempts will be made.');
    await expectText(page.getByTestId('cancel-reason'), 'Cancelled in the portal before it finished.');
    expect(await page.getByRole('button', { name: 'Cancel delivery…' }).count()).toBe(0);
    await worker.drain();
    expect(await svc.ctx.deliveries.get(scopeA(), d.id)).toMatchObject({ state: 'cancelled', attempt_count: 0 });
  });

  it('Resend on a delivered delivery adds a manual attempt and it stays delivered', async () => {
    const ep = await endpointOfA('resend', { status: 200, body: 'got it' });
    await publish(svc.ctx, a.merchant_id);
    await drainUntil(svc.ctx, worker, scopeA(), ep.id, 'delivered');
    const [d] = (await svc.ctx.deliveries.list(scopeA(), { limit: 1, endpointId: ep.id })).data;
    await page.goto(`${svc.url}/portal/webhooks/deliveries/${d!.id}`);
    await page.getByRole('button', { name: 'Resend' }).click();
    await expectText(page.getByRole('status'), 'Resent: your endpoint answered 200.');
    expect(await page.getByTestId('attempt-count').innerText()).toBe('2');
    await expectText(page.locator('li.attempt').first(), 'Manual');
    await expectText(page.locator('dl.facts'), 'Delivered');
    expect(receiver.requests.filter((r) => r.path === '/webhooks?resend')).toHaveLength(2);
  });

  it('Replay all failed since… recovers every failed delivery of the endpoint and reports the result', async () => {
    const ep = await endpointOfA('outage', { status: 500, body: 'outage' });
    for (let i = 0; i < 3; i++) await publish(svc.ctx, a.merchant_id);
    await drainUntil(svc.ctx, worker, scopeA(), ep.id, 'exhausted', 3);
    behaviours.set('/webhooks?outage', { status: 204 });
    await page.goto(`${svc.url}/portal/webhooks/endpoints/${ep.id}`);
    await expectText(page.locator('.card', { hasText: 'Last 24 hours' }), '9 attempts, 0 answered with a 2xx');
    // First a dry run: the count from the server, and nothing replayed until confirmed.
    await page.getByRole('button', { name: 'Replay all failed since…' }).click();
    const confirm = page.getByRole('alertdialog');
    await expectText(confirm, 'Replay 3 deliveries that failed since');
    await page.getByRole('button', { name: 'Cancel' }).click();
    expect(receiver.requests.filter((r) => r.path === '/webhooks?outage')).toHaveLength(9);
    await page.getByRole('button', { name: 'Replay all failed since…' }).click();
    await page.getByRole('button', { name: 'Replay 3', exact: true }).click();
    await page.locator('[data-bulk-status="finished"]').waitFor();
    await expectText(page.locator('[data-bulk-status="finished"]'), '3 of 3 replayed, 3 delivered, 0 failed');
    // The 24-hour card and the log refresh: every row is delivered now.
    await expectText(page.locator('.card', { hasText: 'Last 24 hours' }), '12 attempts, 3 answered with a 2xx');
    await page.getByLabel('State').selectOption('exhausted');
    await page.getByText('No deliveries match these filters.').waitFor();
    const states = (await svc.ctx.deliveries.list(scopeA(), { limit: 10, endpointId: ep.id })).data.map((d) => d.state);
    expect(states).toEqual(['delivered', 'delivered', 'delivered']);
  });

  it('Disable, Enable and Send test event refresh the 24-hour card without a reload', async () => {
    const ep = await endpointOfA('card', { status: 200, body: 'ok' });
    await page.goto(`${svc.url}/portal/webhooks/endpoints/${ep.id}`);
    const card = page.locator('.card', { hasText: 'Last 24 hours' });
    await expectText(card, '0 attempts');
    await page.evaluate(() => ((globalThis as any).marker = 'card'));
    // An attempt made behind the page's back shows after the next action, whichever it is.
    await publish(svc.ctx, a.merchant_id);
    await drainUntil(svc.ctx, worker, scopeA(), ep.id, 'delivered');
    await page.getByRole('button', { name: 'Disable' }).click();
    await expectText(card, '1 attempt, 1 answered with a 2xx');
    await page.getByRole('button', { name: 'Enable' }).click();
    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.getByText('Test event sent').waitFor();
    await drainUntil(svc.ctx, worker, scopeA(), ep.id, 'delivered', 2);
    await expectText(card, '2 attempts, 2 answered with a 2xx');
    expect(await page.evaluate(() => (globalThis as any).marker)).toBe('card'); // no full reload
  });

  it('a failing endpoint says since when and when auto-disable will act, in its list and on its page; a recovered one says so', async () => {
    const ep = await endpointOfA('health', { status: 200, body: 'ok' });
    const since = new Date(Date.now() - 3 * 3_600_000);
    // The state the health sweep leaves (endpoint-health.test.ts drives it there on the clock).
    await svc.ctx.database.query(
      `UPDATE webhook_endpoints SET failing_since = $2, health_state = 'failing', health_changed_at = $2, health_warned = 50,
         health_disables_at = $3 WHERE id = $1`,
      [ep.id, since, new Date(since.getTime() + 5 * 86_400_000)],
    );
    await page.goto(`${svc.url}/portal/webhooks/endpoints`);
    await page.locator('tr', { hasText: ep.url }).getByTestId('health-badge').getByText('Failing').waitFor();
    await page.goto(`${svc.url}/portal/webhooks/endpoints/${ep.id}`);
    const notice = page.getByTestId('health-failing');
    await expectText(notice, 'Failing since');
    await expectText(notice, 'it will be disabled automatically');
    await expectText(notice, '(50% of the way there)');
    await svc.ctx.database.query(
      `UPDATE webhook_endpoints SET failing_since = NULL, health_state = 'recovered', health_changed_at = now(), health_warned = 0,
         health_disables_at = NULL WHERE id = $1`,
      [ep.id],
    );
    await page.reload();
    await expectText(page.getByTestId('health-recovered'), 'Recovered');
    expect(await page.getByTestId('health-failing').count()).toBe(0);
  });

  it('Event types lists every type with when it is sent, its example and schema; Send example delivers a real payment.failed to the chosen endpoint', async () => {
    const ep = await endpointOfA('examples', { status: 200, body: 'ok' }, ['payment.succeeded']);
    await page.goto(`${svc.url}/portal/webhooks/event-types`);
    const failed = page.locator('article[data-type="payment.failed"]');
    await expectText(failed, 'Sent when: The payment moved to failed.');
    expect(await page.locator('article.event-type').count()).toBe(13);
    await failed.locator('summary', { hasText: 'Example' }).click();
    await expectText(failed.locator('pre').first(), '"type": "payment.failed"');
    await page.getByLabel('Send examples to').selectOption(ep.id);
    await failed.getByRole('button', { name: 'Send example to this endpoint' }).click();
    await expectText(page.getByTestId('example-sent'), 'Sent a payment.failed example');
    await drainUntil(svc.ctx, worker, scopeA(), ep.id, 'delivered');
    const delivered = (await svc.ctx.deliveries.list(scopeA(), { limit: 5, endpointId: ep.id })).data;
    expect(delivered).toHaveLength(1);
    const event = await svc.ctx.events.getBody(scopeA(), delivered[0]!.event_id);
    expect(JSON.parse(event)).toMatchObject({ type: 'payment.failed', data: { object: { status: 'failed', metadata: { test: 'true' } } } });
    // Operational types can't be sent as an example: no button.
    expect(await page.locator('article[data-type="webhook_endpoint.failing"]').getByRole('button').count()).toBe(0);
  });

  it("charts: an endpoint's attempts by outcome and answer times, each with its table; the overview ranks every endpoint; the period switches to days", async () => {
    const up = await endpointOfA('charts-up', { status: 200, body: 'ok' }, ['payment.succeeded']);
    const down = await endpointOfA('charts-down', { status: 503, body: 'maintenance' }, ['payment.succeeded']);
    for (let i = 0; i < 3; i++) await publish(svc.ctx, a.merchant_id);
    await drainUntil(svc.ctx, worker, scopeA(), up.id, 'delivered', 3);
    await drainUntil(svc.ctx, worker, scopeA(), down.id, 'exhausted', 3);
    const api = (await svc.api(a.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${down.id}/stats`)).body;
    expect(api.totals.failures.http_5xx).toBeGreaterThanOrEqual(3);

    await page.goto(`${svc.url}/portal/webhooks/endpoints/${down.id}`);
    const panel = page.getByTestId('stats-panel');
    await expectText(panel.getByTestId('stats-summary'), `${api.totals.attempts} attempts, 0% succeeded`);
    // Drawn by the chart library: bars for the 5xx answers, a legend naming them, lines of answer times.
    await page.getByTestId('attempts-chart').locator('.recharts-bar-rectangle path').first().waitFor({ state: 'attached' });
    await expectText(page.getByTestId('attempts-chart').locator('.recharts-legend-wrapper'), '5xx');
    await page.getByTestId('latency-chart').locator('.recharts-line path').first().waitFor({ state: 'attached' });
    // The table behind the chart holds the API's numbers, bucket by bucket.
    await page.getByText('Table of attempts').click();
    const table = page.getByTestId('attempts-table');
    expect(await table.locator('tbody tr').count()).toBe(24);
    const last = api.data.at(-1);
    const cells = await table.locator('tbody tr').last().locator('td').allInnerTexts();
    expect(cells.slice(0, 2)).toEqual([String(last.attempts), String(last.successes)]);
    expect(cells[2]).toBe(String(last.failures.http_5xx));
    await page.getByText('Table of answer times').click();
    const p50 = await page.getByTestId('latency-table').locator('tbody tr').last().locator('td').first().innerText();
    expect(p50).toBe(`${last.latency_ms.p50} ms`);
    // By day: one row per day of the last 30.
    await panel.getByLabel('Period').selectOption('30d');
    await page.waitForFunction(
      () => (globalThis as any).document.querySelectorAll('[data-testid="attempts-table"] tbody tr').length === 30,
    );

    // The overview: every endpoint, the failing one first, linked to its page.
    await page.goto(`${svc.url}/portal/webhooks`);
    const byEndpoint = page.getByTestId('endpoint-health-table');
    await byEndpoint.locator(`tr[data-endpoint-id="${down.id}"]`).waitFor();
    await expectText(byEndpoint.locator(`tr[data-endpoint-id="${down.id}"]`), '5xx');
    await expectText(byEndpoint.locator(`tr[data-endpoint-id="${up.id}"]`), '100%');
    const order = await byEndpoint.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-endpoint-id')));
    expect(order.indexOf(down.id)).toBeLessThan(order.indexOf(up.id));
    await byEndpoint.getByRole('link', { name: down.url }).click();
    await page.getByTestId('stats-panel').waitFor();
    expect(cspViolations).toEqual([]);
  });

  it('a read of the log that answers after a newer one is not shown: the rows are those of the filter chosen last', async () => {
    const ep = await endpointOfA('overtaken', { status: 200 });
    await publish(svc.ctx, a.merchant_id);
    const failed = await publish(svc.ctx, a.merchant_id, {
      type: 'payment.failed',
      object: { id: 'pay_overtaken', object: 'payment', status: 'failed', amount: '2.00', asset_code: 'USDC.ETH', metadata: {} },
    });
    await page.goto(`${svc.url}/portal/webhooks/endpoints/${ep.id}`);
    const rows = page.locator('tr[data-delivery-id]');
    const count = (n: number) =>
      page.waitForFunction((k) => (globalThis as any).document.querySelectorAll('tr[data-delivery-id]').length === k, n);
    await count(2);
    // The next unfiltered read of this log is held (a slow answer) until the filtered one is shown.
    const unfiltered = (url: URL) =>
      url.pathname === '/portal/api/deliveries' && url.searchParams.get('endpoint_id') === ep.id && !url.searchParams.has('type');
    let release = () => {};
    const held = new Promise<void>((r) => (release = r));
    await page.route(unfiltered, async (route) => {
      await held;
      await route.continue();
    });
    try {
      const stale = page.waitForResponse((r) => unfiltered(new URL(r.url())));
      await page.locator('section.log').getByRole('button', { name: 'Refresh' }).click();
      await page.getByLabel('Event type').selectOption('payment.failed');
      await count(1);
      release();
      await (await stale).finished();
      // Two frames for the page to act on the late answer (it would redraw the two rows).
      await page.evaluate(
        () => new Promise((r) => (globalThis as any).requestAnimationFrame(() => (globalThis as any).requestAnimationFrame(r))),
      );
      expect(await rows.count()).toBe(1);
      expect((await rows.allInnerTexts()).join()).toContain(failed.event.id);
    } finally {
      release();
      await page.unroute(unfiltered);
    }
  });

  it('the log filters by event type and time range and finds a delivery by event id or payment id; a wrong id says what to type', async () => {
    const ep = await endpointOfA('filters', { status: 200 });
    const paid = await publish(svc.ctx, a.merchant_id, {
      object: { id: 'pay_findme', object: 'payment', status: 'succeeded', amount: '2.00', asset_code: 'USDC.ETH', metadata: {} },
    });
    const failed = await publish(svc.ctx, a.merchant_id, {
      type: 'payment.failed',
      object: { id: 'pay_other', object: 'payment', status: 'failed', amount: '2.00', asset_code: 'USDC.ETH', metadata: {} },
    });
    await page.goto(`${svc.url}/portal/webhooks/endpoints/${ep.id}`);
    const rows = page.locator('tr[data-delivery-id]');
    const shown = async () => (await rows.allInnerTexts()).join('\n');
    await expectText(page.locator('section.log'), failed.event.id);
    expect(await rows.count()).toBe(2);

    await page.getByLabel('Event type').selectOption('payment.failed');
    await page.waitForFunction(() => (globalThis as any).document.querySelectorAll('tr[data-delivery-id]').length === 1);
    expect(await shown()).toContain(failed.event.id);
    await page.getByLabel('Event type').selectOption('');

    // A range that ends before the events were published shows none; one around them, both.
    await page.getByLabel('Until').fill('2020-01-01T00:00');
    await page.getByText('No deliveries match these filters.').waitFor();
    await page.getByLabel('Until').fill('');
    await page.getByLabel('From').fill('2020-01-01T00:00');
    await page.waitForFunction(() => (globalThis as any).document.querySelectorAll('tr[data-delivery-id]').length === 2);

    const search = page.getByLabel('Find by event, payment or checkout session id');
    await search.fill('pay_findme');
    await page.getByRole('button', { name: 'Find' }).click();
    await page.waitForFunction(() => (globalThis as any).document.querySelectorAll('tr[data-delivery-id]').length === 1);
    expect(await shown()).toContain(paid.event.id);
    await search.fill(failed.event.id);
    await page.getByRole('button', { name: 'Find' }).click();
    await page.waitForFunction(
      (id) =>
        [...(globalThis as any).document.querySelectorAll('tr[data-delivery-id]')]
          .map((r: any) => r.innerText)
          .join()
          .includes(id),
      failed.event.id,
    );
    expect(await rows.count()).toBe(1);
    await search.fill('order-42');
    await page.getByRole('button', { name: 'Find' }).click();
    await expectText(page.getByRole('alert'), 'Search by an event id (evt_…), a payment id (pay_…) or a checkout session id (cs_…).');
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await page.waitForFunction(() => (globalThis as any).document.querySelectorAll('tr[data-delivery-id]').length === 2);
  });

  it("a delivery's attempts show the request headers that were sent, the signature shortened", async () => {
    const ep = await endpointOfA('headers', { status: 200 });
    const { event } = await publish(svc.ctx, a.merchant_id);
    await drainUntil(svc.ctx, worker, scopeA(), ep.id, 'delivered');
    const [d] = (await svc.ctx.deliveries.list(scopeA(), { limit: 1, endpointId: ep.id })).data;
    const sent = receiver.requests.find((r) => r.path === '/webhooks?headers' && r.headers['service-event-id'] === event.id)!;
    const signature = String(sent.headers['service-signature']);
    const hex = /v1=([0-9a-f]{64})/.exec(signature)![1]!;
    await page.goto(`${svc.url}/portal/webhooks/deliveries/${d!.id}`);
    await page.getByText('Request headers').click();
    const headers = page.locator('[data-header]');
    await expectText(headers.filter({ hasText: 'Service-Event-Id' }), event.id);
    await expectText(headers.filter({ hasText: 'Content-Type' }), 'application/json');
    await expectText(headers.filter({ hasText: 'User-Agent' }), String(sent.headers['user-agent']));
    const shown = await headers.filter({ hasText: 'Service-Signature' }).locator('dd').innerText();
    expect(shown).toBe(signature.replace(hex, `${hex.slice(0, 8)}…${hex.slice(-6)}`));
    expect(await headers.filter({ hasText: 'Service-Signature' }).locator('dd').getAttribute('title')).toBe(signature);
  });

  it('at 1280 px event types never break mid-word and ids are cut with an ellipsis beside a copy button; on a phone each row names its endpoint and wide tables say they scroll', async () => {
    const wide = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await wide.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: svc.url });
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    try {
      const ep = await endpointOfA(`layout-${'x'.repeat(60)}`, { status: 200 }, ['checkout_session.completed', 'payment.succeeded']);
      const { event } = await publish(svc.ctx, a.merchant_id);
      await drainUntil(svc.ctx, worker, scopeA(), ep.id, 'delivered');

      const p = await wide.newPage();
      await signIn(p, a);
      await p.goto(`${svc.url}/portal/webhooks`);
      const row = p.locator('tr[data-delivery-id]', { hasText: event.id }).filter({ hasText: 'layout-' });
      const link = row.locator('a.event-type');
      await link.waitFor();
      // One line: as tall as one line of its own text.
      const { height, lineHeight } = await link.evaluate((el: any) => ({
        height: el.getBoundingClientRect().height,
        lineHeight: Number.parseFloat((globalThis as any).getComputedStyle(el).lineHeight),
      }));
      expect(height).toBeLessThan(lineHeight * 1.5);
      const id = row.locator('.id-text');
      expect(await id.evaluate((el: any) => (globalThis as any).getComputedStyle(el).textOverflow)).toBe('ellipsis');
      expect(await id.getAttribute('title')).toBe(event.id);
      await row.getByRole('button', { name: `Copy event id ${event.id}` }).click();
      expect(await p.evaluate(() => (globalThis as any).navigator.clipboard.readText())).toBe(event.id);
      await p.goto(`${svc.url}/portal/webhooks/endpoints`);
      await p.locator('tr[data-endpoint-id]').first().waitFor();
      expect(await p.getByTestId('scroll-hint').count()).toBe(0);

      const m = await phone.newPage();
      await signIn(m, a);
      await m.goto(`${svc.url}/portal/webhooks`);
      const mrow = m.locator('tr[data-delivery-id]', { hasText: event.id }).filter({ hasText: 'layout-' });
      await expectText(mrow.getByTestId('row-endpoint'), ep.url);
      expect(await mrow.getByTestId('row-endpoint').isVisible()).toBe(true);
      await m.goto(`${svc.url}/portal/webhooks/endpoints`);
      await m.getByTestId('scroll-hint').waitFor();
      // Scrolled to the end, the hint goes.
      await m.locator('.table-wrap').evaluate((el: any) => {
        el.scrollLeft = el.scrollWidth;
      });
      await m.getByTestId('scroll-hint').waitFor({ state: 'detached' });
    } finally {
      await wide.close();
      await phone.close();
    }
  });

  it('every portal page loads without a 404 (the favicon included), and the shop name set in Settings is what the checkout page shows', async () => {
    const failures: string[] = [];
    const onResponse = (r: import('playwright-core').Response) => {
      if (r.status() >= 400) failures.push(`${r.status()} ${r.url()}`);
    };
    page.on('response', onResponse);
    try {
      await page.goto(`${svc.url}/portal/webhooks`);
      await page.getByRole('heading', { name: 'Deliveries' }).waitFor();
      const icon = await page.locator('link[rel="icon"]').getAttribute('href');
      const fetched = await page.evaluate(async (href) => (await fetch(href!)).status, icon);
      expect(fetched).toBe(200);
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Settings' }).click();
      await page.getByLabel('Shop name shown to customers').fill('Acme Coffee Roasters');
      await page.getByRole('button', { name: 'Save' }).click();
      await expectText(page.getByRole('status'), 'the checkout page shows “Acme Coffee Roasters”');
    } finally {
      page.off('response', onResponse);
    }
    expect(failures).toEqual([]);
    const session = await svc.ctx.database.db.transaction((tx) =>
      svc.ctx.checkout.create(
        scopeA(),
        { amount: '4.50', asset_code: 'USDC.ETH', metadata: {}, success_url: 'https://shop.example/ok' },
        tx,
      ),
    );
    const checkout = await context.newPage();
    try {
      await checkout.goto(session.url);
      await checkout.getByText('Acme Coffee Roasters').first().waitFor();
    } finally {
      await checkout.close();
    }
  });

  it('a response body of <img src=x onerror=alert(1)> is shown as text and runs nothing', async () => {
    const payload = '<img src=x onerror=alert(1)>';
    const ep = await endpointOfA('xss', { status: 400, body: payload, headers: { 'content-type': 'text/html' } });
    await svc.ctx.endpoints.update(scopeA(), ep.id, { description: '<script>alert(2)</script>' });
    await publish(svc.ctx, a.merchant_id, {
      object: {
        id: 'pay_xss',
        object: 'payment',
        status: 'succeeded',
        amount: '1.00',
        asset_code: 'USDC.ETH',
        metadata: { note: '<img src=y onerror=alert(3)>' },
      },
    });
    await drainUntil(svc.ctx, worker, scopeA(), ep.id, 'exhausted');
    const [d] = (await svc.ctx.deliveries.list(scopeA(), { limit: 1, endpointId: ep.id })).data;
    await page.goto(`${svc.url}/portal/webhooks/deliveries/${d!.id}`);
    await page.locator('pre.response-body').first().waitFor();
    expect(await page.locator('pre.response-body').first().innerText()).toBe(payload);
    expect(await page.getByTestId('event-body').innerText()).toContain('<img src=y onerror=alert(3)>');
    await page.goto(`${svc.url}/portal/webhooks/endpoints/${ep.id}`);
    await page.getByText('<script>alert(2)</script>').waitFor();
    expect(await page.locator('img').count()).toBe(0);
    expect(await page.locator('script:not([src])').count()).toBe(0);
    expect(dialogs).toEqual([]);
    expect(cspViolations).toEqual([]);
  });

  it("another Platform's delivery is not reachable through any portal route", async () => {
    const ep = await endpointOfA('private', { status: 500, body: 'secret business' });
    const { event } = await publish(svc.ctx, a.merchant_id);
    await drainUntil(svc.ctx, worker, scopeA(), ep.id, 'exhausted');
    const [d] = (await svc.ctx.deliveries.list(scopeA(), { limit: 1, endpointId: ep.id })).data;

    const other = await browser.newContext();
    try {
      const p = await other.newPage();
      await signIn(p, b);
      await p.goto(`${svc.url}/portal/webhooks/deliveries/${d!.id}`);
      await p.getByRole('heading', { name: 'Delivery not found' }).waitFor();
      await p.goto(`${svc.url}/portal/webhooks/endpoints/${ep.id}`);
      await p.getByRole('heading', { name: 'Endpoint not found' }).waitFor();
      await p.goto(`${svc.url}/portal/webhooks/events/${event.id}`);
      await p.getByRole('heading', { name: 'Event not found' }).waitFor();
      // Every API route, called from B's signed-in page with its CSRF token.
      const csrf = await p.evaluate(async () => ((await (await fetch('/portal/api/session')).json()) as { csrf_token: string }).csrf_token);
      const results = await p.evaluate(
        async ({ csrf, d, ep, ev }) => {
          const calls: Array<[string, string]> = [
            ['GET', `/portal/api/deliveries/${d}`],
            ['POST', `/portal/api/deliveries/${d}/replay`],
            ['POST', `/portal/api/deliveries/${d}/resend`],
            ['GET', `/portal/api/endpoints/${ep}`],
            ['POST', `/portal/api/endpoints/${ep}/bulk_replays`],
            ['GET', `/portal/api/events/${ev}`],
          ];
          const out: Array<[string, number]> = [];
          for (const [method, path] of calls) {
            const res = await fetch(path, {
              method,
              headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
              body: method === 'POST' ? JSON.stringify(path.endsWith('bulk_replays') ? { since: '2020-01-01T00:00:00Z' } : {}) : undefined,
            });
            out.push([path, res.status]);
          }
          const list = await (await fetch(`/portal/api/deliveries?endpoint_id=${ep}`)).text();
          return { out, list };
        },
        { csrf, d: d!.id, ep: ep.id, ev: event.id },
      );
      for (const [path, status] of results.out) expect([path, status]).toEqual([path, 404]);
      expect(results.list).not.toContain(d!.id);
      expect(await p.content()).not.toContain('secret business');
    } finally {
      await other.close();
    }
    expect((await svc.ctx.deliveries.get(scopeA(), d!.id)).attempt_count).toBe(3);
  });

  it('a mutation without the CSRF token, or from a page of another origin, is refused', async () => {
    await page.goto(`${svc.url}/portal/webhooks/endpoints`);
    const noToken = await page.evaluate(async () => {
      const res = await fetch('/portal/api/endpoints', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ url: 'https://no-token.example.com/h', enabled_events: ['*'] }),
      });
      return { status: res.status, body: (await res.json()) as { error: { code: string } } };
    });
    expect(noToken.status).toBe(403);
    expect(noToken.body.error.code).toBe('csrf_token_invalid');

    // An attacker's page on another origin (same host, other port: same site, so the Lax
    // cookie goes along) posts to the portal: the Origin check refuses it.
    let hits = 0;
    const evil: Server = createServer((_req, res) => {
      hits++;
      res
        .writeHead(200, { 'content-type': 'text/html' })
        .end(
          `<!doctype html><form id="f" method="POST" action="${svc.url}/portal/api/endpoints" enctype="text/plain"><input name='{"url":"https://evil.example.com/h","enabled_events":["*"],"x":"' value='"}'></form><script>document.getElementById('f').submit()</script>`,
        );
    });
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r));
    try {
      const attacker = `http://127.0.0.1:${(evil.address() as AddressInfo).port}/`;
      const responses: number[] = [];
      const onResponse = (r: import('playwright-core').Response) => {
        if (r.url().endsWith('/portal/api/endpoints') && r.request().method() === 'POST') responses.push(r.status());
      };
      page.on('response', onResponse);
      await page.goto(attacker);
      await page.waitForURL(`${svc.url}/portal/api/endpoints`);
      page.off('response', onResponse);
      expect(hits).toBe(1);
      expect(responses).toEqual([403]);
      expect(await page.content()).toContain('cross_origin_request');
    } finally {
      await new Promise((r) => evil.close(r));
    }
    const urls = (await svc.ctx.endpoints.list(scopeA(), { limit: 100 })).data.map((e) => e.url);
    expect(urls).not.toContain('https://no-token.example.com/h');
    expect(urls).not.toContain('https://evil.example.com/h');
  });

  it('ed25519: turned on under Edit, the endpoint page lists the public key (whpk_ and kid, copyable) as the API does; Roll signing key lists both keys until the old one expires', async () => {
    const ep = await endpointOfA('ed25519', { status: 200 });
    await page.goto(`${svc.url}/portal/webhooks/endpoints/${ep.id}`);
    expect(await page.getByRole('region', { name: 'Public keys' }).count()).toBe(0);
    await page.getByRole('button', { name: 'Edit' }).click();
    await page.getByLabel('Also sign with ed25519').check();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Endpoint saved.').waitFor();
    const [key] = (await svc.ctx.endpoints.get(scopeA(), ep.id)).public_keys;
    const keys = page.getByRole('region', { name: 'Public keys' });
    await expectText(keys.locator(`tr[data-kid="${key!.kid}"]`), key!.public_key);
    await keys.getByRole('button', { name: `Copy public key ${key!.public_key}` }).waitFor();
    await keys.getByRole('button', { name: `Copy kid ${key!.kid}` }).waitFor();

    await page.getByRole('button', { name: 'Roll signing key…' }).click();
    await page.getByLabel('Old key expires').selectOption({ label: 'In 1 hour' });
    await page.getByRole('button', { name: 'Roll signing key', exact: true }).click();
    await expectText(page.getByRole('status'), 'Signing key rolled');
    const rolled = (await svc.ctx.endpoints.get(scopeA(), ep.id)).public_keys;
    expect(rolled.map((k) => k.kid)).toEqual([expect.any(String), key!.kid]);
    expect(await keys.locator('tr[data-kid]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-kid')))).toEqual(
      rolled.map((k) => k.kid),
    );
  });

  it("Roll secret shows the new whsec_ secret once and the previous one's expiry; deliveries verify with both secrets until then", async () => {
    const ep = await endpointOfA('rolled', { status: 200 });
    await page.goto(`${svc.url}/portal/webhooks/endpoints/${ep.id}`);
    await page.getByRole('button', { name: 'Roll secret…' }).click();
    await page.getByLabel('Old secret expires').selectOption({ label: 'In 1 hour' });
    await page.getByRole('button', { name: 'Roll secret', exact: true }).click();
    await expectText(page.getByRole('status'), 'Secret rolled');
    const fresh = await page.getByRole('textbox', { name: 'Signing secret' }).inputValue();
    expect(fresh).toMatch(/^whsec_[A-Za-z0-9]{44}$/);
    expect(fresh).not.toBe(ep.secret);
    await page.getByTestId('previous-secret').waitFor();

    const { event } = await publish(svc.ctx, a.merchant_id);
    await drainUntil(svc.ctx, worker, scopeA(), ep.id, 'delivered');
    const req = receiver.requests.find((r) => r.path === '/webhooks?rolled' && r.headers['service-event-id'] === event.id)!;
    const header = String(req.headers['service-signature']);
    for (const secret of [fresh, ep.secret]) {
      expect(
        checkSignature({ header, rawBody: req.raw, secrets: [secret], nowSeconds: Math.floor(Date.now() / 1000) }),
        secret === fresh ? 'new' : 'old',
      ).toMatchObject({ ok: true });
    }
    await page.reload();
    await page.getByTestId('previous-secret').waitFor();
    expect(await page.getByRole('textbox', { name: 'Signing secret' }).count()).toBe(0);
    expect(await page.content()).not.toContain(fresh);
  });

  it("a deleted endpoint's unfinished delivery shows Cancelled with its reason, and the state filter finds it", async () => {
    const ep = await endpointOfA('gone', { status: 200 });
    const { event } = await publish(svc.ctx, a.merchant_id);
    await svc.ctx.endpoints.delete(scopeA(), ep.id);
    const [d] = (await svc.ctx.deliveries.list(scopeA(), { limit: 1, endpointId: ep.id })).data;
    expect(d!.state).toBe('cancelled');
    await page.goto(`${svc.url}/portal/webhooks/deliveries/${d!.id}`);
    await expectText(page.locator('dl.facts'), 'Cancelled');
    await expectText(page.getByTestId('cancel-reason'), 'The endpoint was deleted before this delivery finished.');
    await page.goto(`${svc.url}/portal/webhooks/events/${event.id}`);
    await page.getByRole('combobox').first().selectOption({ label: 'Cancelled' });
    await expectText(page.locator('tr', { hasText: 'Cancelled' }), 'payment.succeeded');
  });

  it('issue 25: the edit form turns per-object ordering on, and a delivery held back by it links the one it waits for', async () => {
    const ep = await endpointOfA('ordered', { status: 503, body: 'down' }, ['payment.processing', 'payment.succeeded']);
    await page.goto(`${svc.url}/portal/webhooks/endpoints/${ep.id}`);
    await page.getByRole('button', { name: 'Edit' }).click();
    await page.getByLabel("Deliver each object's events in order").check();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Endpoint saved.').waitFor();
    await page.getByTestId('delivery-order').waitFor();
    expect((await svc.ctx.endpoints.get(scopeA(), ep.id)).delivery_order).toBe('per_object');
    const first = await publish(svc.ctx, a.merchant_id, {
      type: 'payment.processing',
      object: payment({ id: 'pay_portal_ordered', status: 'processing' }),
    });
    const second = await publish(svc.ctx, a.merchant_id, { object: payment({ id: 'pay_portal_ordered' }) });
    const list = (await svc.ctx.deliveries.list(scopeA(), { limit: 10, endpointId: ep.id })).data;
    const blocking = list.find((d) => d.event_id === first.event.id)!;
    const held = list.find((d) => d.event_id === second.event.id)!;
    expect(held.waiting_for?.delivery_id).toBe(blocking.id);
    await page.goto(`${svc.url}/portal/webhooks/deliveries/${held.id}`);
    await expectText(page.getByTestId('waiting-for'), blocking.id);
    await page.getByTestId('waiting-for').getByRole('link').click();
    await page.waitForURL(`**/webhooks/deliveries/${blocking.id}`);
  });

  it('issue 36: the edit form turns the Standard Webhooks headers on and sets custom headers; a refused header shows why; the delivery page lists both as sent', async () => {
    const ep = await endpointOfA('sw-custom', { status: 200 });
    await page.goto(`${svc.url}/portal/webhooks/endpoints/${ep.id}`);
    await page.getByRole('button', { name: 'Edit' }).click();
    await page.getByLabel('Also send Standard Webhooks headers').check();
    await page.getByLabel('Custom headers').fill('X-Shop: eu-1\nAuthorization: Basic dXNlcjpwYXNz');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Endpoint saved.').waitFor();
    await page.getByTestId('standard-webhooks').waitFor();
    await expectText(page.getByTestId('custom-headers'), 'X-Shop, Authorization');
    expect(await svc.ctx.endpoints.get(scopeA(), ep.id)).toMatchObject({
      standard_webhooks: true,
      headers: { 'X-Shop': 'eu-1', Authorization: 'Basic dXNlcjpwYXNz' },
    });

    // The form shows what it holds, and the server's reason for a header it refuses.
    await page.getByRole('button', { name: 'Edit' }).click();
    expect(await page.getByLabel('Custom headers').inputValue()).toBe('X-Shop: eu-1\nAuthorization: Basic dXNlcjpwYXNz');
    await page.getByLabel('Custom headers').fill('Host: evil.example');
    await page.getByRole('button', { name: 'Save' }).click();
    await expectText(page.getByRole('alert'), "Header 'Host' is set by payhooks or by HTTP itself");
    await page.getByLabel('Custom headers').fill('not a header line');
    await page.getByRole('button', { name: 'Save' }).click();
    await expectText(page.getByRole('alert'), 'Line 1 of the headers is not "Name: value".');
    await page.getByRole('button', { name: 'Cancel' }).click();

    const { event } = await publish(svc.ctx, a.merchant_id);
    await drainUntil(svc.ctx, worker, scopeA(), ep.id, 'delivered');
    const sent = receiver.requests.find((r) => r.path === '/webhooks?sw-custom' && r.headers['service-event-id'] === event.id)!;
    expect(sent.headers).toMatchObject({ 'x-shop': 'eu-1', 'webhook-id': event.id });
    const [d] = (await svc.ctx.deliveries.list(scopeA(), { limit: 1, endpointId: ep.id })).data;
    await page.goto(`${svc.url}/portal/webhooks/deliveries/${d!.id}`);
    await page.getByText('Request headers').click();
    const headers = page.locator('[data-header]');
    await expectText(headers.filter({ hasText: 'webhook-id' }), event.id);
    await expectText(headers.filter({ hasText: 'webhook-timestamp' }), String(sent.headers['webhook-timestamp']));
    await expectText(headers.filter({ hasText: 'X-Shop' }), 'eu-1');
    const signature = String(sent.headers['webhook-signature']);
    const b64 = signature.slice('v1,'.length);
    const cell = page.locator('[data-header="webhook-signature"] dd');
    expect(await cell.innerText()).toBe(`v1,${b64.slice(0, 8)}…${b64.slice(-6)}`);
    expect(await cell.getAttribute('title')).toBe(signature);
  });

  it('the Add form sets the cap on requests per second (and leaving it empty sets none); Edit shows and clears it', async () => {
    await page.goto(`${svc.url}/portal/webhooks/endpoints`);
    await page.getByRole('link', { name: '+ Add endpoint' }).click();
    await page.getByLabel('Endpoint URL').fill(`${receiver.url}?capped`);
    await page.getByLabel('Most requests per second').fill('7');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await expectText(page.getByTestId('rate-cap'), 'At most 7 requests a second');
    const id = new URL(page.url()).pathname.split('/').pop()!;
    expect((await svc.ctx.endpoints.get(scopeA(), id)).max_requests_per_second).toBe(7);
    await page.getByRole('button', { name: 'Edit' }).click();
    const field = page.getByLabel('Most requests per second');
    expect(await field.inputValue()).toBe('7');
    await field.fill('');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForFunction(() => !(globalThis as any).document.querySelector('[data-testid="rate-cap"]'));
    expect((await svc.ctx.endpoints.get(scopeA(), id)).max_requests_per_second).toBeNull();
    // Without a cap typed in, the endpoint is created with none.
    await page.goto(`${svc.url}/portal/webhooks/endpoints/new`);
    await page.getByLabel('Endpoint URL').fill(`${receiver.url}?uncapped`);
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByRole('button', { name: 'Edit' }).waitFor();
    const other = new URL(page.url()).pathname.split('/').pop()!;
    expect((await svc.ctx.endpoints.get(scopeA(), other)).max_requests_per_second).toBeNull();
  });

  it('the Add form sets Basic authentication to the receiver: sent with deliveries, shown as [redacted] in the log; Edit keeps it, then removes it', async () => {
    await page.goto(`${svc.url}/portal/webhooks/endpoints/new`);
    await page.getByLabel('Endpoint URL').fill(`${receiver.url}?basic`);
    await page.getByLabel('Authenticate to your receiver').selectOption('basic');
    await page.getByLabel('Username').fill('gateway-user');
    await page.getByLabel('Password', { exact: true }).fill('s3cret-typed-once');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await expectText(page.getByTestId('receiver-authentication'), 'Basic, as gateway-user');
    const id = new URL(page.url()).pathname.split('/').pop()!;
    expect((await svc.ctx.endpoints.get(scopeA(), id)).authentication).toEqual({ type: 'basic', username: 'gateway-user' });
    expect(await page.content()).not.toContain('s3cret-typed-once');
    const { event } = await publish(svc.ctx, a.merchant_id);
    await drainUntil(svc.ctx, worker, scopeA(), id, 'delivered');
    const sent = receiver.requests.find((r) => r.path === '/webhooks?basic' && r.headers['service-event-id'] === event.id)!;
    expect(sent.headers.authorization).toBe(`Basic ${Buffer.from('gateway-user:s3cret-typed-once').toString('base64')}`);
    const [d] = (await svc.ctx.deliveries.list(scopeA(), { limit: 1, endpointId: id })).data;
    await page.goto(`${svc.url}/portal/webhooks/deliveries/${d!.id}`);
    await page.getByText('Request headers').click();
    await expectText(page.locator('[data-header]').filter({ hasText: 'Authorization' }), 'Basic [redacted]');
    // Edit: kept unless changed; "Signature only" removes it.
    await page.goto(`${svc.url}/portal/webhooks/endpoints/${id}`);
    await page.getByRole('button', { name: 'Edit' }).click();
    const select = page.getByLabel('Authenticate to your receiver');
    expect(await select.inputValue()).toBe('keep');
    await page.getByRole('button', { name: 'Save' }).click();
    await expectText(page.getByTestId('receiver-authentication'), 'Basic, as gateway-user');
    await page.getByRole('button', { name: 'Edit' }).click();
    await page.getByLabel('Authenticate to your receiver').selectOption('none');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForFunction(() => !(globalThis as any).document.querySelector('[data-testid="receiver-authentication"]'));
    expect((await svc.ctx.endpoints.get(scopeA(), id)).authentication).toBeNull();
  });

  it('the Add form sets OAuth 2.0 client credentials (the secret never shown again); Edit gives a client certificate, shown by subject', async () => {
    await page.goto(`${svc.url}/portal/webhooks/endpoints/new`);
    await page.getByLabel('Endpoint URL').fill('https://127.0.0.1:9/oauth-receiver');
    await page.getByLabel('Authenticate to your receiver').selectOption('oauth2');
    await page.getByLabel('Token URL').fill('https://127.0.0.1:9/token');
    await page.getByLabel('Client ID').fill('portal-client');
    await page.getByLabel('Client secret').fill('client-s3cret-typed-once');
    await page.getByLabel('Scope (optional)').fill('webhooks:write');
    await page.getByLabel('Client authentication').selectOption('client_secret_post');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await expectText(
      page.getByTestId('receiver-authentication'),
      'OAuth 2.0 as client portal-client, tokens from https://127.0.0.1:9/token',
    );
    const id = new URL(page.url()).pathname.split('/').pop()!;
    expect((await svc.ctx.endpoints.get(scopeA(), id)).authentication).toEqual({
      type: 'oauth2_client_credentials',
      token_url: 'https://127.0.0.1:9/token',
      client_id: 'portal-client',
      scope: 'webhooks:write',
      audience: null,
      client_auth_method: 'client_secret_post',
    });
    expect(await page.content()).not.toContain('client-s3cret-typed-once');
    // Edit: a client certificate and its key, pasted as PEM; the page then shows the certificate.
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-portal-mtls-'));
    try {
      makeCa(dir, 'portal-ca');
      const client = issue(dir, 'portal-ca', 'portal-client-cert', 'extendedKeyUsage=clientAuth');
      await page.getByRole('button', { name: 'Edit' }).click();
      await page.getByLabel('Authenticate to your receiver').selectOption('mtls');
      await page.getByLabel('Client certificate (PEM)').fill(client.cert);
      await page.getByLabel('Private key (PEM)').fill(client.key);
      await page.getByRole('button', { name: 'Save' }).click();
      await expectText(page.getByTestId('receiver-authentication'), 'client certificate CN=portal-client-cert, issued by CN=portal-ca');
      expect((await svc.ctx.endpoints.get(scopeA(), id)).authentication).toMatchObject({ type: 'mtls', subject: 'CN=portal-client-cert' });
      expect(await page.content()).not.toContain(client.key.split('\n')[1]!);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("Edit takes the endpoint's own certificate authorities as PEM, says it trusts them, and shows why a text that is not PEM is refused", async () => {
    const ep = await endpointOfA('own-cas', { status: 200 });
    const pem = readFileSync(new URL('../fixtures/self-signed.crt', import.meta.url), 'utf8');
    await page.goto(`${svc.url}/portal/webhooks/endpoints/${ep.id}`);
    await page.getByRole('button', { name: 'Edit' }).click();
    await page.getByLabel('Your own certificate authorities').fill('not a certificate');
    await page.getByRole('button', { name: 'Save' }).click();
    await expectText(page.getByRole('alert'), 'PEM certificates only');
    await page.getByLabel('Your own certificate authorities').fill(pem);
    await page.getByRole('button', { name: 'Save' }).click();
    await expectText(page.getByTestId('trusted-cas'), 'certificate authorities of your own');
    expect((await svc.ctx.endpoints.get(scopeA(), ep.id)).tls?.ca_certificates).toContain('BEGIN CERTIFICATE');
  });

  it('issue 25: a broker endpoint made in the portal shows its URL without the credentials and says they are stored', async () => {
    await page.goto(`${svc.url}/portal/webhooks/endpoints`);
    await page.getByRole('link', { name: '+ Add endpoint' }).click();
    await page
      .getByLabel('Endpoint URL')
      .fill('amqp://portal-user:portal-pass-1234@rabbit.example.com/?exchange=payments&routing_key=hooks');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByTestId('url-credentials').waitFor();
    await expectText(page.locator('h1.url-title'), 'amqp://rabbit.example.com/?exchange=payments&routing_key=hooks');
    await page.reload();
    await page.getByTestId('url-credentials').waitFor();
    expect(await page.content()).not.toContain('portal-pass-1234');
  });

  it("issue 25: a delivery to RabbitMQ shows message headers (no User-Agent) and the broker's answer, not an HTTP status and response body", async () => {
    const exchange = await fanoutExchange('payhooks-portal');
    try {
      const ep = await svc.ctx.endpoints.create(scopeA(), {
        url: `amqp://guest:guest@127.0.0.1:5672/?exchange=${exchange.name}`,
        enabled_events: ['*'],
      });
      const sent = await publish(svc.ctx, a.merchant_id);
      await drainUntil(svc.ctx, worker, scopeA(), ep.id, 'delivered');
      const [delivery] = (await svc.ctx.deliveries.list(scopeA(), { limit: 1, endpointId: ep.id })).data;
      expect(await exchange.channel.get(exchange.name)).toBeTruthy(); // RabbitMQ holds the message
      await page.goto(`${svc.url}/portal/webhooks/deliveries/${delivery!.id}`);
      const attempt = page.locator('li.attempt').first();
      await expectText(attempt, 'Message headers');
      await attempt.getByText('Message headers').click();
      await attempt.locator('[data-header="Service-Event-Id"]').filter({ hasText: sent.event.id }).waitFor();
      expect(await attempt.locator('[data-header="User-Agent"]').count()).toBe(0);
      expect(await attempt.getByText('Request headers').count()).toBe(0);
      expect(await attempt.getByTestId('status-code').count()).toBe(0);
      await attempt.getByText("The broker's answer").click();
      await expectText(attempt.locator('pre.response-body'), 'Confirmed by RabbitMQ');
      expect(await attempt.getByText('Response body').count()).toBe(0);
    } finally {
      await exchange.close();
    }
  });

  it('the environment switch shows live; sign-out returns to the sign-in form', async () => {
    await page.goto(`${svc.url}/portal/webhooks/endpoints`);
    await page.getByRole('button', { name: 'Live' }).click();
    await page.getByRole('button', { name: 'Live', pressed: true }).waitFor();
    await page.getByText('No endpoints yet.').waitFor();
    await page.getByRole('button', { name: 'Sandbox' }).click();
    await page.locator('tr[data-endpoint-id]').first().waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await page.goto(`${svc.url}/portal/webhooks/endpoints`);
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
  });
});

/** Signs `p` in as any portal user (the Platform helpers' `signIn` takes a Platform's first user). */
async function signInAs(p: Page, email: string, password: string) {
  await p.getByLabel('Email').fill(email);
  await p.getByLabel('Password').fill(password);
  await p.getByRole('button', { name: 'Sign in' }).click();
}

/** A's first user (an admin) over the portal API, as the page would call it. */
let adminApi: PortalClient | undefined;
const adminOfA = async () => (adminApi ??= await portalSignIn(svc.url, a.portal.email, a.portal.password));
const PASSWORD = 'a long enough password';
let serial = 0;
const newEmail = (what: string) => `${what}-${++serial}-${Date.now()}@acme.example`;

describe('accounts, roles, the audit log and the theme in Chromium', () => {
  beforeAll(async () => {
    await signIn(page, a);
  });

  it('sign-in with two-factor on asks for the authentication code after the password; a code from the app, or a recovery code, signs in', async () => {
    const email = newEmail('two-factor');
    const user = await inviteAndAccept(svc.url, await adminOfA(), email, 'developer', PASSWORD);
    const setup = await user.call('POST', '/account/two_factor/setup');
    const enabled = await user.call('POST', '/account/two_factor/enable', { code: totpCode(setup.body.secret, new Date()) });
    expect(enabled.status, enabled.text).toBe(200);
    const other = await browser.newContext();
    try {
      const p = await other.newPage();
      await p.goto(`${svc.url}/portal/`);
      await signInAs(p, email, PASSWORD);
      const code = p.getByLabel('Authentication code');
      await code.waitFor();
      // The code of the next step: the one enabling it used this step's, and each is accepted once.
      await code.fill(totpCode(setup.body.secret, new Date(Date.now() + 30_000)));
      await p.getByRole('button', { name: 'Verify' }).click();
      const main = p.getByRole('navigation', { name: 'Main' });
      await main.getByRole('link', { name: 'Endpoints', exact: true }).waitFor();
      // A developer: no admin pages in the nav.
      expect(await main.getByRole('link').allInnerTexts()).toEqual(['Webhooks', 'Endpoints', 'Event types', 'Account']);

      await p.getByRole('button', { name: 'Sign out' }).click();
      await signInAs(p, email, PASSWORD);
      await p.getByLabel('Authentication code').fill(enabled.body.codes[0]);
      await p.getByRole('button', { name: 'Verify' }).click();
      await main.getByRole('link', { name: 'Endpoints', exact: true }).waitFor();
      await p.goto(`${svc.url}/portal/account`);
      await expectText(p.getByTestId('recovery-codes-left'), '9 recovery codes left.');
    } finally {
      await other.close();
    }
  });

  it('Team: an invitation shows its link once with a copy button and whether it was emailed; the link signs the new user up; Remove asks first', async () => {
    const email = newEmail('invitee');
    await page.goto(`${svc.url}/portal/webhooks`);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Team' }).click();
    await page.getByRole('heading', { name: 'Team', exact: true }).waitFor();
    await page.getByLabel('Email', { exact: true }).fill(email);
    await page.getByLabel('Role', { exact: true }).selectOption('developer');
    await page.getByRole('button', { name: 'Invite', exact: true }).click();
    const link = page.getByRole('textbox', { name: 'Invitation link' });
    await link.waitFor();
    const url = await link.inputValue();
    expect(url).toMatch(new RegExp(`^${svc.url}/portal/invitation#token=[\\w-]{43}$`));
    await expectText(page.getByTestId('invitation-emailed'), 'It was not emailed');
    await page.getByRole('button', { name: 'Copy link' }).waitFor();
    const invitation = page.locator('tr[data-invitation-id]', { hasText: email });
    await expectText(invitation, 'developer');
    await invitation.getByRole('button', { name: 'Revoke' }).waitFor();
    // Once: a reload lists the invitation, not its link.
    await page.reload();
    await invitation.waitFor();
    expect(await page.content()).not.toContain(tokenOfUrl(url));

    const other = await browser.newContext();
    try {
      const p = await other.newPage();
      await p.goto(url);
      await p.getByRole('heading', { name: 'Join Acme' }).waitFor();
      expect(new URL(p.url()).hash).toBe(''); // the token left the address bar at once
      expect(await p.getByLabel('Email').inputValue()).toBe(email);
      await p.getByLabel('Choose a password').fill('short');
      await p.getByRole('button', { name: 'Accept invitation' }).click();
      await expectText(p.getByRole('alert'), 'at least 12 characters');
      await p.getByLabel('Choose a password').fill(PASSWORD);
      await p.getByRole('button', { name: 'Accept invitation' }).click();
      await p.getByRole('heading', { name: 'Endpoints', exact: true }).waitFor();
    } finally {
      await other.close();
    }

    await page.reload();
    const row = page.locator('tr[data-user-id]', { hasText: email });
    expect(await row.getByRole('combobox').inputValue()).toBe('developer');
    await expect(invitation.count()).resolves.toBe(0);
    await row.getByRole('button', { name: `Remove ${email}` }).click();
    const confirm = page.getByRole('alertdialog', { name: `Remove ${email}?` });
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await confirm.waitFor({ state: 'detached' });
    await row.getByRole('button', { name: `Remove ${email}` }).click();
    await confirm.getByRole('button', { name: 'Remove user' }).click();
    await row.waitFor({ state: 'detached' });
    await expectText(page.getByRole('status'), `${email} was removed`);
  });

  it('a viewer sees endpoints, the delivery log and a failed delivery, but no button that can only fail', async () => {
    const ep = await endpointOfA('viewer', { status: 503, body: 'viewer sees this' });
    await publish(svc.ctx, a.merchant_id);
    await drainUntil(svc.ctx, worker, scopeA(), ep.id, 'exhausted');
    const [d] = (await svc.ctx.deliveries.list(scopeA(), { limit: 1, endpointId: ep.id })).data;
    const email = newEmail('viewer');
    await inviteAndAccept(svc.url, await adminOfA(), email, 'viewer', PASSWORD);
    const other = await browser.newContext();
    try {
      const p = await other.newPage();
      await p.goto(`${svc.url}/portal/webhooks/endpoints/${ep.id}`);
      await signInAs(p, email, PASSWORD);
      await p.locator('tr[data-delivery-id]').first().waitFor();
      await expectText(p.locator('tr[data-delivery-id]').first(), 'Exhausted');
      for (const name of ['Edit', 'Disable', 'Enable', 'Delete…', 'Roll secret…', 'Send test event', 'Replay all failed since…'])
        expect(await p.getByRole('button', { name, exact: true }).count(), name).toBe(0);
      await p.locator('tr[data-delivery-id]').first().getByRole('link', { name: 'payment.succeeded' }).click();
      await expectText(p.locator('li.attempt').first(), 'viewer sees this');
      for (const name of ['Replay', 'Resend', 'Cancel delivery…'])
        expect(await p.getByRole('button', { name, exact: true }).count(), name).toBe(0);
      expect(p.url()).toBe(`${svc.url}/portal/webhooks/deliveries/${d!.id}`);
      await p.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Endpoints', exact: true }).click();
      await p.locator('tr[data-endpoint-id]').first().waitFor();
      expect(await p.getByRole('link', { name: '+ Add endpoint' }).count()).toBe(0);
      expect(await p.getByRole('navigation', { name: 'Main' }).getByRole('link').allInnerTexts()).toEqual([
        'Webhooks',
        'Endpoints',
        'Event types',
        'Account',
      ]);
    } finally {
      await other.close();
    }
  });

  it("the Audit log lists who did what, filters by action, and shows an entry's changes and request as text", async () => {
    const email = newEmail('audited');
    const invited = await (await adminOfA()).call('POST', '/invitations', { email, role: 'viewer' });
    expect(invited.status, invited.text).toBe(201);
    await page.goto(`${svc.url}/portal/webhooks`);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit log' }).click();
    await page.locator('tr[data-audit-id]').first().waitFor();
    expect(await page.getByRole('navigation', { name: 'Breadcrumb' }).innerText()).toBe('Webhooks > Audit log');
    await page.getByLabel('Action', { exact: true }).fill('portal_user.invite');
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.waitForFunction(() => {
      const rows = [...(globalThis as any).document.querySelectorAll('tr[data-audit-id]')];
      return rows.length > 0 && rows.every((r: any) => r.dataset.action === 'portal_user.invite');
    });
    const row = page.locator('tr[data-audit-id]', { hasText: invited.body.id });
    await expectText(row, a.portal.email);
    await expectText(row, 'Succeeded');
    await row.getByRole('button', { name: 'Details' }).click();
    const details = JSON.parse(await page.getByTestId('audit-details').innerText());
    expect(details).toMatchObject({
      resource: { type: 'invitation', id: invited.body.id },
      changes: { email, role: 'viewer' },
      request_id: expect.any(String),
    });
  });

  it('Settings turns the health mail on for sandbox and adds an alert address; Account turns it off for oneself', async () => {
    await page.goto(`${svc.url}/portal/settings`);
    await page.getByLabel('Mail the team about sandbox endpoints').check();
    await page.getByLabel('Also mail these addresses (one a line)').fill('OnCall@acme.example\nops@acme.example');
    await page.getByRole('button', { name: 'Save' }).click();
    await expectText(page.getByRole('status'), 'Saved');
    const settings = await (await adminOfA()).call('GET', '/settings');
    expect(settings.body.alerts).toMatchObject({
      mail_live: true,
      mail_sandbox: true,
      emails: ['oncall@acme.example', 'ops@acme.example'],
    });
    await page.goto(`${svc.url}/portal/account`);
    const box = page.getByTestId('health-mail');
    await box.waitFor();
    expect(await box.isChecked()).toBe(true);
    // The box follows the server's answer, not the click.
    await box.click();
    await expect.poll(async () => (await (await adminOfA()).call('GET', '/account')).body.health_mail).toBe(false);
    await expect.poll(() => box.isChecked()).toBe(false);
    await box.click();
    await expect.poll(async () => (await (await adminOfA()).call('GET', '/account')).body.health_mail).toBe(true);
    await expect.poll(() => box.isChecked()).toBe(true);
  });

  it("Settings: the theme's accent colour colours the primary buttons at once, dark mode sets data-theme on <html>, and the brand name replaces the Platform's", async () => {
    try {
      await page.goto(`${svc.url}/portal/settings`);
      await page.getByLabel('Accent colour').fill('#0a7d32');
      await page.getByLabel('Colour mode').selectOption('dark');
      await page.getByLabel('Brand name').fill('Acme Pay');
      await page.getByRole('button', { name: 'Save' }).click();
      await expectText(page.getByRole('status'), 'Saved');
      const save = page.getByRole('button', { name: 'Save' });
      const background = () => save.evaluate((el) => (globalThis as any).getComputedStyle(el).backgroundColor as string);
      expect(await background()).toBe('rgb(10, 125, 50)');
      expect(await page.locator('html').getAttribute('data-theme')).toBe('dark');
      await expectText(page.locator('.topbar .platform'), 'Acme Pay');
      // The session carries the theme: a new page load applies it before anything else.
      await page.reload();
      await save.waitFor();
      expect(await background()).toBe('rgb(10, 125, 50)');
      expect(await page.locator('html').getAttribute('data-theme')).toBe('dark');
      expect(cspViolations).toEqual([]);
    } finally {
      const reset = await (await adminOfA()).call('PUT', '/settings', { theme: { accent_color: null, mode: 'auto', name: null } });
      expect(reset.status, reset.text).toBe(200);
    }
  });
});

describe('sessions that end, and the portal in the payment service’s frame, in Chromium', () => {
  const INTERNAL_TOKEN = 'internal-token-for-the-browser-test-0123456789abcdef';
  let clock: ManualClock;
  let svc2: TestService;
  let c: CreatedPlatform;
  let host: Server;
  let hostOrigin: string;

  beforeAll(async () => {
    // The payment service's dashboard: a page on another origin that frames a fresh link.
    host = createServer((_req, res) => {
      void internalCall(svc2.url, INTERNAL_TOKEN, 'POST', '/portal_sessions', {
        merchant_id: c.merchant_id,
        environment: 'sandbox',
        role: 'admin',
        user: { id: 'dash_user_1', email: 'lee@merchant.example', name: 'Lee' },
        return_url: `${hostOrigin}/home`,
      }).then((link) => {
        res.writeHead(200, { 'content-type': 'text/html' }).end(
          `<!doctype html><title>Dashboard</title><script>
            window.messages = [];
            addEventListener('message', (e) => {
              window.messages.push({ origin: e.origin, data: e.data });
              if (e.data && e.data.type === 'payhooks:resize') document.querySelector('iframe').style.height = e.data.height + 'px';
            });
          </script><h1>Dashboard</h1><iframe title="Webhooks" src="${link.body.url}" style="width: 100%; border: 0"></iframe>`,
        );
      });
    });
    await new Promise<void>((r) => host.listen(0, '127.0.0.1', r));
    hostOrigin = `http://localhost:${(host.address() as AddressInfo).port}`;
    clock = new ManualClock(new Date());
    svc2 = await startService(
      { allowPrivateUrls: true, portalIdleTimeoutMs: 60_000, internalToken: INTERNAL_TOKEN, portalFrameAncestors: [hostOrigin] },
      { clock },
    );
    c = await svc2.platform('Framed Platform');
  }, 60_000);
  afterAll(async () => {
    await new Promise((r) => host?.close(r));
    await svc2?.close();
  });

  it('a session that went idle says why on the sign-in form, and signing in again returns to the page it was on', async () => {
    const scope: Scope = { platformId: c.platform_id, environment: 'sandbox', actor: { type: 'operator', id: 'test' } };
    const ep = await svc2.ctx.endpoints.create(scope, { url: `${receiver.url}?idle`, enabled_events: ['*'] });
    const other = await browser.newContext();
    try {
      const p = await other.newPage();
      await p.goto(`${svc2.url}/portal/`);
      await signInAs(p, c.portal.email, c.portal.password);
      await p.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Endpoints', exact: true }).click();
      await p.getByRole('link', { name: ep.url }).click();
      await p.getByRole('heading', { name: ep.url }).waitFor();
      // The page's own reads must be answered before the clock jumps: one still in flight would be
      // the one to find the session idle, and the Refresh clicked below would be gone with the page.
      await p.locator('section.log').getByText('No deliveries yet.').waitFor();
      await p.waitForLoadState('networkidle');
      clock.advance(61_000);
      await p.locator('section.log').getByRole('button', { name: 'Refresh' }).click();
      await expectText(p.getByTestId('session-ended-reason'), 'Your session ended after 1 minutes without activity. Sign in again.');
      await signInAs(p, c.portal.email, c.portal.password);
      await p.getByRole('heading', { name: ep.url }).waitFor();
      expect(p.url()).toBe(`${svc2.url}/portal/webhooks/endpoints/${ep.id}`);
      expect(await p.getByTestId('session-ended-reason').count()).toBe(0);
    } finally {
      await other.close();
    }
  });

  it("opened from the payment service's link in its frame: no payhooks bar, a breadcrumb and tabs, the height told to the host only; an ended session says so and tells the host", async () => {
    const other = await browser.newContext();
    try {
      const p = await other.newPage();
      await p.goto(`${hostOrigin}/`);
      const frame = p.frameLocator('iframe');
      const crumbs = frame.getByRole('navigation', { name: 'Breadcrumb' });
      await crumbs.waitFor();
      expect(await crumbs.innerText()).toBe('Webhooks > Endpoints');
      const portal = p.frames().find((f) => f.url().startsWith(`${svc2.url}/portal/`))!;
      // The token's fragment is gone. The frame is another site's: its storage may be blocked (it
      // is here), and the session goes on with the token in memory, sent as a bearer token.
      expect(portal.url()).toBe(`${svc2.url}/portal/webhooks/endpoints`);
      expect(await frame.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
      expect(await frame.getByRole('group', { name: 'Environment' }).count()).toBe(0);
      expect(await frame.getByText('payhooks', { exact: true }).count()).toBe(0);
      expect(await frame.getByRole('link', { name: 'Back to dashboard' }).count()).toBe(0); // framed: the dashboard is around it
      await expectText(frame.locator('[data-environment]'), 'Sandbox');
      await expectText(frame.locator('.embed-head'), 'Framed Platform');
      expect(await frame.getByRole('navigation', { name: 'Sections' }).getByRole('link').allInnerTexts()).toEqual([
        'Endpoints',
        'Event types',
        'Audit log',
        'Settings',
      ]);
      // Its height, to the host's origin only; the host sizes the frame with it.
      await p.waitForFunction(() => (globalThis as any).messages.some((m: any) => m.data?.type === 'payhooks:resize'));
      const messages = await p.evaluate(() => (globalThis as any).messages as Array<{ origin: string; data: any }>);
      expect(new Set(messages.map((m) => m.origin))).toEqual(new Set([svc2.url]));
      const last = messages.filter((m) => m.data.type === 'payhooks:resize').at(-1)!;
      expect(last.data.height).toBeGreaterThan(100);
      expect(await p.locator('iframe').evaluate((el: any) => el.getBoundingClientRect().height)).toBe(last.data.height);

      await frame.getByRole('link', { name: 'Audit log' }).click();
      await expectText(crumbs, 'Webhooks > Audit log');
      clock.advance(61_000);
      await frame.getByRole('link', { name: 'Endpoints', exact: true }).click();
      await expectText(frame.getByTestId('session-ended'), 'Your session has ended. Open Webhooks again from your dashboard.');
      await p.waitForFunction(() => (globalThis as any).messages.some((m: any) => m.data?.type === 'payhooks:session_ended'));
    } finally {
      await other.close();
    }
  });
});

const tokenOfUrl = (url: string) => new URL(url).hash.replace(/^#token=/, '');

/**
 * Waits until the locator's text contains `text` (the page updates asynchronously). On a time-out
 * the error says what the page showed instead, so a failure in CI can be read without a rerun.
 */
async function expectText(locator: import('playwright-core').Locator, text: string) {
  try {
    await locator.filter({ hasText: text }).first().waitFor({ timeout: 10_000 });
  } catch (err) {
    const shown = await locator
      .first()
      .innerText({ timeout: 1_000 })
      .catch(() => '(nothing)');
    throw new Error(`'${text}' not shown within 10 s; the page shows: ${shown.slice(0, 500)}`, { cause: err });
  }
}

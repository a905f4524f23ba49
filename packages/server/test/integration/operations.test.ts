import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Stripe from 'stripe';
import { SIGNATURE_HEADER, parseSignatureHeader } from '@payhooks/contract';
import { verifyWebhook } from '../../../receiver/src/index.ts';
import { ManualClock, startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type Behaviour, type Received, type TestReceiver } from '../helpers/receiver.ts';
import { publish } from '../helpers/publish.ts';
import { portalSignIn } from '../helpers/portal.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';
import { disableFailingEndpoints } from '../../src/endpoints/auto-disable.ts';
import { claimDue } from '../../src/delivery/claim.ts';
import { runTrigger } from '../../src/cli/trigger.ts';

const HOUR = 3_600_000;
const clock = new ManualClock(Date.UTC(2026, 10, 22, 12, 0, 0));
const stripe = new Stripe('sk_test_not_used_for_verification');
let svc: TestService;
let worker: DeliveryWorker;
let receiver: TestReceiver;
/** Answer per path; anything else gets 200. */
const answers = new Map<string, Behaviour>();

beforeAll(async () => {
  // Retries 6 h apart, so nothing is retried within a test unless the clock is moved past it;
  // auto-disable after 1 h of failures.
  svc = await startService(
    { allowPrivateUrls: true, allowHttpUrls: true, retryScheduleMs: Array(7).fill(6 * HOUR), autoDisableAfterMs: HOUR },
    { clock },
  );
  worker = svc.ctx.createWorker();
  receiver = await startReceiver((req) => answers.get(req.path) ?? { status: 200, body: 'ok' });
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

const at = (path: string) => receiver.url.replace('/webhooks', path);
const hits = (path: string) => receiver.requests.filter((r) => r.path === path);

async function endpoint(
  p: CreatedPlatform,
  path: string,
  events: string[] = ['*'],
  key = p.keys.sandbox,
): Promise<{ id: string; secret: string }> {
  const r = await svc.api(key, 'POST', '/api/v1/webhook_endpoints', { url: at(path), enabled_events: events });
  expect(r.status).toBe(201);
  return r.body;
}

async function deliveriesOf(p: CreatedPlatform, endpointId: string) {
  const r = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?endpoint_id=${endpointId}&limit=100`);
  expect(r.status).toBe(200);
  return r.body.data as Array<{
    id: string;
    state: string;
    next_attempt_at: string | null;
    attempt_count: number;
    cancel_reason: string | null;
    attempts: unknown[];
  }>;
}

/** Does `secret` verify this request, per our receiver SDK and per stripe-node, at the test clock's time? */
function verifies(req: Received, secret: string): { sdk: boolean; stripe: boolean } {
  const header = String(req.headers[SIGNATURE_HEADER.toLowerCase()]);
  let sdk = true;
  try {
    verifyWebhook({ secret, body: req.raw, headers: req.headers as Record<string, string>, now: clock.now() });
  } catch {
    sdk = false;
  }
  let viaStripe = true;
  try {
    // stripe-node reads Stripe's header name, but the value's format (t=…,v1=…[,v1=…]) is ours.
    stripe.webhooks.constructEvent(req.raw, header, secret, 300, undefined, clock.now().getTime());
  } catch {
    viaStripe = false;
  }
  return { sdk, stripe: viaStripe };
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const BOTH = { sdk: true, stripe: true };
const NEITHER = { sdk: false, stripe: false };

describe('secret rotation', () => {
  it('before, during and after the overlap: one v1= per live secret, new first; the SDK and stripe-node accept each live secret and only those', async () => {
    const p = await svc.platform();
    const ep = await endpoint(p, '/rotate');
    const oldSecret = ep.secret;
    const sendOne = async () => {
      await publish(svc.ctx, p.merchant_id);
      await worker.drain();
      return hits('/rotate').at(-1)!;
    };

    // Before: one signature, by the only secret.
    const before = await sendOne();
    expect(parseSignatureHeader(String(before.headers['service-signature']))!.signatures).toHaveLength(1);
    expect(verifies(before, oldSecret)).toEqual(BOTH);

    const rotated = await svc.api(p.keys.sandbox, 'POST', `/api/v1/webhook_endpoints/${ep.id}/rotate_secret`, { expire_previous_in: 3600 });
    expect(rotated.status).toBe(200);
    const newSecret: string = rotated.body.secret;
    expect(newSecret).toMatch(/^whsec_/);
    expect(newSecret).not.toBe(oldSecret);
    expect(rotated.body.previous_secret_expires_at).toBe('2026-11-22T13:00:00Z');
    // Never shown again: not on retrieve, not in the list.
    const got = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${ep.id}`);
    expect(got.body).not.toHaveProperty('secret');
    expect(got.body.previous_secret_expires_at).toBe('2026-11-22T13:00:00Z');
    expect(JSON.stringify((await svc.api(p.keys.sandbox, 'GET', '/api/v1/webhook_endpoints')).body)).not.toContain('whsec_');

    // During: two signatures, the new secret's first; either secret verifies with both libraries.
    clock.advance(59 * 60_000);
    const during = await sendOne();
    const header = parseSignatureHeader(String(during.headers['service-signature']))!;
    expect(header.signatures).toHaveLength(2);
    expect(verifies(during, newSecret)).toEqual(BOTH);
    expect(verifies(during, oldSecret)).toEqual(BOTH);
    expect(verifies(during, 'whsec_someoneelse')).toEqual(NEITHER);
    // New first: the first v1 alone is the new secret's.
    const firstOnly = {
      ...during,
      headers: { ...during.headers, 'service-signature': `t=${header.timestamp},v1=${header.signatures[0]}` },
    };
    expect(verifies(firstOnly, newSecret)).toEqual(BOTH);
    expect(verifies(firstOnly, oldSecret)).toEqual(NEITHER);

    // After: the previous secret no longer signs, and the endpoint no longer shows an expiry.
    clock.advance(2 * 60_000);
    const after = await sendOne();
    expect(parseSignatureHeader(String(after.headers['service-signature']))!.signatures).toHaveLength(1);
    expect(verifies(after, newSecret)).toEqual(BOTH);
    expect(verifies(after, oldSecret)).toEqual(NEITHER);
    expect((await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${ep.id}`)).body.previous_secret_expires_at).toBeNull();
    expect(await svc.ctx.metrics.registry.getSingleMetricAsString('payhooks_secret_rotations_total')).toMatch(
      /payhooks_secret_rotations_total [1-9]/,
    );
  });

  it('defaults to a 24 h overlap; expire_previous_in 0 stops the old secret at once; a retry of a failed delivery is signed with the secrets live at send time', async () => {
    const p = await svc.platform();
    const ep = await endpoint(p, '/rotate-default');
    const dflt = await svc.api(p.keys.sandbox, 'POST', `/api/v1/webhook_endpoints/${ep.id}/rotate_secret`);
    expect(dflt.status).toBe(200);
    expect(new Date(dflt.body.previous_secret_expires_at).getTime() - clock.now().getTime()).toBe(24 * HOUR);

    const now = await svc.api(p.keys.sandbox, 'POST', `/api/v1/webhook_endpoints/${ep.id}/rotate_secret`, { expire_previous_in: 0 });
    expect(now.status).toBe(200);
    expect(now.body.previous_secret_expires_at).toBeNull();
    await publish(svc.ctx, p.merchant_id);
    await worker.drain();
    const req = hits('/rotate-default').at(-1)!;
    expect(parseSignatureHeader(String(req.headers['service-signature']))!.signatures).toHaveLength(1);
    expect(verifies(req, now.body.secret)).toEqual(BOTH);
    expect(verifies(req, dflt.body.secret)).toEqual(NEITHER);
    expect(verifies(req, ep.secret)).toEqual(NEITHER);
  });

  it('Idempotency-Key returns the same new secret once; bad values, unknown fields and other tenants are refused', async () => {
    const p = await svc.platform();
    const other = await svc.platform('Other');
    const ep = await endpoint(p, '/rotate-idem');
    const path = `/api/v1/webhook_endpoints/${ep.id}/rotate_secret`;
    const first = await svc.api(p.keys.sandbox, 'POST', path, { expire_previous_in: 60 }, { 'idempotency-key': 'rot-1' });
    const again = await svc.api(p.keys.sandbox, 'POST', path, { expire_previous_in: 60 }, { 'idempotency-key': 'rot-1' });
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.secret).toBe(first.body.secret);

    const tooLong = await svc.api(p.keys.sandbox, 'POST', path, { expire_previous_in: 7 * 86_400 + 1 });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error.code).toBeTruthy();
    expect(tooLong.body.error.message).toContain('expire_previous_in');
    expect((await svc.api(p.keys.sandbox, 'POST', path, { expire_previous_in: -1 })).status).toBe(400);
    expect((await svc.api(p.keys.sandbox, 'POST', path, { expire_previous_in: 'soon' })).status).toBe(400);
    expect((await svc.api(p.keys.sandbox, 'POST', path, { secret: 'whsec_mine' })).status).toBe(400);

    const foreign = await svc.api(other.keys.sandbox, 'POST', path, {});
    const unknown = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints/we_doesnotexist/rotate_secret', {});
    const liveKey = await svc.api(p.keys.live, 'POST', path, {});
    for (const r of [foreign, unknown, liveKey]) {
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe('resource_missing');
    }
  });

  it("the portal's Roll secret does the same rotation and shows the new secret once", async () => {
    const p = await svc.platform();
    const ep = await endpoint(p, '/rotate-portal');
    const portal = await portalSignIn(svc.url, p.portal.email, p.portal.password);
    const rolled = await portal.call('POST', `/endpoints/${ep.id}/rotate_secret`, { expire_previous_in: 600 });
    expect(rolled.status).toBe(200);
    expect(rolled.body.secret).toMatch(/^whsec_/);
    expect(rolled.body.previous_secret_expires_at).toBe(iso(clock.now().getTime() + 600_000));
    const shown = await portal.call('GET', `/endpoints/${ep.id}`);
    expect(shown.body).not.toHaveProperty('secret');
    await publish(svc.ctx, p.merchant_id);
    await worker.drain();
    const req = hits('/rotate-portal').at(-1)!;
    expect(verifies(req, rolled.body.secret)).toEqual(BOTH);
    expect(verifies(req, ep.secret)).toEqual(BOTH);
  });
});

describe('auto-disable', () => {
  const sweep = () =>
    disableFailingEndpoints({
      database: svc.ctx.database,
      clock,
      logger: svc.ctx.logger,
      audit: svc.ctx.audit,
      metrics: svc.ctx.metrics,
      windowMs: HOUR,
      scheduleMs: 42 * HOUR,
    });

  /** `n` events to the Platform, each attempted once now. */
  async function failN(p: CreatedPlatform, n: number): Promise<void> {
    for (let i = 0; i < n; i++) await publish(svc.ctx, p.merchant_id);
    await worker.drain();
  }

  it('spec 3.2, 8: disables after the window of failures (not before), keeps its deliveries on their schedule (failing without a request), announces webhook_endpoint.disabled signed to subscribed endpoints, and resumes on re-enable', async () => {
    const p = await svc.platform();
    answers.set('/dying', { status: 500, body: 'down' });
    const dying = await endpoint(p, '/dying', ['payment.succeeded']);
    // Its custom header (issue 36) reaches the event by name only: such values are often credentials.
    await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${dying.id}`, { headers: { Authorization: 'Bearer dying-token' } });
    const watcher = await endpoint(p, '/watcher', ['webhook_endpoint.disabled']);
    const everything = await endpoint(p, '/everything', ['*']);
    const paymentsOnly = await endpoint(p, '/payments-only', ['payment.succeeded']);
    const liveWatcher = await endpoint(p, '/live-watcher', ['*'], p.keys.live);
    const start = clock.now().getTime();

    await failN(p, 10);
    expect(hits('/dying')).toHaveLength(10);
    clock.set(start + HOUR - 60_000);
    expect(await sweep(), 'within the window').toEqual([]);
    clock.set(start + HOUR + 60_000);
    expect(await sweep()).toEqual([dying.id]);
    expect(await sweep(), 'once').toEqual([]);

    const shown = (await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${dying.id}`)).body;
    expect(shown).toMatchObject({ status: 'disabled', disabled_reason: 'failing', disabled_at: iso(start + HOUR + 60_000) });
    // In the audit trail once, with payhooks itself as the actor.
    const trail = await svc.api(p.keys.sandbox, 'GET', `/api/v1/audit_events?resource_id=${dying.id}&actor_type=system`);
    expect(trail.body.data).toHaveLength(1);
    expect(trail.body.data[0]).toMatchObject({
      action: 'webhook_endpoint.auto_disable',
      actor: { type: 'system', id: 'auto_disable' },
      outcome: 'succeeded',
      changes: { status: 'disabled', disabled_reason: 'failing', failed_attempts: 10 },
    });
    // Still on the schedule: the second attempt is where it was.
    const kept = await deliveriesOf(p, dying.id);
    expect(kept).toHaveLength(10);
    for (const d of kept) expect(d).toMatchObject({ state: 'failed_retrying', next_attempt_at: iso(start + 6 * HOUR) });

    // The operational event: to the Platform's sandbox endpoints subscribed to it (or to *), only.
    await worker.drain();
    for (const path of ['/watcher', '/everything']) {
      const got = hits(path).filter((r) => JSON.parse(r.raw.toString()).type === 'webhook_endpoint.disabled');
      expect(got, path).toHaveLength(1);
      const event = JSON.parse(got[0]!.raw.toString());
      expect(event.data.object).toMatchObject({ id: dying.id, object: 'webhook_endpoint', status: 'disabled', disabled_reason: 'failing' });
      expect(event.data.object).not.toHaveProperty('secret');
      expect(got[0]!.raw.toString()).not.toContain('whsec_');
      expect(event.data.object.headers).toEqual({ Authorization: '[redacted]' });
      expect(got[0]!.raw.toString()).not.toContain('dying-token');
      expect(event.merchant_id).toBe(p.merchant_id);
      const secret = path === '/watcher' ? watcher.secret : everything.secret;
      expect(verifies(got[0]!, secret)).toEqual(BOTH);
    }
    expect(hits('/payments-only').filter((r) => r.raw.toString().includes('webhook_endpoint.disabled'))).toHaveLength(0);
    expect(hits('/live-watcher')).toHaveLength(0);
    expect(hits('/dying')).toHaveLength(10);
    void paymentsOnly;
    void liveWatcher;
    expect(await svc.ctx.metrics.registry.getSingleMetricAsString('payhooks_endpoints_auto_disabled_total')).toMatch(
      /payhooks_endpoints_auto_disabled_total [1-9]/,
    );

    // The attempt that falls due while disabled is recorded as failed without a request, and
    // counts: the next one is scheduled after it.
    clock.advance(7 * HOUR);
    const dueAt = clock.now().getTime();
    await worker.drain();
    expect(hits('/dying')).toHaveLength(10);
    for (const d of await deliveriesOf(p, dying.id)) {
      expect(d).toMatchObject({ state: 'failed_retrying', attempt_count: 2, next_attempt_at: iso(dueAt + 6 * HOUR) });
      const detail = (await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries/${d.id}`)).body;
      expect(detail.attempts.at(-1)).toMatchObject({
        attempt_number: 2,
        trigger: 'automatic',
        succeeded: false,
        status_code: null,
        response_body: null,
        error_kind: 'endpoint_disabled',
        duration_ms: 0,
      });
    }

    // Enabled again (the receiver fixed): the remaining attempts run on their schedule.
    answers.delete('/dying');
    const enabled = await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${dying.id}`, { status: 'enabled' });
    expect(enabled.body).toMatchObject({ status: 'enabled', disabled_reason: null, disabled_at: null });
    await worker.drain();
    expect(hits('/dying')).toHaveLength(10); // not before their time
    clock.advance(6 * HOUR);
    await worker.drain();
    expect(hits('/dying')).toHaveLength(20);
    for (const d of await deliveriesOf(p, dying.id)) expect(d.state).toBe('delivered');
  });

  it('one 2xx resets the window; fewer than 10 failures since never disables', async () => {
    const p = await svc.platform();
    let ok = false;
    answers.set('/flaky', { status: 503 });
    const flaky = await endpoint(p, '/flaky');
    const start = clock.now().getTime();
    await failN(p, 10);
    // One success half-way through the window...
    clock.set(start + HOUR / 2);
    answers.delete('/flaky');
    ok = true;
    await failN(p, 1);
    // ... then failing again, but only twice since.
    answers.set('/flaky', { status: 503 });
    clock.set(start + HOUR / 2 + 60_000);
    await failN(p, 2);
    clock.set(start + HOUR + 60_000);
    expect(ok).toBe(true);
    expect(await sweep(), 'the 2xx restarted the window').toEqual([]);
    clock.set(start + 3 * HOUR);
    expect(await sweep(), 'a whole window, but 2 failures since the 2xx').toEqual([]);
    expect((await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${flaky.id}`)).body).toMatchObject({
      status: 'enabled',
      disabled_reason: null,
    });
    answers.delete('/flaky');
  });

  it('the job run beside the workers sweeps at once when started and stops cleanly', async () => {
    const p = await svc.platform();
    answers.set('/swept', { status: 500 });
    const ep = await endpoint(p, '/swept', ['payment.succeeded']);
    await failN(p, 10);
    clock.advance(HOUR + 1000);
    const job = svc.ctx.createAutoDisableJob();
    job.start();
    await job.stop();
    expect((await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${ep.id}`)).body).toMatchObject({
      status: 'disabled',
      disabled_reason: 'failing',
    });
    answers.delete('/swept');
  });

  it('webhook_endpoint.disabled is in the catalog but not the live minimum; never carries a secret; payhooks trigger refuses it with the reason', async () => {
    const p = await svc.platform();
    const live = await svc.api(p.keys.live, 'POST', '/api/v1/webhook_endpoints', {
      url: 'https://ops.example.com/h',
      enabled_events: ['webhook_endpoint.disabled'],
    });
    expect(live.status).toBe(422);
    expect(live.body.error.code).toBe('live_subscription_incomplete');
    const ok = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url: 'https://ops.example.com/h',
      enabled_events: ['webhook_endpoint.disabled'],
    });
    expect(ok.status).toBe(201);
    const object = { id: ok.body.id, object: 'webhook_endpoint', status: 'disabled', secret: ok.body.secret };
    await expect(publish(svc.ctx, p.merchant_id, { type: 'webhook_endpoint.disabled', object })).rejects.toMatchObject({
      code: 'parameter_invalid',
      param: 'data.object.secret',
    });
    await expect(
      runTrigger('webhook_endpoint.disabled', { apiKey: p.keys.sandbox, url: svc.url, doubleDelivery: false }, () => {}),
    ).rejects.toThrow(/emitted by the service itself/);
  });

  it('PAYHOOKS_AUTO_DISABLE_AFTER=0 turns it off', async () => {
    const p = await svc.platform();
    answers.set('/never-off', { status: 500 });
    const ep = await endpoint(p, '/never-off');
    await failN(p, 12);
    clock.advance(30 * 24 * HOUR);
    expect(
      await disableFailingEndpoints({
        database: svc.ctx.database,
        clock,
        logger: svc.ctx.logger,
        audit: svc.ctx.audit,
        windowMs: 0,
        scheduleMs: 42 * HOUR,
      }),
    ).toEqual([]);
    expect((await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${ep.id}`)).body.status).toBe('enabled');
    answers.delete('/never-off');
  });

  it('a delivery parked by an earlier release (out of the queue) is back on its schedule once the job has run', async () => {
    const p = await svc.platform();
    answers.set('/parked-before', { status: 500 });
    const ep = await endpoint(p, '/parked-before');
    await failN(p, 1);
    await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${ep.id}`, { status: 'disabled' });
    const [before] = await deliveriesOf(p, ep.id);
    // What the previous release did on disable: the row left the queue (the API shows no next attempt).
    await svc.ctx.database.query('DELETE FROM delivery_queue WHERE endpoint_id = $1', [ep.id]);
    expect((await deliveriesOf(p, ep.id))[0]!.next_attempt_at).toBeNull();
    const job = svc.ctx.createAutoDisableJob();
    job.start();
    await job.stop();
    expect((await deliveriesOf(p, ep.id))[0]).toMatchObject({ state: 'failed_retrying', next_attempt_at: before!.next_attempt_at });
    answers.delete('/parked-before');
  });

  it('a manual disable shows disabled_reason manual; its deliveries keep their next attempt', async () => {
    const p = await svc.platform();
    answers.set('/manual-off', { status: 500 });
    const ep = await endpoint(p, '/manual-off');
    await failN(p, 1);
    const next = (await deliveriesOf(p, ep.id))[0]!.next_attempt_at;
    expect(next).not.toBeNull();
    const off = await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${ep.id}`, { status: 'disabled' });
    expect(off.body).toMatchObject({ status: 'disabled', disabled_reason: 'manual' });
    expect(off.body.disabled_at).toMatch(/Z$/);
    expect((await deliveriesOf(p, ep.id))[0]).toMatchObject({ state: 'failed_retrying', next_attempt_at: next });
    answers.delete('/manual-off');
  });

  it('spec 8: a disabled endpoint\'s delivery is exhausted after its 8th attempt, none of them sent; enabled again, "Replay all failed since…" recovers it', async () => {
    const p = await svc.platform();
    const ep = await endpoint(p, '/off-for-good');
    const start = clock.now();
    const { event } = await publish(svc.ctx, p.merchant_id);
    // Disabled before its first attempt: every one of the 8 falls due while it is disabled.
    await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${ep.id}`, { status: 'disabled' });
    for (let attempt = 1; attempt <= 8; attempt++) {
      await worker.drain();
      const [d] = await deliveriesOf(p, ep.id);
      expect(d, `after attempt ${attempt}`).toMatchObject({
        state: attempt < 8 ? 'failed_retrying' : 'exhausted',
        attempt_count: attempt,
      });
      if (attempt < 8) expect(d!.next_attempt_at).not.toBeNull();
      else expect(d!.next_attempt_at).toBeNull();
      clock.advance(6 * HOUR);
    }
    expect(hits('/off-for-good')).toHaveLength(0);
    const [exhausted] = await deliveriesOf(p, ep.id);
    const detail = (await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries/${exhausted!.id}`)).body;
    expect(detail.attempts.map((a: { error_kind: string }) => a.error_kind)).toEqual(Array(8).fill('endpoint_disabled'));
    // Exhausted is terminal for the schedule: nothing more happens.
    clock.advance(48 * HOUR);
    await worker.drain();
    expect((await deliveriesOf(p, ep.id))[0]!.attempt_count).toBe(8);

    await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${ep.id}`, { status: 'enabled' });
    const scope = { platformId: p.platform_id, environment: 'sandbox' as const, actor: { type: 'operator' as const, id: 'test' } };
    const job = await svc.ctx.bulkReplays.start(scope, ep.id, start);
    for (let i = 0; i < 200 && (await svc.ctx.bulkReplays.get(scope, job.id)).status === 'running'; i++)
      await new Promise((r) => setTimeout(r, 20));
    expect(await svc.ctx.bulkReplays.get(scope, job.id)).toMatchObject({ status: 'finished' });
    const [recovered] = await deliveriesOf(p, ep.id);
    expect(recovered).toMatchObject({ state: 'delivered' });
    expect(hits('/off-for-good').map((r) => r.headers['service-event-id'])).toEqual([event.id]);
  });
});

describe('deleted endpoints stop honestly', () => {
  it("a deleted endpoint's unfinished deliveries end cancelled (reason endpoint_deleted, next_attempt_at null); finished ones keep their state", async () => {
    const p = await svc.platform();
    answers.set('/deleted', { status: 500 });
    const ep = await endpoint(p, '/deleted');
    await publish(svc.ctx, p.merchant_id);
    await worker.drain();
    answers.delete('/deleted');
    await publish(svc.ctx, p.merchant_id);
    await worker.drain();
    expect((await deliveriesOf(p, ep.id)).map((d) => d.state).sort()).toEqual(['delivered', 'failed_retrying']);
    expect((await svc.api(p.keys.sandbox, 'DELETE', `/api/v1/webhook_endpoints/${ep.id}`)).status).toBe(200);
    const after = await deliveriesOf(p, ep.id);
    expect(after.find((d) => d.state === 'delivered')).toMatchObject({ cancel_reason: null });
    expect(after.find((d) => d.state !== 'delivered')).toMatchObject({
      state: 'cancelled',
      cancel_reason: 'endpoint_deleted',
      next_attempt_at: null,
    });
    const filtered = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?state=cancelled&endpoint_id=${ep.id}`);
    expect(filtered.body.data).toHaveLength(1);
    clock.advance(7 * HOUR);
    const before = hits('/deleted').length;
    await worker.drain();
    expect(hits('/deleted')).toHaveLength(before);
  });

  it('an attempt in flight while its endpoint is deleted is recorded, then the delivery is cancelled at its next claim instead of retried', async () => {
    const p = await svc.platform();
    answers.set('/deleted-in-flight', { status: 500, delayMs: 300 });
    const ep = await endpoint(p, '/deleted-in-flight');
    const n = receiver.requests.length;
    await publish(svc.ctx, p.merchant_id);
    const draining = worker.drain();
    await receiver.waitFor(n + 1);
    expect((await svc.api(p.keys.sandbox, 'DELETE', `/api/v1/webhook_endpoints/${ep.id}`)).status).toBe(200);
    await draining;
    const [d] = await deliveriesOf(p, ep.id);
    expect(d!.attempts).toHaveLength(1);
    clock.advance(7 * HOUR);
    await worker.drain();
    expect(hits('/deleted-in-flight')).toHaveLength(1);
    expect((await deliveriesOf(p, ep.id))[0]).toMatchObject({
      state: 'cancelled',
      cancel_reason: 'endpoint_deleted',
      next_attempt_at: null,
    });
    answers.delete('/deleted-in-flight');
  });
});

describe('interrupted attempts', () => {
  /** What a worker that dies right after claiming leaves behind: a lease and no outcome. */
  const claimAndDie = (worker: string) =>
    claimDue(svc.ctx.database, {
      now: clock.now(),
      leaseUntil: new Date(clock.now().getTime() + svc.ctx.config.leaseMs),
      limit: 100,
      perEndpoint: 10,
      perPlatform: 100,
      excludeEndpoints: [],
      excludePlatforms: [],
      token: `${worker}:1`,
    });

  it("a lease taken over by a worker or by a manual replay logs the dead holder's attempt as interrupted, once, in attempt order; a normal claim logs none", async () => {
    const p = await svc.platform();
    answers.set('/held', { status: 500 });
    const ep = await endpoint(p, '/held');
    await publish(svc.ctx, p.merchant_id);
    await worker.drain();
    const leasedAt = clock.now().getTime() + 6 * HOUR;
    clock.set(leasedAt);
    expect((await claimAndDie('w_dead1')).map((r) => r.interrupted)).toEqual([false]);

    // Within the lease nobody takes it; past it, the next claim logs the lost attempt, which
    // counts as automatic attempt 2: the next one waits for the schedule's second delay after it.
    clock.advance(svc.ctx.config.leaseMs - 1000);
    expect(await worker.drain()).toBe(0);
    clock.advance(2000);
    const delay = svc.ctx.config.retryScheduleMs[1]!;
    expect(svc.ctx.config.leaseMs + 1000).toBeLessThan(delay);
    expect(await worker.drain()).toBe(0);
    let [d] = await deliveriesOf(p, ep.id);
    expect((d!.attempts as any[]).map((a) => a.error_kind)).toEqual(['http_status', 'interrupted']);
    expect(d!.next_attempt_at).toBe(iso(leasedAt + delay));
    clock.set(leasedAt + delay);
    expect(await worker.drain()).toBe(1);
    [d] = await deliveriesOf(p, ep.id);
    expect((d!.attempts as any[]).map((a) => [a.attempt_number, a.error_kind, a.status_code, a.worker_id])).toEqual([
      [1, 'http_status', 500, null],
      [2, 'interrupted', null, 'w_dead1'],
      [3, 'http_status', 500, null],
    ]);
    expect((d!.attempts as any[])[1]).toMatchObject({
      trigger: 'automatic',
      succeeded: false,
      response_body: null,
      started_at: iso(leasedAt),
    });

    // A manual replay that finds a dead lease does the same.
    clock.advance(6 * HOUR);
    await claimAndDie('w_dead2');
    clock.advance(svc.ctx.config.leaseMs + 1000);
    answers.delete('/held');
    const scope = { platformId: p.platform_id, environment: 'sandbox' as const, actor: { type: 'operator' as const, id: 'test' } };
    const replayed = await svc.ctx.deliveries.replay(scope, d!.id);
    expect(replayed.state).toBe('delivered');
    expect(replayed.attempts.map((a) => [a.attempt_number, a.error_kind, a.trigger, a.worker_id])).toEqual([
      [1, 'http_status', 'automatic', null],
      [2, 'interrupted', 'automatic', 'w_dead1'],
      [3, 'http_status', 'automatic', null],
      [4, 'interrupted', 'automatic', 'w_dead2'],
      [5, null, 'manual', null],
    ]);
    // spec 8: the automatic budget counts the interrupted automatic attempts too (the receiver
    // may have had them), not the manual one.
    const [row] = await svc.ctx.database.query<{ automatic_attempts: number }>(
      'SELECT automatic_attempts FROM webhook_deliveries WHERE id = $1',
      [d!.id],
    );
    expect(Number(row!.automatic_attempts)).toBe(4);
    [d] = await deliveriesOf(p, ep.id);
    expect(d!.attempts).toHaveLength(5);
  });
});

describe('metrics', () => {
  it('payhooks_deliveries counts unfinished deliveries by state (pending, failed_retrying) without scanning finished ones', async () => {
    const text = await svc.ctx.metrics.registry.metrics();
    expect(text).toMatch(/payhooks_deliveries\{state="pending"\} \d+/);
    expect(text).toMatch(/payhooks_deliveries\{state="failed_retrying"\} \d+/);
    expect(text).not.toMatch(/payhooks_deliveries\{state="delivered"\}/);
    const [row] = await svc.ctx.database.query<{ n: string }>(
      `SELECT count(*) AS n FROM webhook_deliveries WHERE state = 'failed_retrying'`,
      [],
    );
    expect(text).toContain(`payhooks_deliveries{state="failed_retrying"} ${Number(row!.n)}`);
  });
});

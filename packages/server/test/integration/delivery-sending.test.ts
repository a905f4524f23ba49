import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_ATTEMPTS } from '@payhooks/contract';
import { ManualClock, startService, type TestService } from '../helpers/service.ts';
import { closedPort, startRawServer, startReceiver, type Behaviour, type TestReceiver } from '../helpers/receiver.ts';
import { payment, publish } from '../helpers/publish.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';

const clock = new ManualClock(Date.UTC(2026, 10, 22, 12, 0, 0));
let svc: TestService;
let p: CreatedPlatform;
let worker: DeliveryWorker;
let receiver: TestReceiver;

beforeAll(async () => {
  // Receivers listen on 127.0.0.1, so private targets are allowed in this file; a short
  // deadline keeps the timeout tests quick.
  svc = await startService({ allowPrivateUrls: true, attemptTimeoutMs: 3000 }, { clock });
  p = await svc.platform();
  worker = svc.ctx.createWorker();
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

async function endpointFor(url: string, events: string[] = ['*']): Promise<{ id: string; secret: string }> {
  const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url, enabled_events: events });
  expect(r.status).toBe(201);
  return r.body;
}

async function delivery(eventId: string, endpointId: string) {
  const r = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?event_id=${eventId}&endpoint_id=${endpointId}`);
  expect(r.body.data).toHaveLength(1);
  return r.body.data[0];
}

/** A receiver that answers with `b` to requests at `path`. */
async function receiverAt(path: string, b: (index: number) => Behaviour): Promise<string> {
  const prev = receiver;
  const url = `${prev.url.replace('/webhooks', '')}${path}`;
  const old = routes.size === 0;
  routes.set(path, b);
  if (old) {
    prev.behave((req) => {
      const route = routes.get(req.path);
      return route ? route(counts.set(req.path, (counts.get(req.path) ?? 0) + 1).get(req.path)! - 1) : { status: 200, body: 'ok' };
    });
  }
  return url;
}
const routes = new Map<string, (index: number) => Behaviour>();
const counts = new Map<string, number>();
const hits = (path: string) => receiver.requests.filter((r) => r.path === path);

describe('sending (spec 2.1, 4.2, 5.1)', () => {
  it('spec 2.1: the body is the envelope, created_at has no fractions, data.object is the full Payment with metadata', async () => {
    const url = await receiverAt('/envelope', () => ({ status: 200 }));
    const ep = await endpointFor(url);
    const obj = payment({ metadata: { account_ref: 'A-1', lookup: 'ünïcödé ✓' } });
    const { event } = await publish(svc.ctx, p.merchant_id, { object: obj });
    await worker.drain();
    const [req] = hits('/envelope');
    const body = JSON.parse(req!.raw.toString('utf8'));
    expect(Object.keys(body)).toEqual(['id', 'object', 'type', 'api_version', 'environment', 'merchant_id', 'created_at', 'data']);
    expect(body).toEqual({
      id: event.id,
      object: 'event',
      type: 'payment.succeeded',
      api_version: 'v1',
      environment: 'sandbox',
      merchant_id: p.merchant_id,
      created_at: '2026-11-22T12:00:00Z',
      data: { object: obj },
    });
    expect(body.id).toMatch(/^evt_/);
    expect(body.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    // UTF-8, no byte-order mark.
    expect(req!.raw[0]).toBe('{'.charCodeAt(0));
    expect((await delivery(event.id, ep.id)).state).toBe('delivered');
  });

  it('spec 4.2, 5.1: POST with Content-Type, Service-Event-Id and a Service-Signature an independent HMAC verifies over the raw bytes', async () => {
    const url = await receiverAt('/signed', () => ({ status: 200 }));
    const ep = await endpointFor(url);
    const { event } = await publish(svc.ctx, p.merchant_id);
    await worker.drain();
    const [req] = hits('/signed');
    expect(req!.method).toBe('POST');
    expect(req!.headers['content-type']).toBe('application/json');
    expect(req!.headers['user-agent']).toMatch(/payhooks/);
    expect(req!.headers['service-event-id']).toBe(event.id);
    const header = String(req!.headers['service-signature']);
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header)!;
    // spec 5.1.2: t is the Unix time of the attempt, in seconds.
    expect(Number(t)).toBe(Math.floor(clock.now().getTime() / 1000));
    // spec 5.1.3, 5.1.4: HMAC-SHA256 keyed with the full whsec_ string over `${t}.${raw body}`.
    const expected = createHmac('sha256', ep.secret)
      .update(Buffer.concat([Buffer.from(`${t}.`), req!.raw]))
      .digest('hex');
    expect(v1).toBe(expected);
  });

  it('spec 3.2, 8: every retry sends the same bytes, with a fresh t and signature per attempt', async () => {
    const url = await receiverAt('/retry-bytes', (i) => (i < 2 ? { status: 500 } : { status: 200 }));
    const ep = await endpointFor(url);
    const { event } = await publish(svc.ctx, p.merchant_id);
    await worker.drain();
    clock.advance(60_000);
    await worker.drain();
    clock.advance(5 * 60_000);
    await worker.drain();
    const reqs = hits('/retry-bytes');
    expect(reqs).toHaveLength(3);
    expect(reqs[1]!.raw.equals(reqs[0]!.raw)).toBe(true);
    expect(reqs[2]!.raw.equals(reqs[0]!.raw)).toBe(true);
    const ts = reqs.map((r) => Number(/t=(\d+)/.exec(String(r.headers['service-signature']))![1]));
    expect(ts[1]! - ts[0]!).toBe(60);
    expect(ts[2]! - ts[1]!).toBe(300);
    for (const r of reqs) {
      const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(r.headers['service-signature']))!;
      expect(v1).toBe(createHmac('sha256', ep.secret).update(`${t}.`).update(r.raw).digest('hex'));
    }
    const d = await delivery(event.id, ep.id);
    expect(d.state).toBe('delivered');
    expect(d.attempts.map((a: { status_code: number }) => a.status_code)).toEqual([500, 500, 200]);
  });

  it.each([200, 201, 202, 204, 226, 299])('spec 3.2, 4.2: a %i answer is delivered and ends the delivery', async (code) => {
    const url = await receiverAt(`/code-${code}`, () => ({ status: code }));
    const ep = await endpointFor(url);
    const { event } = await publish(svc.ctx, p.merchant_id);
    await worker.drain();
    const d = await delivery(event.id, ep.id);
    expect(d.state).toBe('delivered');
    expect(d.next_attempt_at).toBeNull();
    clock.advance(24 * 3600_000);
    await worker.drain();
    expect(hits(`/code-${code}`)).toHaveLength(1);
  });

  it.each([301, 302, 307, 308, 400, 401, 404, 409, 410, 429, 500, 502, 503])(
    'spec 3.2, 4.2: a %i answer is a failed attempt (no redirect followed)',
    async (code) => {
      const target = await receiverAt(`/redirect-target-${code}`, () => ({ status: 200 }));
      const url = await receiverAt(`/fail-${code}`, () => ({ status: code, headers: { location: target } }));
      const ep = await endpointFor(url);
      const { event } = await publish(svc.ctx, p.merchant_id);
      await worker.drain();
      const d = await delivery(event.id, ep.id);
      expect(d.state).toBe('failed_retrying');
      expect(d.attempts[0]).toMatchObject({ succeeded: false, status_code: code, error_kind: 'http_status' });
      expect(hits(`/redirect-target-${code}`)).toHaveLength(0);
    },
  );

  it('spec 3.2: a 1xx with no final answer is a failed attempt', async () => {
    const raw = await startRawServer('HTTP/1.1 102 Processing\r\n\r\n');
    try {
      const ep = await endpointFor(raw.url);
      const { event } = await publish(svc.ctx, p.merchant_id);
      await worker.drain();
      const d = await delivery(event.id, ep.id);
      expect(d.state).toBe('failed_retrying');
      expect(d.attempts[0].succeeded).toBe(false);
      expect(d.attempts[0].error_kind).toBe('timeout');
      await svc.api(p.keys.sandbox, 'DELETE', `/api/v1/webhook_endpoints/${ep.id}`); // no retries in later tests
    } finally {
      await raw.close();
    }
  });

  it('spec 3.2, 8: a receiver slower than the deadline fails with a timeout', async () => {
    const url = await receiverAt('/slow', () => ({ status: 200, delayMs: 6_000 }));
    const ep = await endpointFor(url);
    const { event } = await publish(svc.ctx, p.merchant_id);
    await worker.drain();
    const d = await delivery(event.id, ep.id);
    expect(d.state).toBe('failed_retrying');
    expect(d.attempts[0]).toMatchObject({ succeeded: false, status_code: null, error_kind: 'timeout' });
    await svc.api(p.keys.sandbox, 'DELETE', `/api/v1/webhook_endpoints/${ep.id}`); // no retries in later tests
  });

  it('spec 7: a refused connection and a reset connection are failed attempts', async () => {
    const refused = await endpointFor(`http://127.0.0.1:${await closedPort()}/h`);
    const resetUrl = await receiverAt('/reset', () => 'reset');
    const reset = await endpointFor(resetUrl);
    const { event } = await publish(svc.ctx, p.merchant_id);
    await worker.drain();
    const a = await delivery(event.id, refused.id);
    expect(a.state).toBe('failed_retrying');
    expect(a.attempts[0].error_kind).toBe('connection_refused');
    const b = await delivery(event.id, reset.id);
    expect(b.state).toBe('failed_retrying');
    expect(b.attempts[0].error_kind).toBe('connection_reset');
  });

  it('spec 2.4: the log keeps at most 16 KiB of the response body, as text', async () => {
    const url = await receiverAt('/big', () => ({ status: 500, body: '<b>x</b>'.repeat(10_000) }));
    const ep = await endpointFor(url);
    const { event } = await publish(svc.ctx, p.merchant_id);
    await worker.drain();
    const d = await delivery(event.id, ep.id);
    expect(d.attempts[0].response_body.length).toBe(16 * 1024);
    expect(d.attempts[0].response_body.startsWith('<b>x</b>')).toBe(true);
  });
});

describe('schedule and states (spec 3.2, 8)', () => {
  it('spec 8: next_attempt_at after the first failure is 1 minute later', async () => {
    const url = await receiverAt('/first-failure', () => ({ status: 503 }));
    const ep = await endpointFor(url);
    const { event } = await publish(svc.ctx, p.merchant_id);
    await worker.drain();
    const d = await delivery(event.id, ep.id);
    expect(d.state).toBe('failed_retrying');
    expect(d.attempt_count).toBe(1);
    expect(new Date(d.next_attempt_at).getTime() - new Date(d.last_attempt_at).getTime()).toBe(60_000);
  });

  it('spec 8: retries follow 1m, 5m, 30m, 2h, 12h, 24h, 24h and the delivery is exhausted after the 8th failed attempt', async () => {
    const url = await receiverAt('/always-fails', () => ({ status: 500, body: 'nope' }));
    const ep = await endpointFor(url);
    const { event } = await publish(svc.ctx, p.merchant_id);
    await worker.drain();
    const delays = [60_000, 300_000, 1_800_000, 7_200_000, 43_200_000, 86_400_000, 86_400_000];
    for (const [i, delay] of delays.entries()) {
      const before = await delivery(event.id, ep.id);
      expect(before.state).toBe('failed_retrying');
      expect(before.attempt_count).toBe(i + 1);
      expect(new Date(before.next_attempt_at).getTime() - clock.now().getTime()).toBe(delay);
      clock.advance(delay - 1000);
      await worker.drain();
      expect(hits('/always-fails')).toHaveLength(i + 1); // not due yet: nothing sent early
      clock.advance(1000);
      await worker.drain();
      expect(hits('/always-fails')).toHaveLength(i + 2);
    }
    const d = await delivery(event.id, ep.id);
    expect(d.state).toBe('exhausted');
    expect(d.attempt_count).toBe(MAX_ATTEMPTS);
    expect(d.next_attempt_at).toBeNull();
    expect(d.attempts.map((a: { attempt_number: number }) => a.attempt_number)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(
      d.attempts.every((a: { trigger: string; response_body: string }) => a.trigger === 'automatic' && a.response_body === 'nope'),
    ).toBe(true);
    // Terminal for the automatic schedule.
    clock.advance(30 * 86_400_000);
    await worker.drain();
    expect(hits('/always-fails')).toHaveLength(8);
  });

  it('spec 3.2: a 2xx on a retry stops the retries', async () => {
    const url = await receiverAt('/second-ok', (i) => (i === 0 ? { status: 500 } : { status: 204 }));
    const ep = await endpointFor(url);
    const { event } = await publish(svc.ctx, p.merchant_id);
    await worker.drain();
    clock.advance(60_000);
    await worker.drain();
    const d = await delivery(event.id, ep.id);
    expect(d.state).toBe('delivered');
    expect(d.next_attempt_at).toBeNull();
    clock.advance(86_400_000);
    await worker.drain();
    expect(hits('/second-ok')).toHaveLength(2);
  });
});

describe('manual replay (spec 3.2, 8)', () => {
  it('spec 3.2: replaying an exhausted delivery makes a new manual attempt; a 2xx makes it delivered and nothing more is sent', async () => {
    let ok = false;
    const url = await receiverAt('/replay-exhausted', () => (ok ? { status: 200, body: 'fine now' } : { status: 500 }));
    const ep = await endpointFor(url);
    const { event } = await publish(svc.ctx, p.merchant_id);
    await worker.drain();
    for (const delay of [60_000, 300_000, 1_800_000, 7_200_000, 43_200_000, 86_400_000, 86_400_000]) {
      clock.advance(delay);
      await worker.drain();
    }
    const d0 = await delivery(event.id, ep.id);
    expect(d0.state).toBe('exhausted');
    ok = true;
    const replayed = await svc.ctx.deliveries.replay(
      { platformId: p.platform_id, environment: 'sandbox', actor: { type: 'operator' as const, id: 'test' } },
      d0.id,
    );
    expect(replayed.state).toBe('delivered');
    expect(replayed.attempt_count).toBe(9);
    expect(replayed.attempts.at(-1)).toMatchObject({
      attempt_number: 9,
      trigger: 'manual',
      succeeded: true,
      status_code: 200,
      response_body: 'fine now',
    });
    // The replay carries the same bytes as the automatic attempts.
    const reqs = hits('/replay-exhausted');
    expect(reqs.at(-1)!.raw.equals(reqs[0]!.raw)).toBe(true);
    clock.advance(86_400_000);
    expect(await worker.drain()).toBe(0);
  });

  it('spec 3.2: a 2xx on replaying a failed_retrying delivery cancels its remaining automatic retries', async () => {
    let ok = false;
    const url = await receiverAt('/replay-retrying', () => (ok ? { status: 200 } : { status: 500 }));
    const ep = await endpointFor(url);
    const { event } = await publish(svc.ctx, p.merchant_id);
    await worker.drain();
    const d0 = await delivery(event.id, ep.id);
    expect(d0.state).toBe('failed_retrying');
    const scope = { platformId: p.platform_id, environment: 'sandbox' as const, actor: { type: 'operator' as const, id: 'test' } };
    // A failed replay leaves the state and the schedule as they were.
    const failed = await svc.ctx.deliveries.replay(scope, d0.id);
    expect(failed.state).toBe('failed_retrying');
    expect(failed.next_attempt_at).toBe(d0.next_attempt_at);
    expect(failed.attempts.at(-1)).toMatchObject({ trigger: 'manual', succeeded: false, status_code: 500 });
    ok = true;
    const done = await svc.ctx.deliveries.replay(scope, d0.id);
    expect(done.state).toBe('delivered');
    expect(done.next_attempt_at).toBeNull();
    clock.advance(86_400_000);
    await worker.drain();
    expect(hits('/replay-retrying')).toHaveLength(3);
    // Only failed_retrying and exhausted deliveries can be replayed.
    await expect(svc.ctx.deliveries.replay(scope, d0.id)).rejects.toMatchObject({ code: 'delivery_not_replayable' });
    // Another Platform can't replay it: 404 as for a missing one.
    await expect(svc.ctx.deliveries.replay({ ...scope, platformId: 'plt_other' }, d0.id)).rejects.toMatchObject({
      code: 'resource_missing',
    });
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_ATTEMPTS, RETRY_DELAYS_MS } from '@payhooks/contract';
import { ManualClock, startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type Behaviour, type TestReceiver } from '../helpers/receiver.ts';
import { publish } from '../helpers/publish.ts';
import { RETRY_AFTER_MAX_MS } from '../../src/delivery/retry-after.ts';
import { pauseEndpoint } from '../../src/delivery/pause.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';

/**
 * Sending that a struggling receiver can take: a 429 or 503 with Retry-After pauses the
 * endpoint's automatic attempts in every worker (delivery/pause.ts); a merchant's
 * max_requests_per_second is set and checked through the API (held across workers:
 * rate-cap.postgres.test.ts); a 410 is a failed attempt like any other
 * (docs/decisions/gentle-sending.md).
 */

/** Answers per path: a function of the request's index at that path. */
function routes(receiver: TestReceiver, table: Record<string, (i: number) => Behaviour>): void {
  const seen = new Map<string, number>();
  receiver.behave((req) => {
    const i = seen.get(req.path) ?? 0;
    seen.set(req.path, i + 1);
    return table[req.path]?.(i) ?? { status: 200 };
  });
}

const at = (receiver: TestReceiver, path: string) => receiver.requests.filter((r) => r.path === path);

describe('Retry-After pauses the endpoint (one database, two workers)', () => {
  const clock = new ManualClock(Date.now() + 60_000);
  let svc: TestService;
  let receiver: TestReceiver;
  let a: DeliveryWorker;
  let b: DeliveryWorker;

  beforeAll(async () => {
    svc = await startService({ allowPrivateUrls: true }, { clock });
    a = svc.ctx.createWorker();
    b = svc.ctx.createWorker();
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    await svc?.close();
  });

  async function setUp(paths: string[]): Promise<{ p: CreatedPlatform; ids: Record<string, string> }> {
    const p = await svc.platform();
    const ids: Record<string, string> = {};
    for (const path of paths) {
      const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
        url: `${new URL(receiver.url).origin}${path}`,
        enabled_events: ['*'],
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      ids[path] = r.body.id;
    }
    return { p, ids };
  }

  const endpointOf = async (p: CreatedPlatform, id: string) =>
    (await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${id}`)).body;
  const deliveryOf = async (p: CreatedPlatform, eventId: string, endpointId: string) => {
    const r = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?event_id=${eventId}&endpoint_id=${endpointId}`);
    expect(r.body.data).toHaveLength(1);
    return r.body.data[0];
  };

  it('spec 8: a 429 with Retry-After in seconds counts as a failed attempt and stops new requests to that endpoint only, in every worker, until the pause ends; the retry keeps its schedule or waits for the end', async () => {
    const { p, ids } = await setUp(['/busy', '/calm']);
    routes(receiver, { '/busy': (i) => (i === 0 ? { status: 429, headers: { 'Retry-After': '120' } } : { status: 200 }) });
    const start = clock.now().getTime();
    const first = await publish(svc.ctx, p.merchant_id);
    await a.drain();
    expect(at(receiver, '/busy')).toHaveLength(1);
    const failed = await deliveryOf(p, first.event.id, ids['/busy']!);
    expect(failed.state).toBe('failed_retrying');
    expect(failed.attempts).toHaveLength(1);
    const endpoint = await endpointOf(p, ids['/busy']!);
    expect(Date.parse(endpoint.paused_until)).toBe(Math.floor((start + 120_000) / 1000) * 1000);
    // The schedule says 1 minute, the pause 2: the retry waits for the pause.
    expect(RETRY_DELAYS_MS[0]).toBeLessThan(120_000);
    expect(Date.parse(failed.next_attempt_at)).toBe(Math.floor((start + 120_000) / 1000) * 1000);
    expect((await endpointOf(p, ids['/calm']!)).paused_until).toBeNull();

    // A new event during the pause: the neighbour gets it, the paused endpoint doesn't, whichever
    // worker claims it (b has never seen the 429).
    const second = await publish(svc.ctx, p.merchant_id);
    await b.drain();
    await a.drain();
    clock.advance(RETRY_DELAYS_MS[0]! + 1000);
    await b.drain();
    expect(at(receiver, '/busy')).toHaveLength(1);
    expect(at(receiver, '/calm')).toHaveLength(2);
    expect((await deliveryOf(p, second.event.id, ids['/busy']!)).attempts).toHaveLength(0);

    clock.set(start + 120_000);
    await b.drain();
    expect(at(receiver, '/busy')).toHaveLength(3);
    expect((await deliveryOf(p, first.event.id, ids['/busy']!)).state).toBe('delivered');
    expect((await deliveryOf(p, second.event.id, ids['/busy']!)).state).toBe('delivered');
    expect((await endpointOf(p, ids['/busy']!)).paused_until).toBeNull();
  });

  it('spec 8: a 503 with Retry-After as an HTTP date pauses until that date; a retry due after the pause keeps its scheduled time', async () => {
    const { p, ids } = await setUp(['/down']);
    const start = clock.now().getTime();
    const date = new Date(start + 30_000).toUTCString();
    routes(receiver, { '/down': (i) => (i === 0 ? { status: 503, headers: { 'Retry-After': date } } : { status: 200 }) });
    const ev = await publish(svc.ctx, p.merchant_id);
    await a.drain();
    expect(Date.parse((await endpointOf(p, ids['/down']!)).paused_until)).toBe(Date.parse(date));
    const d = await deliveryOf(p, ev.event.id, ids['/down']!);
    // The pause (30 s) ends before the schedule's first retry (1 minute): the schedule wins.
    expect(Date.parse(d.next_attempt_at)).toBe(Math.floor((start + RETRY_DELAYS_MS[0]!) / 1000) * 1000);
    clock.set(start + 30_000);
    await b.drain();
    expect(at(receiver, '/down')).toHaveLength(1);
    clock.set(start + RETRY_DELAYS_MS[0]!);
    await b.drain();
    expect(at(receiver, '/down')).toHaveLength(2);
  });

  it('spec 8: a shorter Retry-After answered while a longer pause holds never shortens it, in the database every worker reads', async () => {
    const { p, ids } = await setUp(['/overlap']);
    // Two attempts in flight at once: the first answer pauses 10 minutes; the second, answered
    // after it, asks for 1 minute only.
    routes(receiver, {
      '/overlap': (i) =>
        i === 0
          ? { status: 429, headers: { 'Retry-After': '600' } }
          : i === 1
            ? { status: 429, headers: { 'Retry-After': '60' }, delayMs: 300 }
            : { status: 200 },
    });
    const start = clock.now().getTime();
    await publish(svc.ctx, p.merchant_id);
    await publish(svc.ctx, p.merchant_id);
    await a.drain();
    expect(at(receiver, '/overlap')).toHaveLength(2);
    const tenMinutes = Math.floor((start + 600_000) / 1000) * 1000;
    expect(Date.parse((await endpointOf(p, ids['/overlap']!)).paused_until)).toBe(tenMinutes);
    // Worker b never saw either answer: it reads the pause from the database, so an event
    // published after the shorter pause would have ended is still held.
    clock.set(start + 5 * 60_000);
    await publish(svc.ctx, p.merchant_id);
    await b.drain();
    expect(at(receiver, '/overlap')).toHaveLength(2);
    clock.set(start + 600_000);
    await b.drain();
    expect(at(receiver, '/overlap')).toHaveLength(5);
  });

  it('a Retry-After beyond the maximum pauses for the maximum (an hour)', async () => {
    const { p, ids } = await setUp(['/sleepy']);
    routes(receiver, { '/sleepy': () => ({ status: 429, headers: { 'Retry-After': '86400' } }) });
    const start = clock.now().getTime();
    await publish(svc.ctx, p.merchant_id);
    await a.drain();
    expect(RETRY_AFTER_MAX_MS).toBe(3_600_000);
    expect(Date.parse((await endpointOf(p, ids['/sleepy']!)).paused_until)).toBe(Math.floor((start + RETRY_AFTER_MAX_MS) / 1000) * 1000);
  });

  it('garbage in Retry-After, or Retry-After on another status, pauses nothing: the next event goes at once', async () => {
    const answers: Behaviour[] = [
      { status: 429, headers: { 'Retry-After': 'soon' } },
      { status: 429, headers: { 'Retry-After': '-5' } },
      { status: 503, headers: { 'Retry-After': '1.5' } },
      { status: 503, headers: { 'Retry-After': 'Tue, 99 Foo 2026 00:00:00 GMT' } },
      { status: 429, headers: { 'Retry-After': new Date(clock.now().getTime() - 60_000).toUTCString() } },
      { status: 500, headers: { 'Retry-After': '120' } },
    ];
    const { p, ids } = await setUp(['/odd']);
    routes(receiver, { '/odd': (i) => answers[i] ?? { status: 200 } });
    for (let i = 0; i < answers.length; i++) {
      await publish(svc.ctx, p.merchant_id);
      await a.drain();
      expect(at(receiver, '/odd'), `after answer ${i}`).toHaveLength(i + 1);
      expect((await endpointOf(p, ids['/odd']!)).paused_until, `after answer ${i}`).toBeNull();
    }
  });

  it('spec 8: a 410 Gone is a failed attempt like any other: retried on the schedule, and the endpoint stays enabled', async () => {
    const { p, ids } = await setUp(['/gone']);
    routes(receiver, { '/gone': () => ({ status: 410 }) });
    const start = clock.now().getTime();
    const ev = await publish(svc.ctx, p.merchant_id);
    await a.drain();
    const d = await deliveryOf(p, ev.event.id, ids['/gone']!);
    expect(d.state).toBe('failed_retrying');
    expect(d.attempts[0].status_code).toBe(410);
    expect(Date.parse(d.next_attempt_at)).toBe(Math.floor((start + RETRY_DELAYS_MS[0]!) / 1000) * 1000);
    const endpoint = await endpointOf(p, ids['/gone']!);
    expect(endpoint.status).toBe('enabled');
    expect(endpoint.paused_until).toBeNull();
    clock.set(start + RETRY_DELAYS_MS[0]!);
    await a.drain();
    expect(at(receiver, '/gone')).toHaveLength(2);
  });

  it('spec 8: Retry-After never changes the count and moves a retry by at most an hour: answered 503 with Retry-After of a day every time, the receiver gets 8 requests, each retry at the later of its delay and the hour', async () => {
    const { p, ids } = await setUp(['/always-busy']);
    routes(receiver, { '/always-busy': () => ({ status: 503, headers: { 'Retry-After': '86400' } }) });
    const ev = await publish(svc.ctx, p.merchant_id);
    const seconds = (ms: number) => Math.floor(ms / 1000) * 1000;
    let d = await deliveryOf(p, ev.event.id, ids['/always-busy']!);
    for (let i = 0; i < 12 && d.state !== 'exhausted'; i++) {
      const attemptAt = clock.now().getTime();
      await a.drain();
      d = await deliveryOf(p, ev.event.id, ids['/always-busy']!);
      expect(d.attempts, `after drain ${i}`).toHaveLength(i + 1);
      if (d.state === 'exhausted') break;
      expect(d.state).toBe('failed_retrying');
      // The later of the schedule's delay and the pause, itself capped at an hour after the answer.
      const expected = attemptAt + Math.max(RETRY_DELAYS_MS[i]!, RETRY_AFTER_MAX_MS);
      expect(Date.parse(d.next_attempt_at), `retry ${i + 1}`).toBe(seconds(expected));
      expect(expected - attemptAt).toBeLessThanOrEqual(RETRY_DELAYS_MS[i]! + RETRY_AFTER_MAX_MS);
      // Not a second early: the paused endpoint gets nothing before the retry is due.
      clock.set(Date.parse(d.next_attempt_at) - 1000);
      await b.drain();
      expect(at(receiver, '/always-busy')).toHaveLength(i + 1);
      clock.set(expected);
    }
    expect(d.state).toBe('exhausted');
    expect(d.attempts).toHaveLength(MAX_ATTEMPTS);
    expect(at(receiver, '/always-busy')).toHaveLength(MAX_ATTEMPTS);
    expect(d.attempts.every((x: { status_code: number }) => x.status_code === 503)).toBe(true);
  });
});

describe('max_requests_per_second', () => {
  let svc: TestService;
  let receiver: TestReceiver;
  let p: CreatedPlatform;

  beforeAll(async () => {
    svc = await startService({ allowPrivateUrls: true });
    p = await svc.platform();
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    await svc?.close();
  });

  const create = (path: string, extra: Record<string, unknown> = {}) =>
    svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url: `${new URL(receiver.url).origin}${path}`,
      enabled_events: ['*'],
      ...extra,
    });

  it('is null by default, set on create and update, cleared with null, and refused with a 400 naming it when not a whole number from 1 to 10000', async () => {
    const plain = await create('/plain');
    expect(plain.body.max_requests_per_second).toBeNull();
    const capped = await create('/capped-api', { max_requests_per_second: 20 });
    expect(capped.status).toBe(201);
    expect(capped.body.max_requests_per_second).toBe(20);
    const path = `/api/v1/webhook_endpoints/${capped.body.id}`;
    expect((await svc.api(p.keys.sandbox, 'PATCH', path, { max_requests_per_second: 5 })).body.max_requests_per_second).toBe(5);
    expect((await svc.api(p.keys.sandbox, 'GET', path)).body.max_requests_per_second).toBe(5);
    expect((await svc.api(p.keys.sandbox, 'PATCH', path, { max_requests_per_second: null })).body.max_requests_per_second).toBeNull();
    for (const bad of [0, -1, 1.5, 10_001, 'fast']) {
      const r = await svc.api(p.keys.sandbox, 'PATCH', path, { max_requests_per_second: bad });
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect(JSON.stringify(r.body.error), JSON.stringify(bad)).toContain('max_requests_per_second');
    }
    const r = await create('/bad', { max_requests_per_second: 0 });
    expect(r.status).toBe(400);
    // The API and the portal refuse the same values.
    await svc.api(p.keys.sandbox, 'DELETE', path);
    await svc.api(p.keys.sandbox, 'DELETE', `/api/v1/webhook_endpoints/${plain.body.id}`);
  });
});

describe('a pause reaches the other running workers', () => {
  let svc: TestService;
  let receiver: TestReceiver;
  let worker: DeliveryWorker;

  beforeAll(async () => {
    // One attempt per endpoint at a time, so a started worker holds a second row waiting locally.
    svc = await startService({ allowPrivateUrls: true, endpointConcurrency: 1 });
    receiver = await startReceiver();
    worker = svc.ctx.createWorker();
    await worker.start();
  });
  afterAll(async () => {
    await worker?.stop();
    await receiver?.close();
    await svc?.close();
  });

  const queueRow = async (deliveryId: string) =>
    (
      await svc.ctx.database.query<{ lease_token: string | null; due_at: Date }>(
        'SELECT lease_token, due_at FROM delivery_queue WHERE delivery_id = $1',
        [deliveryId],
      )
    )[0];

  it("spec 8: a pause another worker records (its NOTIFY) makes a started worker hand back the rows it holds for the endpoint, due at the pause's end, and send nothing more", async () => {
    const p = await svc.platform();
    const created = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url: `${new URL(receiver.url).origin}/held`,
      enabled_events: ['*'],
    });
    expect(created.status).toBe(201);
    // The first request is held open: meanwhile the worker holds the second row locally.
    let answerFirst = () => {};
    const held = new Promise<void>((resolve) => {
      answerFirst = resolve;
    });
    receiver.behave((_req, i) => (i === 0 ? { status: 200, until: held } : { status: 200 }));
    const events = [];
    for (let i = 0; i < 3; i++) events.push(await publish(svc.ctx, p.merchant_id));
    const deliveryIds: string[] = [];
    for (const e of events) {
      const r = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?event_id=${e.event.id}`);
      deliveryIds.push(r.body.data[0].id);
    }
    await receiver.waitFor(1);
    // Two rows leased by the worker: one in flight, one waiting for the endpoint's slot.
    await expect
      .poll(async () => (await Promise.all(deliveryIds.map(queueRow))).filter((q) => q?.lease_token).length, { timeout: 15_000 })
      .toBe(2);
    const waiting = (await Promise.all(deliveryIds.map(async (id) => ({ id, q: await queueRow(id) })))).find(
      (x, i) => i > 0 && x.q?.lease_token,
    )!;
    // What another worker does on a 429 with Retry-After: record the pause and NOTIFY it.
    const until = new Date(Math.ceil((Date.now() + 600_000) / 1000) * 1000);
    await pauseEndpoint(svc.ctx.database, created.body.id, until);
    // Only the notice can reach the waiting row: its lease keeps the database's update off it.
    await expect
      .poll(
        async () => {
          const q = await queueRow(waiting.id);
          return q === undefined ? 'not queued' : q.lease_token;
        },
        { timeout: 15_000 },
      )
      .toBeNull();
    expect((await queueRow(waiting.id))?.due_at.getTime()).toBe(until.getTime());
    // The held attempt is answered and recorded; nothing else was sent to the paused endpoint.
    answerFirst();
    await expect
      .poll(async () => (await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries/${deliveryIds[0]}`)).body.attempts.length, {
        timeout: 15_000,
      })
      .toBe(1);
    expect(receiver.requests).toHaveLength(1);
    for (const id of deliveryIds.slice(1)) expect((await queueRow(id))?.due_at.getTime()).toBe(until.getTime());
  });
});

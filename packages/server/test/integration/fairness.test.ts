import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { publish } from '../helpers/publish.ts';
import { THROTTLE_AFTER_TIMEOUTS } from '../../src/delivery/fairness.ts';
import { until } from '../helpers/wait.ts';

/**
 * Fair sharing of a worker (delivery/fairness.ts): one Platform's stuck endpoints hold at most
 * its share of the worker's slots while another Platform's deliveries go out, and an endpoint
 * that keeps timing out is throttled to one attempt at a time until it answers again.
 */

let svc: TestService;
const cleanup: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  svc = await startService({
    allowPrivateUrls: true,
    workerConcurrency: 20,
    endpointConcurrency: 2,
    platformShare: 0.5,
    attemptTimeoutMs: 400,
    pollIntervalMs: 50,
    retryScheduleMs: [50, 50, 50, 50, 50, 50, 50],
  });
});
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});
afterAll(async () => svc?.close());

/** A receiver that counts requests open at once and answers as `answer` says (never, by default). */
async function concurrencyReceiver() {
  let open = 0;
  let maxOpen = 0;
  let total = 0;
  let answer: ((res: ServerResponse) => void) | null = null;
  const held = new Set<ServerResponse>();
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    req.resume();
    total++;
    open++;
    // Counted a moment after arrival: an attempt the worker just abandoned may still be
    // closing on our side, and that is not concurrency.
    setTimeout(() => (maxOpen = Math.max(maxOpen, open)), 25);
    res.on('close', () => {
      open--;
      held.delete(res);
    });
    if (answer) answer(res);
    else held.add(res);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: (path: string) => `${base}/${path}`,
    get open() {
      return open;
    },
    get total() {
      return total;
    },
    /** The most requests open at once since the last reset. */
    takeMaxOpen() {
      const m = maxOpen;
      maxOpen = open;
      return m;
    },
    answerWith(fn: (res: ServerResponse) => void) {
      answer = fn;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

async function endpoint(key: string, url: string): Promise<string> {
  const r = await svc.api(key, 'POST', '/api/v1/webhook_endpoints', { url, enabled_events: ['*'] });
  expect(r.status).toBe(201);
  return r.body.id;
}

describe('fair sharing between Platforms', () => {
  it("a Platform's stuck endpoints hold at most its share of a worker while another Platform's deliveries go out", async () => {
    // Attempts to these last the whole deadline; with many due at once they would fill the worker.
    const svcLong = await startService({
      allowPrivateUrls: true,
      workerConcurrency: 20,
      endpointConcurrency: 2,
      platformShare: 0.5,
      attemptTimeoutMs: 30_000,
      leaseMs: 120_000,
      pollIntervalMs: 50,
    });
    cleanup.push(() => svcLong.close());
    const stuck = await concurrencyReceiver();
    cleanup.push(() => stuck.close());
    const healthy = await startReceiver();
    cleanup.push(() => healthy.close());
    const a = await svcLong.platform('Noisy');
    const b = await svcLong.platform('Quiet');
    for (let i = 0; i < 10; i++) {
      const r = await svcLong.api(a.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url: stuck.url(`a${i}`), enabled_events: ['*'] });
      expect(r.status).toBe(201);
    }
    // Platform A's 30 deliveries (10 endpoints x 3) are all due before B's first.
    for (let i = 0; i < 3; i++) await publish(svcLong.ctx, a.merchant_id);
    expect(
      (await svcLong.api(b.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url: healthy.url, enabled_events: ['*'] })).status,
    ).toBe(201);
    for (let i = 0; i < 5; i++) await publish(svcLong.ctx, b.merchant_id);

    const worker = svcLong.ctx.createWorker();
    await worker.start();
    cleanup.push(async () => {
      await stuck.close(); // cut held requests so stop() doesn't wait for the deadline
      await worker.stop();
    });
    await healthy.waitFor(5);
    // Without a share, A's 10 endpoints x 2 would hold all 20 slots and B would wait for the
    // deadline. With share 0.5, A holds exactly 10, and keeps to it.
    await until(() => stuck.open === 10, { interval: 20, message: "A's ten attempts to arrive" });
    await new Promise((r) => setTimeout(r, 300));
    expect(stuck.total).toBe(10);
    expect(stuck.takeMaxOpen()).toBe(10);
  });
});

describe('circuit breaker for endpoints that keep timing out', () => {
  it(`after ${THROTTLE_AFTER_TIMEOUTS} timeouts in a row an endpoint gets one attempt at a time and shows delivery_health throttled; its first answer lifts it`, async () => {
    const p = await svc.platform();
    const receiver = await concurrencyReceiver();
    cleanup.push(() => receiver.close());
    const id = await endpoint(p.keys.sandbox, receiver.url('slow'));
    const healthBefore = (await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${id}`)).body.delivery_health;
    expect(healthBefore).toEqual({ status: 'healthy', consecutive_timeouts: 0, throttled_since: null });

    for (let i = 0; i < 8; i++) await publish(svc.ctx, p.merchant_id);
    const worker = svc.ctx.createWorker();
    await worker.start();
    cleanup.push(() => worker.stop());

    // Cap 2 at first: two at once; once the timeouts add up, one at a time.
    await until(
      async () => (await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${id}`)).body.delivery_health.status === 'throttled',
      { interval: 20, message: 'throttled' },
    );
    const throttled = (await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${id}`)).body.delivery_health;
    expect(throttled.consecutive_timeouts).toBeGreaterThanOrEqual(THROTTLE_AFTER_TIMEOUTS);
    expect(throttled.throttled_since).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    // Let the attempts started before the throttle was seen finish, then watch a few probes.
    await until(() => receiver.open <= 1, { interval: 20, message: 'in-flight attempts down to one' });
    receiver.takeMaxOpen();
    const seen = receiver.total;
    await until(() => receiver.total >= seen + 4, { interval: 20, message: 'four more probes' });
    expect(receiver.takeMaxOpen()).toBe(1);

    // It answers again (slowly, so parallel attempts would overlap): the throttle lifts.
    receiver.answerWith((res) => setTimeout(() => res.end('ok'), 150));
    await until(
      async () => (await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${id}`)).body.delivery_health.status === 'healthy',
      { interval: 20, message: 'healthy again' },
    );
    const healed = (await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${id}`)).body.delivery_health;
    expect(healed).toEqual({ status: 'healthy', consecutive_timeouts: 0, throttled_since: null });
    receiver.takeMaxOpen();
    for (let i = 0; i < 6; i++) await publish(svc.ctx, p.merchant_id);
    await until(
      async () => {
        const d = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?endpoint_id=${id}&limit=100`);
        return d.body.data.every((x: { state: string }) => x.state === 'delivered');
      },
      { interval: 20, message: 'every delivery delivered' },
    );
    expect(receiver.takeMaxOpen()).toBe(2);
  });

  it('failing fast (an HTTP 500) is an answer: it never throttles, however many attempts fail', async () => {
    const p = await svc.platform();
    const receiver = await startReceiver(() => ({ status: 500, body: 'no' }));
    cleanup.push(() => receiver.close());
    const id = await endpoint(p.keys.sandbox, receiver.url);
    for (let i = 0; i < 5; i++) await publish(svc.ctx, p.merchant_id);
    await svc.ctx.createWorker().drain();
    expect(receiver.requests.length).toBeGreaterThanOrEqual(5);
    const health = (await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${id}`)).body.delivery_health;
    expect(health).toEqual({ status: 'healthy', consecutive_timeouts: 0, throttled_since: null });
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../../receiver/src/index.ts';
import { ManualClock, startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { publish } from '../helpers/publish.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';
import type { AutoDisableJob } from '../../src/endpoints/auto-disable.ts';

/**
 * An endpoint's health (endpoints/health.ts): healthy, failing once every attempt has failed for
 * PAYHOOKS_HEALTH_FAILING_AFTER, warned at half and 90 % of PAYHOOKS_AUTO_DISABLE_AFTER, disabled,
 * recovered at the first 2xx after; each change on the endpoint object and announced once as an
 * operational event, however many workers sweep, to the Platform's other endpoint, verified with
 * the receiver library. On the injected clock.
 */

const MIN = 60_000;
const HOUR = 60 * MIN;
const T0 = Date.UTC(2026, 11, 1, 9, 0, 0);
const clock = new ManualClock(T0);
let svc: TestService;
let worker: DeliveryWorker;
let sweepers: AutoDisableJob[];
let receiver: TestReceiver;
let down = true;

beforeAll(async () => {
  svc = await startService(
    {
      allowPrivateUrls: true,
      allowHttpUrls: true,
      retryScheduleMs: Array(7).fill(5 * MIN),
      autoDisableAfterMs: 4 * HOUR,
      healthFailingAfterMs: 15 * MIN,
      healthFailingAttempts: 3,
    },
    { clock },
  );
  worker = svc.ctx.createWorker();
  // Two workers' sweeps, run side by side each time.
  sweepers = [svc.ctx.createAutoDisableJob(), svc.ctx.createAutoDisableJob()];
  receiver = await startReceiver((req) => (req.path === '/shop' && down ? { status: 500, body: 'broken' } : { status: 200 }));
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

const at = (path: string) => receiver.url.replace('/webhooks', path);
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

describe('endpoint health', () => {
  let p: CreatedPlatform;
  let shop: { id: string };
  let ops: { id: string; secret: string };

  /** The operational events the ops endpoint got, each verified with the receiver library when it arrived. */
  const events: (string | number | null)[][] = [];
  function verifyArrivals() {
    const arrived = receiver.requests.filter((r) => r.path === '/ops');
    for (const r of arrived.slice(events.length)) {
      const event = verifyWebhook({ secret: ops.secret, body: r.raw, headers: r.headers as Record<string, string>, now: clock.now() });
      const object = event.data.object as { id: string; health: { state: string; warning: number | null } };
      expect(object.id).toBe(shop.id);
      events.push([event.type, object.health.state, object.health.warning]);
    }
  }
  const announced = () => events;

  /** The clock moves to `ms`; due attempts are made; both sweeps run at once; the events they sent are delivered. */
  async function step(ms: number) {
    clock.set(ms);
    await worker.drain();
    await Promise.all(sweepers.map((s) => s.runOnce()));
    await worker.drain();
    if (ops) verifyArrivals();
  }
  const health = async () => (await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${shop.id}`)).body.health;

  it('goes failing, warned at 50 and 90 %, disabled, then recovered, each once on the endpoint and as an event, with two workers sweeping', async () => {
    p = await svc.platform('Health');
    shop = (await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url: at('/shop'), enabled_events: ['payment.succeeded'] }))
      .body;
    ops = (
      await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
        url: at('/ops'),
        enabled_events: ['webhook_endpoint.failing', 'webhook_endpoint.disabled', 'webhook_endpoint.recovered'],
      })
    ).body;
    expect(await health()).toEqual({ state: 'healthy', since: expect.any(String), warning: null, disables_at: null });

    // Two payments' events fail every 5 minutes: 2 failed attempts at T0, 4 by T0+5m.
    await publish(svc.ctx, p.merchant_id);
    await publish(svc.ctx, p.merchant_id);
    await step(T0);
    await step(T0 + 5 * MIN);
    // 4 failures over 5 minutes: not failing yet (15 minutes are needed).
    expect((await health()).state).toBe('healthy');
    await step(T0 + 10 * MIN);
    await step(T0 + 15 * MIN);
    expect(await health()).toEqual({ state: 'failing', since: iso(T0), warning: null, disables_at: iso(T0 + 4 * HOUR) });
    expect(announced()).toEqual([['webhook_endpoint.failing', 'failing', null]]);

    // Half the auto-disable window: the first warning, once.
    await step(T0 + 2 * HOUR - MIN);
    expect((await health()).warning).toBeNull();
    await step(T0 + 2 * HOUR);
    await step(T0 + 2 * HOUR + MIN);
    expect(await health()).toMatchObject({ state: 'failing', warning: 50, disables_at: iso(T0 + 4 * HOUR) });
    // 90 %.
    await step(T0 + 3.6 * HOUR);
    expect((await health()).warning).toBe(90);
    expect(announced()).toEqual([
      ['webhook_endpoint.failing', 'failing', null],
      ['webhook_endpoint.failing', 'failing', 50],
      ['webhook_endpoint.failing', 'failing', 90],
    ]);

    // The window is over: auto-disable (16 failed attempts by now), announced as before.
    await step(T0 + 4 * HOUR);
    expect(await health()).toEqual({ state: 'disabled', since: iso(T0 + 4 * HOUR), warning: null, disables_at: null });
    expect(announced().at(-1)).toEqual(['webhook_endpoint.disabled', 'disabled', null]);

    // The merchant fixes its receiver and enables the endpoint: the next 2xx is a recovery.
    down = false;
    expect((await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${shop.id}`, { status: 'enabled' })).status).toBe(200);
    expect((await health()).state).toBe('failing');
    await publish(svc.ctx, p.merchant_id);
    await step(T0 + 5 * HOUR);
    expect(await health()).toEqual({ state: 'recovered', since: iso(T0 + 5 * HOUR), warning: null, disables_at: null });
    await step(T0 + 5 * HOUR + MIN);
    expect(announced()).toEqual([
      ['webhook_endpoint.failing', 'failing', null],
      ['webhook_endpoint.failing', 'failing', 50],
      ['webhook_endpoint.failing', 'failing', 90],
      ['webhook_endpoint.disabled', 'disabled', null],
      ['webhook_endpoint.recovered', 'recovered', null],
    ]);
    // A day later it reads healthy again, since its recovery.
    clock.set(T0 + 29 * HOUR + MIN);
    expect(await health()).toEqual({ state: 'healthy', since: iso(T0 + 5 * HOUR), warning: null, disables_at: null });
  });

  it('an endpoint whose attempts fail but not for long enough, or not often enough, stays healthy', async () => {
    const q = await svc.platform('Flaky');
    const start = clock.now().getTime();
    const flaky = (
      await svc.api(q.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url: at('/shop'), enabled_events: ['payment.succeeded'] })
    ).body;
    down = true;
    await publish(svc.ctx, q.merchant_id);
    await step(start);
    // One failure, then nothing for an hour: long enough, but one attempt is not three.
    await step(start + HOUR);
    const read = async () => (await svc.api(q.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${flaky.id}`)).body.health.state;
    expect(await read()).toBe('healthy');
    down = false;
    await step(start + HOUR + 5 * MIN);
    expect(await read()).toBe('healthy');
  });
});

import { afterAll, beforeAll, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { publish } from '../helpers/publish.ts';
import { until } from '../helpers/wait.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';

/**
 * A merchant's max_requests_per_second, held by two workers draining one endpoint's backlog on
 * one database (delivery/rate-cap.ts), measured at the receiver. PostgreSQL only: a fleet runs
 * on PostgreSQL, and the embedded database runs its queries on the worker's own thread, whose
 * stalls would bunch the requests (and the receiver's clock in this process) whatever the pacing.
 */
let svc: TestService;
let receiver: TestReceiver;
/** The capped endpoint's own host: the cap paces requests, not the neighbour's connections to a shared host. */
let cappedReceiver: TestReceiver;
let p: CreatedPlatform;

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true });
  p = await svc.platform();
  receiver = await startReceiver();
  cappedReceiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await cappedReceiver?.close();
  await svc?.close();
});

const at = (r: TestReceiver, path: string) => r.requests.filter((q) => q.path === path);

const create = (path: string, extra: Record<string, unknown>, on: TestReceiver) =>
  svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
    url: `${new URL(on.url).origin}${path}`,
    enabled_events: ['*'],
    ...extra,
  });

it('holds across two workers under a backlog: no one-second window at the receiver sees more than N (give or take one request of network jitter), the neighbour runs at full speed, and the log shows the wait', async () => {
  const N = 4;
  const EVENTS = 14;
  const capped = await create('/capped', { max_requests_per_second: N }, cappedReceiver);
  const free = await create('/free', {}, receiver);
  const workers = [svc.ctx.createWorker(), svc.ctx.createWorker()];
  // The backlog is in place before either worker runs.
  for (let i = 0; i < EVENTS; i++) await publish(svc.ctx, p.merchant_id);
  let cappedWhenFreeDone = -1;
  receiver.behave((req) => {
    if (req.path === '/free' && at(receiver, '/free').length === EVENTS) cappedWhenFreeDone = at(cappedReceiver, '/capped').length;
    return { status: 200 };
  });
  for (const w of workers) await w.start();
  try {
    await until(() => at(cappedReceiver, '/capped').length >= EVENTS, {
      message: () => `${at(cappedReceiver, '/capped').length} of ${EVENTS} capped requests`,
    });
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
  }
  const times = at(cappedReceiver, '/capped').map((r) => r.at);
  expect(times).toHaveLength(EVENTS);
  // Every window of one second that starts at an arrival (the busiest windows are among these).
  // Starts are paced at the sender; a request may arrive later than its start by a varying delay
  // (a new connection's handshake, a busy machine), so a second at the receiver may see one more
  // than N. Uncapped, the whole backlog arrives within one.
  const arrivals = `arrivals (ms after the first): ${times.map((t) => t - times[0]!).join(', ')}`;
  const busiest = Math.max(...times.map((t) => times.filter((u) => u >= t && u < t + 1000).length));
  expect(busiest, arrivals).toBeLessThanOrEqual(N + 1);
  // Over the whole run, never faster than N a second.
  expect((times.length - 1) / ((times.at(-1)! - times[0]!) / 1000), arrivals).toBeLessThanOrEqual(N);
  // The neighbour's whole backlog arrived while the capped endpoint was still being held back.
  expect(cappedWhenFreeDone).toBeGreaterThanOrEqual(0);
  expect(cappedWhenFreeDone).toBeLessThan(EVENTS);

  const log = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?endpoint_id=${capped.body.id}&limit=100`);
  const waits = log.body.data.map((d: { attempts: Array<{ rate_limited_ms: number | null }> }) => d.attempts[0]!.rate_limited_ms);
  expect(waits.every((w: number | null) => typeof w === 'number')).toBe(true);
  expect(Math.max(...waits)).toBeGreaterThan(0);
  const neighbour = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?endpoint_id=${free.body.id}&limit=100`);
  expect(
    neighbour.body.data.every((d: { attempts: Array<{ rate_limited_ms: number | null }> }) => d.attempts[0]!.rate_limited_ms === null),
  ).toBe(true);
});

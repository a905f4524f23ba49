import { afterAll, beforeAll, expect, it } from 'vitest';
import { ManualClock, startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { publish } from '../helpers/publish.ts';
import { maintainPartitions } from '../../src/db/retention.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';

/**
 * Compacting a closed week (docs/decisions/compact-closed-weeks.md) on a week written by the real
 * paths: events published (with and without idempotency keys), attempted by a worker (failures,
 * retries, an exhausted delivery), one replayed by hand (the portal's replay), all on the injected clock. After the
 * rebuild of each of the week's partitions, every read the API offers answers as before: the
 * delivery log with its filters and attempts, the events, an event by id, and a key's replay.
 */

const MIN = 60_000;
const DAY = 86_400_000;
const WEEK = Date.UTC(2031, 0, 6); // a Monday
const SUFFIX = '20310106';
const RETENTION = 30 * DAY;
/** The default schedule (2 d 14 h 36 min) plus the day's margin, after the week's end. */
const CLOSED = WEEK + 7 * DAY + (62 * 60 + 36) * MIN + DAY;
const TABLES = ['webhook_deliveries', 'events', 'delivery_attempts', 'event_idempotency_keys'];

const clock = new ManualClock(WEEK + 3_600_000);
let svc: TestService;
let worker: DeliveryWorker;
let receiver: TestReceiver;
let p: CreatedPlatform;
const endpoints: Record<string, string> = {};

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true, retentionMs: RETENTION }, { clock });
  await maintainPartitions(svc.ctx.database, { now: clock.now(), retentionMs: RETENTION });
  worker = svc.ctx.createWorker();
  receiver = await startReceiver((req) => (req.path === '/down' ? { status: 503 } : { status: 200 }));
  p = await svc.platform();
  for (const path of ['/up', '/down']) {
    const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url: `${new URL(receiver.url).origin}${path}`,
      enabled_events: ['*'],
    });
    expect(r.status).toBe(201);
    endpoints[path] = r.body.id;
  }
}, 60_000);
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

/** Every page of a list, following `starting_after`. */
async function all(path: string): Promise<unknown[]> {
  const out: { id: string }[] = [];
  for (;;) {
    const sep = path.includes('?') ? '&' : '?';
    const after = out.length ? `${sep}starting_after=${out.at(-1)!.id}` : '';
    const r = await svc.api(p.keys.sandbox, 'GET', `${path}${after}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    out.push(...r.body.data);
    if (!r.body.has_more) return out;
  }
}

/** What the API answers about the week, read the ways a merchant reads it. */
async function answers(eventIds: string[], deliveryId: string) {
  const up = endpoints['/up']!;
  const down = endpoints['/down']!;
  return {
    deliveries: await all('/api/v1/webhook_deliveries?limit=7'),
    upDelivered: await all(`/api/v1/webhook_deliveries?endpoint_id=${up}&state=delivered&limit=5`),
    downExhausted: await all(`/api/v1/webhook_deliveries?endpoint_id=${down}&state=exhausted&limit=5`),
    byType: await all('/api/v1/webhook_deliveries?type=payment.failed&limit=5'),
    failedEvents: await all('/api/v1/events?delivery_success=false&limit=5'),
    events: await all('/api/v1/events?limit=6'),
    someEvents: await Promise.all(
      eventIds.slice(0, 5).map(async (id) => (await svc.api(p.keys.sandbox, 'GET', `/api/v1/events/${id}`)).body),
    ),
    oneDelivery: (await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries/${deliveryId}`)).body,
  };
}

it('a week written by publish, attempts, retries and a replay answers every read the same after each partition is rebuilt', async () => {
  const eventIds: string[] = [];
  // Through the week: events every few hours, keyed every third, each drained with its retries.
  for (let i = 0; i < 24; i++) {
    clock.set(WEEK + 3_600_000 + i * 6 * 3_600_000);
    const r = await publish(svc.ctx, p.merchant_id, {
      type: i % 4 === 0 ? 'payment.failed' : 'payment.succeeded',
      idempotencyKey: i % 3 === 0 ? `order-${i}` : undefined,
    });
    eventIds.push(r.event.id);
    await worker.drain();
  }
  // The /down deliveries of the first events run out their schedule (still within the week's close).
  for (let t = WEEK + 3_600_000; t < WEEK + 10 * DAY; t += 6 * 3_600_000) {
    clock.set(t);
    await worker.drain();
  }
  const exhausted = await all(`/api/v1/webhook_deliveries?endpoint_id=${endpoints['/down']}&state=exhausted&limit=100`);
  expect(exhausted.length).toBeGreaterThan(0);
  // A replay by hand of one exhausted delivery (503 again: one more attempt in the log).
  const replayed = (exhausted[0] as { id: string }).id;
  const replay = await svc.ctx.deliveries.replay(
    { platformId: p.platform_id, environment: 'sandbox', actor: { type: 'operator' as const, id: 'test' } },
    replayed,
  );
  expect(replay.attempt_count).toBe(9);

  clock.set(CLOSED);
  const before = await answers(eventIds, replayed);
  expect(before.deliveries).toHaveLength(48);
  expect((before.oneDelivery as { attempts: unknown[] }).attempts).toHaveLength(9);

  // One partition per run, each of the four tables of the week.
  const rebuilt: string[] = [];
  for (let run = 0; run < TABLES.length; run++) {
    const r = await maintainPartitions(svc.ctx.database, { now: clock.now(), retentionMs: RETENTION });
    expect(r.compactFailed).toEqual([]);
    rebuilt.push(...r.compacted.map((c) => c.partition));
    expect(await answers(eventIds, replayed)).toEqual(before);
  }
  expect(rebuilt.sort()).toEqual(TABLES.map((t) => `${t}_p${SUFFIX}`).sort());
  // A key of the week still answers its event (as a replay), compacted key index and all.
  const again = await publish(svc.ctx, p.merchant_id, { idempotencyKey: 'order-3' });
  expect(again).toMatchObject({ replayed: true, deliveries: 0 });
  expect(again.event.id).toBe(eventIds[3]);
});

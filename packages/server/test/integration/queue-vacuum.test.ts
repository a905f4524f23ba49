import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { payment, publish } from '../helpers/publish.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';

/**
 * The worker vacuums `delivery_queue` itself after recording (delivery/queue-vacuum.ts): every
 * delivered row is deleted from the queue, and waiting for autovacuum would let the claim's
 * index scans step over their dead entries for up to a minute.
 */
let svc: TestService;
let p: CreatedPlatform;
let receiver: TestReceiver;
let worker: DeliveryWorker;

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true });
  p = await svc.platform();
  receiver = await startReceiver();
  const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url: receiver.url, enabled_events: ['*'] });
  expect(r.status).toBe(201);
  worker = svc.ctx.createWorker();
  await worker.start();
});
afterAll(async () => {
  await worker?.stop();
  await receiver?.close();
  await svc?.close();
});

/** Manual VACUUMs of the queue so far (autovacuum counts apart, in `autovacuum_count`). */
async function queueVacuums(): Promise<number> {
  const [row] = await svc.ctx.database.query<{ n: string }>(
    `SELECT coalesce(sum(vacuum_count), 0) AS n FROM pg_stat_user_tables WHERE relname = 'delivery_queue'`,
    [],
  );
  return Number(row!.n);
}

describe('queue vacuum', () => {
  it('the queue is never truncated by a vacuum (no ACCESS EXCLUSIVE lock stalling claims and publishes), autovacuum included', async () => {
    const [row] = await svc.ctx.database.query<{ options: string[] | string | null }>(
      `SELECT reloptions AS options FROM pg_class WHERE oid = 'delivery_queue'::regclass`,
      [],
    );
    const options = typeof row!.options === 'string' ? row!.options : (row!.options ?? []).join(',');
    expect(options).toContain('vacuum_truncate=false');
  });

  it('a worker that delivers vacuums the queue itself, without waiting for autovacuum', async () => {
    const before = await queueVacuums();
    for (let i = 0; i < 20; i++) await publish(svc.ctx, p.merchant_id, { object: payment() });
    for (let i = 0; i < 500 && receiver.requests.length < 20; i++) await new Promise((r) => setTimeout(r, 20));
    expect(receiver.requests.length).toBe(20);
    // The receiver has every request before the worker's batched write deletes the last rows.
    let queued = -1;
    for (let i = 0; i < 500 && queued !== 0; i++) {
      const [row] = await svc.ctx.database.query<{ n: string }>('SELECT count(*) AS n FROM delivery_queue', []);
      queued = Number(row!.n);
      if (queued !== 0) await new Promise((r) => setTimeout(r, 20));
    }
    expect(queued).toBe(0);
    let vacuums = before;
    for (let i = 0; i < 500 && vacuums === before; i++) {
      vacuums = await queueVacuums();
      if (vacuums === before) await new Promise((r) => setTimeout(r, 20));
    }
    expect(vacuums).toBeGreaterThan(before);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishEvent } from '../../src/events/publish.ts';
import { startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { payment, publish } from '../helpers/publish.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';
import { until } from '../helpers/wait.ts';

/**
 * When a running worker claims (delivery/worker.ts): on a publish's NOTIFY, and after a finished
 * attempt only if its last claim may have left due rows behind. The poll interval is set far
 * beyond the test's time limit, so only those two can move work here.
 */
let svc: TestService;
let p: CreatedPlatform;
let receiver: TestReceiver;
let worker: DeliveryWorker;

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true, endpointConcurrency: 2, workerConcurrency: 4, pollIntervalMs: 60_000 });
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

const settled = async () => {
  const [row] = await svc.ctx.database.query<{ n: string }>(
    `SELECT (SELECT count(*) FROM webhook_deliveries WHERE state = 'pending') + (SELECT count(*) FROM delivery_queue WHERE lease_token IS NOT NULL) AS n`,
    [],
  );
  return Number(row!.n) === 0;
};

describe('claiming on wake-ups', () => {
  it('a backlog far larger than one claim (one NOTIFY, caps of 2 per endpoint and 4 per worker) is delivered by completions re-claiming, without polling', async () => {
    const before = receiver.requests.length;
    // One transaction: one NOTIFY at commit for all 40 deliveries.
    await svc.ctx.database.db.transaction(async (tx) => {
      for (let i = 0; i < 40; i++) {
        await publishEvent(
          tx,
          { type: 'payment.succeeded', merchantId: p.merchant_id, environment: 'sandbox', object: payment({ id: `pay_backlog_${i}` }) },
          svc.ctx.clock.now(),
        );
      }
    });
    await until(() => receiver.requests.length - before >= 40, { interval: 20, message: '40 deliveries' });
    await until(settled, { interval: 20, message: 'the outcomes recorded' });
    expect(receiver.requests.length - before).toBe(40);
    expect(new Set(receiver.requests.slice(before).map((r) => r.headers['service-event-id'])).size).toBe(40);
  });

  it('an event published alone costs one claim: its completion does not claim again when the claim took everything due', async () => {
    await until(settled, { interval: 20, message: 'the backlog settled' });
    for (let i = 0; i < 5; i++) {
      const claims = worker.claims;
      const before = receiver.requests.length;
      const { event } = await publish(svc.ctx, p.merchant_id, { object: payment({ id: `pay_alone_${i}` }) });
      await until(() => receiver.requests.length > before, { interval: 20, message: 'the delivery' });
      await until(settled, { interval: 20, message: 'its outcome recorded' });
      expect(receiver.requests.at(-1)!.headers['service-event-id']).toBe(event.id);
      expect(worker.claims - claims).toBe(1);
    }
  });
});

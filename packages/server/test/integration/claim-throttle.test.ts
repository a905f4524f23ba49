import { afterAll, beforeAll, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.ts';
import { publish } from '../helpers/publish.ts';
import { claimDue, type ClaimedDelivery } from '../../src/delivery/claim.ts';
import { recordOutcomes, type Outcome } from '../../src/delivery/record.ts';
import { AttemptStats } from '../../src/delivery/attempt-stats.ts';
import { THROTTLE_AFTER_TIMEOUTS } from '../../src/delivery/fairness.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';

/**
 * The circuit breaker as the claim statement applies it, with no worker in between (the worker
 * also caps a throttled endpoint locally, which would hide a claim that got it wrong): the
 * recording statement sets the throttle after THROTTLE_AFTER_TIMEOUTS timeouts in a row, the
 * claim then takes one row of that endpoint per claim, and the endpoint's first answer lifts it.
 * The claim reads the throttled endpoints from a partial index (migration 0010), so this also
 * proves that index's condition says the same as the breaker's count.
 */
let svc: TestService;
let p: CreatedPlatform;
let slow: string;
let healthy: string;
const CAP = 4;
let clock = Date.now();

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true });
  p = await svc.platform();
  const create = async (url: string) => {
    const res = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url, enabled_events: ['*'] });
    expect(res.status).toBe(201);
    return res.body.id as string;
  };
  slow = await create('http://127.0.0.1:9/slow');
  healthy = await create('http://127.0.0.1:9/healthy');
  for (let i = 0; i < 8; i++) await publish(svc.ctx, p.merchant_id);
});
afterAll(async () => svc?.close());

async function claim(): Promise<ClaimedDelivery[]> {
  clock += 60_000;
  const now = new Date(clock);
  return claimDue(svc.ctx.database, {
    now,
    leaseUntil: new Date(clock + 30_000),
    limit: 50,
    perEndpoint: CAP,
    perPlatform: 50,
    excludeEndpoints: [],
    excludePlatforms: [],
    token: `tok-${clock}`,
  });
}

/** Records each claimed row: a timeout or an HTTP 500 (both retried at once), or a 200. */
async function record(rows: ClaimedDelivery[], answer: (row: ClaimedDelivery) => 'timeout' | 500 | 200): Promise<void> {
  const now = new Date(clock);
  const outcomes: Outcome[] = rows.map((row) => {
    const a = answer(row);
    return {
      deliveryId: row.id,
      endpointId: row.endpoint_id,
      token: `tok-${clock}`,
      trigger: 'automatic',
      state: a === 200 ? 'delivered' : 'failed_retrying',
      nextAttemptAt: a === 200 ? null : now,
      result: {
        succeeded: a === 200,
        startedAt: now,
        durationMs: a === 'timeout' ? 10_000 : 5,
        statusCode: a === 'timeout' ? null : a,
        responseBody: null,
        errorKind: a === 'timeout' ? 'timeout' : a === 500 ? 'http_status' : null,
        errorMessage: a === 'timeout' ? 'no answer in time' : null,
      },
    };
  });
  const recorded = await recordOutcomes(svc.ctx.database, outcomes, now, new AttemptStats());
  expect(recorded).toHaveLength(rows.length);
}

const of = (rows: ClaimedDelivery[], endpoint: string) => rows.filter((r) => r.endpoint_id === endpoint);

it(`fairness: after ${THROTTLE_AFTER_TIMEOUTS} timeouts in a row the claim takes one row of the endpoint at a time; its first answer lifts it`, async () => {
  expect(THROTTLE_AFTER_TIMEOUTS).toBeLessThanOrEqual(CAP);
  const first = await claim();
  expect(of(first, slow)).toHaveLength(CAP);
  expect(of(first, healthy)).toHaveLength(CAP);
  expect(first.every((r) => !r.endpoint_throttled)).toBe(true);
  await record(first, (r) => (r.endpoint_id === slow ? 'timeout' : 200));

  // Throttled: one row per claim, flagged; the healthy endpoint still gets its cap.
  for (let round = 0; round < 2; round++) {
    const rows = await claim();
    expect(of(rows, slow)).toHaveLength(1);
    expect(of(rows, slow)[0]!.endpoint_throttled).toBe(true);
    expect(of(rows, healthy).every((r) => !r.endpoint_throttled)).toBe(true);
    if (round === 0) expect(of(rows, healthy)).toHaveLength(8 - CAP);
    await record(rows, (r) => (r.endpoint_id === slow ? 'timeout' : 200));
  }

  // An answer, even a failing one, lifts the throttle.
  const probe = await claim();
  expect(of(probe, slow)).toHaveLength(1);
  await record(probe, () => 500);
  const after = await claim();
  expect(of(after, slow)).toHaveLength(CAP);
  expect(after.every((r) => !r.endpoint_throttled)).toBe(true);
});

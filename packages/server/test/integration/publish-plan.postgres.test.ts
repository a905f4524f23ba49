import { afterAll, beforeAll, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { startService, type TestService } from '../helpers/service.ts';
import { endpointsNobodyServes } from '../helpers/plan.ts';
import { publishEvent, publishEvents } from '../../src/events/publish.ts';
import { payment } from '../helpers/publish.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';

/**
 * Issue 11 (publishEvent at 2,000 events/s in one round trip): the publishing statement is a
 * named, prepared statement whose generic plan PostgreSQL chooses, so it is planned once per
 * connection instead of on every publish (planning was more than half its server time). The
 * choice is PostgreSQL's, made from cost estimates: a change to the statement that makes its
 * generic plan look dear (a `generate_series` with a parameter, a join over every partition)
 * silently brings planning back on every call. This test catches that.
 */
let svc: TestService;
let p: CreatedPlatform;
beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true });
  p = await svc.platform();
  await endpointsNobodyServes(svc, p.keys.sandbox, ['/a', '/b']);
});
afterAll(async () => svc?.close());

it('publishEvent is prepared once per connection and runs its generic plan (no planning per publish), with and without an idempotency key', async () => {
  const plans = await svc.ctx.database.db.transaction(async (tx) => {
    for (let i = 0; i < 24; i++) {
      const r = await publishEvent(
        tx,
        {
          type: 'payment.succeeded',
          merchantId: p.merchant_id,
          environment: 'sandbox',
          object: payment({ id: `pay_${i}` }),
          idempotencyKey: i % 2 ? `key-${i}` : undefined,
        },
        new Date(),
      );
      expect(r).toMatchObject({ deliveries: 2, replayed: false });
    }
    const replay = await publishEvent(
      tx,
      { type: 'payment.succeeded', merchantId: p.merchant_id, environment: 'sandbox', object: payment(), idempotencyKey: 'key-1' },
      new Date(),
    );
    expect(replay).toMatchObject({ deliveries: 0, replayed: true });
    expect(replay.event.data.object).toMatchObject({ id: 'pay_1' });
    // pg_prepared_statements is per session: the transaction's own connection.
    const r = (await tx.execute(
      sql`SELECT name, generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements
          WHERE name IN ('publish_event', 'publish_event_plain') ORDER BY name`,
    )) as unknown as { rows: Array<{ name: string; generic: number; custom: number }> };
    return r.rows;
  });
  // Without a key, the plain statement; with one (and for the replay), the full one: each as the
  // text for one event, which is the batches' text with the event's values bound as they are.
  expect(plans.map((p) => p.name)).toEqual(['publish_event', 'publish_event_plain']);
  for (const plan of plans) {
    // PostgreSQL plans the first five executions for their parameters, then compares.
    expect(plan.custom).toBeLessThanOrEqual(5);
    expect(plan.generic).toBeGreaterThanOrEqual(7);
  }
});

it('publishEvents (the internal API batches) is planned once per connection too: its generic plan, whatever the batch size', async () => {
  const plans = await svc.ctx.database.db.transaction(async (tx) => {
    for (let i = 0; i < 12; i++) {
      const n = 2 + (i % 4); // one event is publishEvent's statement, above
      const out = await publishEvents(
        tx,
        Array.from({ length: n }, (_, k) => ({
          type: 'payment.succeeded',
          merchantId: p.merchant_id,
          environment: 'sandbox' as const,
          object: payment({ id: `pay_b${i}_${k}` }),
          idempotencyKey: k % 2 ? `batch-key-${i}-${k}` : undefined,
        })),
        new Date(),
      );
      expect(out.every((o) => o.ok && o.result.deliveries === 2)).toBe(true);
    }
    const r = (await tx.execute(
      sql`SELECT generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements WHERE name = 'publish_events'`,
    )) as unknown as { rows: Array<{ generic: number; custom: number }> };
    return r.rows;
  });
  expect(plans).toHaveLength(1);
  expect(plans[0]!.custom).toBeLessThanOrEqual(5);
  expect(plans[0]!.generic).toBeGreaterThanOrEqual(7);
});

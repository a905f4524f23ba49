import { afterAll, beforeAll, expect, it } from 'vitest';
import pg from 'pg';
import { startService, type TestService } from '../helpers/service.ts';
import { payment } from '../helpers/publish.ts';
import { publishEvent } from '../../src/events/publish.ts';
import { CLAIM_SQL } from '../../src/delivery/claim.ts';
import { THROTTLE_AFTER_TIMEOUTS } from '../../src/delivery/fairness.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';

/**
 * Issue 11: the claim reads each claimed delivery's event by its full primary key (id,
 * created_at). Written as a plain join, PostgreSQL planned the lookup by created_at alone (it
 * equals the delivery's created_at) whenever the week's partition was small, so every claimed row
 * scanned the partition's whole index; in the reference benchmark that was about a fifth of a
 * claim. The plan depends on the table's statistics, so this test builds the state that showed
 * it (a young week: some hundreds of events, analysed) and reads the plan.
 */
let svc: TestService;
let p: CreatedPlatform;
beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true });
  p = await svc.platform();
  for (let i = 0; i < 10; i++)
    expect(
      (await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url: `http://127.0.0.1:9/e${i}`, enabled_events: ['*'] }))
        .status,
    ).toBe(201);
  for (let i = 0; i < 300; i++)
    await svc.ctx.database.db.transaction((tx) =>
      publishEvent(
        tx,
        { type: 'payment.succeeded', merchantId: p.merchant_id, environment: 'sandbox', object: payment() },
        new Date(Date.now() + i),
      ),
    );
  await svc.ctx.database.query('ANALYZE events', []);
  await svc.ctx.database.query('ANALYZE webhook_deliveries', []);
  await svc.ctx.database.query('ANALYZE delivery_queue', []);
});
afterAll(async () => svc?.close());

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Cond'?: string;
  'Actual Loops'?: number;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

it("the claim looks each claimed row's event up by id and created_at, never by created_at alone (a scan of the week's index)", async () => {
  const client = new pg.Client({ connectionString: svc.testDb.databaseUrl });
  await client.connect();
  try {
    await client.query('BEGIN');
    const now = new Date(Date.now() + 60_000);
    const { rows } = await client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>({
      text: `EXPLAIN (ANALYZE, FORMAT JSON) ${CLAIM_SQL}`,
      values: [now, [], 200, 50, 50, new Date(now.getTime() + 60_000), 'plan-test', [], THROTTLE_AFTER_TIMEOUTS, 50],
    });
    await client.query('ROLLBACK');
    const all = nodes(rows[0]!['QUERY PLAN'][0]!.Plan);
    // The partitions that were read (runtime pruning leaves the other weeks unexecuted).
    const eventScans = all.filter((n) => n['Relation Name']?.startsWith('events_') && (n['Actual Loops'] ?? 0) > 0);
    expect(eventScans.length).toBeGreaterThan(0);
    for (const scan of eventScans) {
      expect(scan['Node Type']).toMatch(/Index/);
      expect(scan['Index Cond']).toMatch(/\(id = /);
      expect(scan['Index Cond']).toMatch(/created_at = /);
    }
  } finally {
    await client.end();
  }
});

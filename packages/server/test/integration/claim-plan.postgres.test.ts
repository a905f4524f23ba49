import { afterAll, beforeAll, expect, it } from 'vitest';
import pg from 'pg';
import { startService, type TestService } from '../helpers/service.ts';
import { payment } from '../helpers/publish.ts';
import { publishEvent } from '../../src/events/publish.ts';
import { CLAIM } from '../../src/delivery/claim.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import { endpointsNobodyServes, planNodes, rowsRead, type PlanNode } from '../helpers/plan.ts';

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
  await endpointsNobodyServes(
    svc,
    p.keys.sandbox,
    Array.from({ length: 10 }, (_, i) => `/e${i}`),
  );
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

/** The claim's plan as executed (then rolled back): every node, and how many rows it claimed. */
async function claimPlan(): Promise<{ plan: PlanNode; all: PlanNode[]; claimed: number }> {
  const client = new pg.Client({ connectionString: svc.testDb.databaseUrl });
  await client.connect();
  try {
    await client.query('BEGIN');
    const now = new Date(Date.now() + 60_000);
    const { rows } = await client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>({
      text: `EXPLAIN (ANALYZE, FORMAT JSON) ${CLAIM.text}`,
      values: CLAIM.bind({
        now,
        exclude_endpoints: [],
        scan: 200,
        per_endpoint: 50,
        limit: 50,
        lease_until: new Date(now.getTime() + 60_000),
        token: 'plan-test',
        exclude_platforms: [],
        per_platform: 50,
      }),
    });
    await client.query('ROLLBACK');
    const plan = rows[0]!['QUERY PLAN'][0]!.Plan;
    return { plan, all: planNodes(plan), claimed: plan['Actual Rows'] ?? 0 };
  } finally {
    await client.end();
  }
}

it("the claim looks each claimed row's event up by id and created_at, never by created_at alone (a scan of the week's index)", async () => {
  const { all } = await claimPlan();
  // The partitions that were read (runtime pruning leaves the other weeks unexecuted).
  const eventScans = all.filter((n) => n['Relation Name']?.startsWith('events_') && (n['Actual Loops'] ?? 0) > 0);
  expect(eventScans.length).toBeGreaterThan(0);
  for (const scan of eventScans) {
    expect(scan['Node Type']).toMatch(/Index/);
    expect(scan['Index Cond']).toMatch(/\(id = /);
    expect(scan['Index Cond']).toMatch(/created_at = /);
  }
});

/**
 * Issue 11: the claim reads the endpoints of the rows it claims, and the throttled ones (migration
 * 0010), never the whole table. Joined to `webhook_endpoints` for the throttle, it was planned as
 * a hash join over every endpoint, on every claim: with 10,000 endpoints, 3.2 ms against 2.0 now.
 * Rows read count what a node returned and what its filters threw away, over all its loops.
 */
it('the claim reads only the endpoints it claims rows for, however many endpoints exist', async () => {
  // 3,000 more endpoints of another Platform (copies of a real one, by SQL for speed), a few of
  // them throttled, and statistics that know it.
  const other = await svc.platform('Other');
  const res = await svc.api(other.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
    url: 'http://127.0.0.1:9/x',
    enabled_events: ['*'],
  });
  expect(res.status).toBe(201);
  await svc.ctx.database.query(
    `INSERT INTO webhook_endpoints (id, platform_id, environment, url, enabled_events, secret_ciphertext, throttled_at, consecutive_timeouts)
     SELECT w.id || '_' || i, w.platform_id, w.environment, w.url, w.enabled_events, w.secret_ciphertext,
            CASE WHEN i <= 3 THEN now() END, CASE WHEN i <= 3 THEN 5 ELSE 0 END
     FROM webhook_endpoints w, generate_series(1, 3000) i WHERE w.id = $1`,
    [res.body.id],
  );
  await svc.ctx.database.query('ANALYZE webhook_endpoints', []);

  const { plan, claimed } = await claimPlan();
  expect(claimed).toBe(50);
  const read = rowsRead(plan, 'webhook_endpoints');
  // One per claimed row (its URL and secret) and the three throttled ones.
  expect(read).toBeGreaterThanOrEqual(claimed);
  expect(read).toBeLessThanOrEqual(claimed + 3);
});

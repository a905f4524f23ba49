import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { payment } from '../helpers/publish.ts';
import { planNodes, type PlanNode } from '../helpers/plan.ts';
import { maintainPartitions, weekStart, weekSuffix } from '../../src/db/retention.ts';
import { publishEvent } from '../../src/events/publish.ts';
import { PUBLISH } from '../../src/events/publish-statements.ts';
import { newId } from '../../src/ids.ts';
import { createPlatform, type CreatedPlatform } from '../../src/tenancy/platforms.ts';

/**
 * A keyed publish costs the same whatever the history kept (docs/decisions/event-key-window.md):
 * with 20 weeks of key partitions, its statement looks the key up in the previous week's
 * partition only, in its generic plan (the one PostgreSQL keeps) as in a custom one, and writes
 * in its own week (and the next in a week's last day).
 */

const DAY = 86_400_000;
const WEEK = 7 * DAY;
const WEEKS = 20;
const FIRST = Date.UTC(2031, 0, 6); // a Monday
const CURRENT = FIRST + (WEEKS - 1) * WEEK;

let testDb: TestDatabase;
let platform: CreatedPlatform;
const part = (week: number) => `event_idempotency_keys_p${weekSuffix(new Date(week))}`;

beforeAll(async () => {
  testDb = await createTestDatabase();
  platform = await createPlatform(testDb.database.db, 'Key window plan');
  // A year's retention: each weekly run makes its weeks ahead and drops none.
  for (let i = 0; i < WEEKS; i++) await maintainPartitions(testDb.database, { now: new Date(FIRST + i * WEEK), retentionMs: 365 * DAY });
});
afterAll(async () => testDb?.dispose());

/**
 * The keyed publish statement (`publish_event`, prepared on the transaction's connection by
 * publishEvent) under EXPLAIN ANALYZE for a fresh key at `at`, planned as `mode` says: the key
 * partitions its plan reads, and the partitions its key rows went to.
 */
async function explainKeyedPublish(at: number, mode: 'force_generic_plan' | 'force_custom_plan') {
  const key = `plan-${mode}-${at}`;
  return testDb.database.db.transaction(async (tx) => {
    const now = new Date(at);
    for (let i = 0; i < 6; i++)
      await publishEvent(
        tx,
        {
          type: 'payment.succeeded',
          merchantId: platform.merchant_id,
          environment: 'sandbox',
          object: payment(),
          idempotencyKey: `${key}-${i}`,
        },
        now,
      );
    await tx.execute(sql.raw(`SET LOCAL plan_cache_mode = ${mode}`));
    const lit = (v: string) => `'${v.replace(/'/g, "''")}'`;
    const values: Record<string, string> = {
      merchant_id: lit(platform.merchant_id),
      environment: `'sandbox'`,
      type: `'payment.succeeded'`,
      idem: lit(key),
      event_id: lit(newId('event')),
      body: `'{}'`,
      object_id: 'NULL',
      only_endpoint: 'NULL',
      copies: '1',
      wildcard: `'*'`,
      delivery_ids: `'{}'`,
      now: lit(now.toISOString()),
      notify_here: 'false',
      traceparent: 'NULL',
      week: lit(weekStart(now).toISOString()),
    };
    // In the statement's own parameter order.
    const params = PUBLISH.one.params.map((name) => values[name]);
    const r = (await tx.execute(sql.raw(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE publish_event(${params.join(', ')})`))) as unknown as {
      rows: { 'QUERY PLAN': unknown }[];
    };
    const raw = r.rows[0]!['QUERY PLAN'];
    const plan = ((typeof raw === 'string' ? JSON.parse(raw) : raw) as { Plan: PlanNode }[])[0]!.Plan;
    const read = planNodes(plan)
      .map((n) => n['Relation Name'])
      .filter((name): name is string => !!name && /^event_idempotency_keys_/.test(name));
    const written = (await tx.execute(
      sql`SELECT tableoid::regclass::text AS partition FROM event_idempotency_keys WHERE idempotency_key = ${key} ORDER BY week`,
    )) as unknown as { rows: { partition: string }[] };
    return { read: [...new Set(read)], written: written.rows.map((w) => w.partition) };
  });
}

describe('a keyed publish with 20 weeks of key partitions', () => {
  it.each(['force_generic_plan', 'force_custom_plan'] as const)(
    '%s, on a Tuesday: reads the previous week only, writes in its own week',
    async (mode) => {
      const at = CURRENT + DAY + 3_600_000;
      const { read, written } = await explainKeyedPublish(at, mode);
      expect(read).toEqual([part(CURRENT - WEEK)]);
      expect(written).toEqual([part(CURRENT)]);
    },
  );

  it.each(['force_generic_plan', 'force_custom_plan'] as const)(
    "%s, on the week's last day: reads the previous week only, writes in its own week and the next",
    async (mode) => {
      const at = CURRENT + 6 * DAY + 3_600_000;
      const { read, written } = await explainKeyedPublish(at, mode);
      expect(read).toEqual([part(CURRENT - WEEK)]);
      expect(written).toEqual([part(CURRENT), part(CURRENT + WEEK)]);
    },
  );
});

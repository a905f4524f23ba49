import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { payment } from '../helpers/publish.ts';
import { planNodes, type PlanNode } from '../helpers/plan.ts';
import { maintainPartitions, weekStart, weekSuffix } from '../../src/db/retention.ts';
import { createPlatform, type CreatedPlatform } from '../../src/tenancy/platforms.ts';

/**
 * The SQL outbox's keyed publish (`payhooks.publish_event(…, idempotency_key)`) costs the same
 * whatever the history kept, like the TypeScript path (event-key-window-plan.postgres.test.ts):
 * with 20 weeks of key partitions, the statements inside the function look the key up in the
 * previous week's partition only, through its index, in the plan PL/pgSQL keeps. The function's
 * inner plans are read with auto_explain (nested statements, reported to this session as
 * notices). The function takes the database's clock, so the weeks are laid out around today.
 */

const DAY = 86_400_000;
const WEEK = 7 * DAY;
const WEEKS = 20;
const CURRENT = weekStart(new Date()).getTime();

let testDb: TestDatabase;
let platform: CreatedPlatform;
let client: pg.Client;
const notices: string[] = [];
const part = (week: number) => `event_idempotency_keys_p${weekSuffix(new Date(week))}`;

beforeAll(async () => {
  testDb = await createTestDatabase();
  platform = await createPlatform(testDb.database.db, 'SQL key plan');
  for (let i = WEEKS - 1; i >= 0; i--)
    await maintainPartitions(testDb.database, { now: new Date(CURRENT - i * WEEK), retentionMs: 365 * DAY });
  client = new pg.Client({ connectionString: testDb.databaseUrl });
  await client.connect();
  client.on('notice', (n) => notices.push(n.message ?? ''));
  await client.query(`LOAD 'auto_explain'`);
  for (const setting of [
    'log_min_duration = 0',
    'log_analyze = on',
    'log_nested_statements = on',
    'log_format = json',
    "log_level = 'notice'",
  ])
    await client.query(`SET auto_explain.${setting}`);
});
afterAll(async () => {
  await client?.end();
  await testDb?.dispose();
});

/** The plans auto_explain reported since `from` for statements whose text contains `marker`. */
function plansOf(from: number, marker: string): PlanNode[] {
  return notices
    .slice(from)
    .map((n) => JSON.parse(n.slice(n.indexOf('{'))) as { 'Query Text': string; Plan: PlanNode })
    .filter((p) => p['Query Text'].includes(marker))
    .map((p) => p.Plan);
}

describe('payhooks.publish_event with a key, 20 weeks of key partitions kept', () => {
  it('the guard looks the key up in the previous week only, by index, in every call (the plan PL/pgSQL keeps included); a replay reads the window only', async () => {
    const call = (key: string) =>
      client.query('SELECT * FROM payhooks.publish_event($1, $2, $3, $4::json, $5)', [
        'payment.succeeded',
        platform.merchant_id,
        'sandbox',
        JSON.stringify(payment()),
        key,
      ]);
    const from = notices.length;
    // More than five calls: PL/pgSQL plans a statement for its values five times, then may keep a generic plan.
    for (let i = 0; i < 8; i++) await call(`sql-key-${i}`);
    const guards = plansOf(from, 'o.week = v_week');
    expect(guards.length, notices.slice(from).join('\n').slice(0, 2000)).toBe(8);
    for (const plan of guards) {
      const nodes = planNodes(plan);
      const keyReads = nodes.filter((n) => /^event_idempotency_keys_/.test(n['Relation Name'] ?? ''));
      // Executed scans only: a generic plan lists pruned partitions as never executed, or not at all.
      const executed = keyReads.filter((n) => n['Actual Loops'] !== 0);
      expect([...new Set(executed.map((n) => n['Relation Name']))]).toEqual([part(CURRENT - WEEK)]);
      for (const n of executed) expect(n['Node Type']).toMatch(/Index (Only )?Scan/);
    }
    // A replay: the key's event, found within its window (the previous, this and the next week).
    const replayFrom = notices.length;
    const replay = await call('sql-key-3');
    expect(replay.rows[0]).toMatchObject({ deliveries: 0, replayed: true });
    const [lookup] = plansOf(replayFrom, 'k.week >= v_week');
    expect(lookup).toBeDefined();
    const read = planNodes(lookup!)
      .filter((n) => /^event_idempotency_keys_/.test(n['Relation Name'] ?? '') && n['Actual Loops'] !== 0)
      .map((n) => n['Relation Name']);
    expect(read.length).toBeGreaterThan(0);
    for (const name of read) expect([part(CURRENT - WEEK), part(CURRENT), part(CURRENT + WEEK)]).toContain(name);
  });
});

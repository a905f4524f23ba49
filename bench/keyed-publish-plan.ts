/**
 * The keyed one-event publish statement on a seeded history, under EXPLAIN (ANALYZE, BUFFERS):
 * how many weekly key partitions its lookup reads and the buffers it touches. Deterministic where
 * a CPU timing on a shared machine is not; rolled back, so the history is left as it was.
 *
 *   npx tsx bench/growth/seed.ts postgres://postgres@127.0.0.1:5432/history 300000 20   # once, into a migrated database
 *   npx tsx --conditions=@payhooks/source bench/keyed-publish-plan.ts postgres://postgres@127.0.0.1:5432/history
 *
 * Publishes as `plt_growth01`'s first merchant (live), as bench/history-publish.ts does.
 */
import { sql } from 'drizzle-orm';
import { openDatabase } from '../packages/server/src/db/client.ts';
import { weekStart } from '../packages/server/src/db/retention.ts';
import { publishEvent } from '../packages/server/src/events/publish.ts';
import { PUBLISH } from '../packages/server/src/events/publish-statements.ts';
import { newId } from '../packages/server/src/ids.ts';
import { samplePayment } from './reference/sample-payment.ts';

const url = process.argv[2];
if (!url) throw new Error('usage: bench/keyed-publish-plan.ts <database url seeded by bench/growth/seed.ts>');
type PlanNode = { 'Relation Name'?: string; 'Shared Hit Blocks'?: number; 'Shared Read Blocks'?: number; Plans?: PlanNode[] };
const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];
const blocks = (n: PlanNode) => (n['Shared Hit Blocks'] ?? 0) + (n['Shared Read Blocks'] ?? 0);
class Rollback extends Error {}

const db = await openDatabase({ databaseUrl: url, poolSize: 1 });
try {
  await db.db.transaction(async (tx) => {
    const now = new Date();
    const run = Math.random().toString(36).slice(2);
    // Prepares `publish_event` on this connection (the statement publishEvent names), as a publisher's would be.
    for (let i = 0; i < 8; i++)
      await publishEvent(
        tx,
        {
          type: 'payment.succeeded',
          merchantId: 'mch_growth011',
          environment: 'live',
          object: samplePayment(i),
          idempotencyKey: `plan-${run}-${i}`,
        },
        now,
      );
    const lit = (v: string) => `'${v}'`;
    const ids = Array.from({ length: 8 }, () => newId('webhookDelivery'));
    const values: Record<string, string> = {
      merchant_id: lit('mch_growth011'),
      environment: lit('live'),
      type: lit('payment.succeeded'),
      idem: lit(`plan-${run}-x`),
      event_id: lit(newId('event')),
      body: lit('{}'),
      object_id: 'NULL',
      only_endpoint: 'NULL',
      copies: '1',
      wildcard: lit('*'),
      delivery_ids: lit(`{${ids.join(',')}}`),
      now: lit(now.toISOString()),
      notify_here: 'false',
      traceparent: 'NULL',
      week: lit(weekStart(now).toISOString()),
    };
    // In the statement's own parameter order.
    const params = PUBLISH.one.params.map((name) => values[name]);
    const r = (await tx.execute(
      sql.raw(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE publish_event(${params.join(', ')})`),
    )) as unknown as {
      rows: { 'QUERY PLAN': unknown }[];
    };
    const raw = r.rows[0]!['QUERY PLAN'];
    const plan = ((typeof raw === 'string' ? JSON.parse(raw) : raw) as { Plan: PlanNode }[])[0]!.Plan;
    const keyScans = nodes(plan).filter((n) => /^event_idempotency_keys_/.test(n['Relation Name'] ?? ''));
    console.log(
      JSON.stringify({
        key_partitions_read: keyScans.length,
        key_lookup_blocks: keyScans.reduce((s, n) => s + blocks(n), 0),
        statement_blocks: blocks(plan),
      }),
    );
    throw new Rollback();
  });
} catch (err) {
  if (!(err instanceof Rollback)) throw err;
} finally {
  await db.close();
}

/**
 * What webhook_deliveries' indexes cost to write: migration 0027's index set against the one
 * before it, on one scratch database, alternating (ABBA) so a shared machine weighs on both.
 *
 *   npx tsx --conditions=@payhooks/source bench/delivery-indexes.ts   # ROWS=50000 ROUNDS=4 PGURL=postgres://postgres@127.0.0.1:5432/postgres
 *
 * Each round empties the table, puts one index set in place (the table is empty, so that is
 * instant), then runs two statements under EXPLAIN (ANALYZE, WAL): ROWS deliveries inserted
 * pending as publishing writes them (one event per delivery, the current week), then all of them
 * updated to delivered with the columns record.ts sets (a state change is never a HOT update:
 * every index whose predicate holds gets the new row version). Prints, per set, the server time
 * and WAL bytes per delivery of each statement and the indexes' size per delivery. Set-based
 * statements, so per-delivery figures are index maintenance and heap work, without the round
 * trips and planning of the real one-event paths.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDatabase } from '../packages/server/src/db/client.ts';
import { migrate } from '../packages/server/src/db/migrate.ts';

const ROWS = Number(process.env.ROWS ?? 50_000);
const ROUNDS = Number(process.env.ROUNDS ?? 4);
const ADMIN = process.env.PGURL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** Before 0027 (0006, 0007, 0013, 0015) and after it. */
const SETS: Record<'before' | 'after', string[]> = {
  before: [
    'CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, created_at DESC)',
    `CREATE INDEX webhook_deliveries_unfinished_idx ON webhook_deliveries (state) WHERE state IN ('pending', 'failed_retrying')`,
    `CREATE INDEX webhook_deliveries_undelivered_idx ON webhook_deliveries (platform_id, environment, created_at DESC, event_id DESC)
       WHERE state <> 'delivered'`,
  ],
  after: [
    'CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, created_at DESC)',
    `CREATE INDEX webhook_deliveries_state_idx ON webhook_deliveries (state, platform_id, environment, created_at DESC, event_id DESC)
       WHERE state <> 'delivered'`,
  ],
};
const DROP = [
  'webhook_deliveries_endpoint_idx',
  'webhook_deliveries_unfinished_idx',
  'webhook_deliveries_undelivered_idx',
  'webhook_deliveries_state_idx',
];

const admin = new pg.Client({ connectionString: ADMIN });
await admin.connect();
const name = `bench_indexes_${randomBytes(4).toString('hex')}`;
await admin.query(`CREATE DATABASE ${name}`);
const url = new URL(ADMIN);
url.pathname = `/${name}`;
try {
  const database = await openDatabase({ databaseUrl: url.toString() });
  await migrate(database);
  await database.close();
  const c = new pg.Client({ connectionString: url.toString() });
  await c.connect();
  await c.query('SET session_replication_role = replica'); // no endpoint rows: the foreign key is not what is measured
  const sums = { before: [] as number[][], after: [] as number[][] };
  const order: Array<'before' | 'after'> = [];
  for (let r = 0; r < ROUNDS; r++) order.push(...(r % 2 === 0 ? (['before', 'after'] as const) : (['after', 'before'] as const)));
  for (const set of order) {
    await c.query('TRUNCATE webhook_deliveries');
    for (const idx of DROP) await c.query(`DROP INDEX IF EXISTS ${idx}`);
    for (const ddl of SETS[set]) await c.query(ddl);
    await c.query('CHECKPOINT'); // the first change to each page after a checkpoint writes the whole page to WAL: the same for both
    const run = async (text: string) => {
      const { rows } = await c.query(`EXPLAIN (ANALYZE, WAL, FORMAT JSON) ${text}`);
      const out = (rows[0] as { 'QUERY PLAN': [{ Plan: { 'WAL Bytes': number }; 'Execution Time': number }] })['QUERY PLAN'][0];
      return [out['Execution Time'], out.Plan['WAL Bytes']] as const;
    };
    const [insMs, insWal] = await run(
      `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, platform_id, environment, state, attempt_count, automatic_attempts,
                                       next_attempt_at, created_at, updated_at, event_type)
       SELECT 'whd_' || md5(i::text), 'evt_' || md5(i::text), 'we_bench' || (i % 4), 'plt_bench' || (i % 3), 'live', 'pending', 0, 0,
              now(), now() - (${ROWS} - i) * interval '1 ms', now(), 'payment.succeeded'
       FROM generate_series(1, ${ROWS}) i`,
    );
    const [updMs, updWal] = await run(
      `UPDATE webhook_deliveries SET state = 'delivered', attempt_count = 1, automatic_attempts = 1, next_attempt_at = NULL,
              last_attempt_at = now(), updated_at = now()`,
    );
    const { rows } = await c.query(`SELECT coalesce(sum(pg_relation_size(i.indexrelid)), 0)::bigint AS bytes
       FROM pg_inherits p JOIN pg_index i ON i.indrelid = p.inhrelid WHERE p.inhparent = 'webhook_deliveries'::regclass`);
    sums[set].push([insMs, insWal, updMs, updWal, Number(rows[0].bytes)]);
    process.stderr.write(`${set}: insert ${insMs.toFixed(0)} ms, update ${updMs.toFixed(0)} ms\n`);
  }
  await c.end();
  const per = (v: number) => v / ROWS;
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  for (const set of ['before', 'after'] as const) {
    const col = (k: number) => median(sums[set].map((s) => s[k]!));
    console.log(
      `${set.padEnd(6)} publish insert ${(per(col(0)) * 1000).toFixed(1)} µs, ${per(col(1)).toFixed(0)} B WAL; ` +
        `record update ${(per(col(2)) * 1000).toFixed(1)} µs, ${per(col(3)).toFixed(0)} B WAL; indexes ${per(col(4)).toFixed(0)} B per delivery (medians of ${ROUNDS})`,
    );
  }
} finally {
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}

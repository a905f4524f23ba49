/**
 * What delivery_attempts' keys cost: the index set before migration 0029 (primary key on
 * (id, delivery_created_at) and the unique key on (delivery_id, attempt_number,
 * delivery_created_at)) against the one after it (that unique key as the primary key, alone), on
 * one scratch database, alternating (ABBA) so a shared machine weighs on both; then what the
 * migration itself takes on a stored history.
 *
 *   npx tsx --conditions=@payhooks/source bench/attempt-indexes.ts   # ROWS=200000 ROUNDS=4 MIGRATE_ROWS=1000000 PGURL=postgres://postgres@127.0.0.1:5432/postgres
 *
 * 1. Each round empties the table, puts one set in place (the table is empty, so that is
 *    instant), and inserts ROWS attempts under EXPLAIN (ANALYZE, WAL) from a staging table made
 *    once: ids as record.ts makes them (`wha_` and 24 random base62 characters), 1.25 attempts per
 *    delivery (random `whd_` ids), the retries after the first attempts, the current week, a
 *    signature and a short body. Prints, per set, the server time and WAL bytes per attempt and
 *    the indexes' size per attempt. Set-based, so per-attempt figures are index maintenance and
 *    heap work, without the round trips and planning of the worker's batches.
 * 2. MIGRATE_ROWS attempts (0 skips it) over the three weekly partitions and the DEFAULT one,
 *    with the set before, then migration 0029 timed in a transaction rolled back (twice); then
 *    each partition's key built first with CREATE UNIQUE INDEX CONCURRENTLY, as the migration's
 *    comment tells an operator with a large history, and the migration timed again.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDatabase } from '../packages/server/src/db/client.ts';
import { listMigrations, migrate } from '../packages/server/src/db/migrate.ts';

const ROWS = Number(process.env.ROWS ?? 200_000);
const ROUNDS = Number(process.env.ROUNDS ?? 4);
const MIGRATE_ROWS = Number(process.env.MIGRATE_ROWS ?? 1_000_000);
const ADMIN = process.env.PGURL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const SETS: Record<'before' | 'after', string> = {
  before: `ALTER TABLE delivery_attempts ADD CONSTRAINT delivery_attempts_pkey PRIMARY KEY (id, delivery_created_at),
             ADD CONSTRAINT delivery_attempts_delivery_attempt_number_key UNIQUE (delivery_id, attempt_number, delivery_created_at)`,
  after:
    'ALTER TABLE delivery_attempts ADD CONSTRAINT delivery_attempts_pkey PRIMARY KEY (delivery_id, attempt_number, delivery_created_at)',
};
const DROP = `ALTER TABLE delivery_attempts DROP CONSTRAINT IF EXISTS delivery_attempts_pkey,
                DROP CONSTRAINT IF EXISTS delivery_attempts_delivery_attempt_number_key`;
const migration = listMigrations().find((m) => m.id === 29);
if (!migration) throw new Error('migration 0029 not found');

/** `n` attempts as record.ts writes them, into `table`; `createdAt`: SQL for a delivery's created_at from its number `g`. */
const STAGE = (table: string, n: number, createdAt: string) => `
  CREATE UNLOGGED TABLE ${table} AS
  WITH b62 AS (SELECT '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz' AS a),
  d AS (
    SELECT g, 'whd_' || (SELECT string_agg(substr(a, 1 + floor(random() * 62)::int, 1), '') FROM b62, generate_series(1, 24) WHERE g > 0) AS id,
           ${createdAt} AS created_at
    FROM generate_series(1, ceil(${n} / 1.25)::int) g
  ), a AS (
    SELECT d.*, k.n FROM d CROSS JOIN LATERAL (SELECT 1 AS n UNION ALL SELECT 2 WHERE d.g % 4 = 0) k
  )
  SELECT 'wha_' || (SELECT string_agg(substr(b62.a, 1 + floor(random() * 62)::int, 1), '') FROM b62, generate_series(1, 24) WHERE a.g > 0) AS id,
         a.id AS delivery_id, a.n AS attempt_number, 'automatic' AS trigger, true AS succeeded, a.created_at + a.n * interval '1 s' AS started_at,
         42 AS duration_ms, 200 AS status_code, '{"received":true}' AS response_body, a.created_at AS delivery_created_at,
         't=' || extract(epoch FROM a.created_at)::bigint || ',v1=' || md5(a.id) || md5(a.id || 'x') AS request_signature
  FROM a ORDER BY a.n, a.g LIMIT ${n}`;
/** This week's Monday 00:00 UTC, where the migrations made the first weekly partition. */
const MONDAY = `(date_trunc('week', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')`;
const INSERT = (
  from: string,
) => `INSERT INTO delivery_attempts (id, delivery_id, attempt_number, trigger, succeeded, started_at, duration_ms,
       status_code, response_body, delivery_created_at, request_signature) SELECT * FROM ${from}`;

const admin = new pg.Client({ connectionString: ADMIN });
await admin.connect();
const name = `bench_attempts_${randomBytes(4).toString('hex')}`;
await admin.query(`CREATE DATABASE ${name}`);
const url = new URL(ADMIN);
url.pathname = `/${name}`;
try {
  const database = await openDatabase({ databaseUrl: url.toString() });
  await migrate(database);
  await database.close();
  const c = new pg.Client({ connectionString: url.toString() });
  await c.connect();
  const seconds = async (text: string) => {
    const t0 = performance.now();
    await c.query(text);
    return (performance.now() - t0) / 1000;
  };

  // 1. Writing.
  await c.query(STAGE('stage', ROWS, `${MONDAY} + g * interval '1 ms'`));
  const sums = { before: [] as number[][], after: [] as number[][] };
  const order: Array<'before' | 'after'> = [];
  for (let r = 0; r < ROUNDS; r++) order.push(...(r % 2 === 0 ? (['before', 'after'] as const) : (['after', 'before'] as const)));
  for (const set of order) {
    await c.query('TRUNCATE delivery_attempts');
    await c.query(DROP);
    await c.query(SETS[set]);
    await c.query('CHECKPOINT'); // the first change to each page after a checkpoint writes the whole page to WAL: the same for both
    const { rows: plan } = await c.query(`EXPLAIN (ANALYZE, WAL, FORMAT JSON) ${INSERT('stage')}`);
    const out = (plan[0] as { 'QUERY PLAN': [{ Plan: { 'WAL Bytes': number }; 'Execution Time': number }] })['QUERY PLAN'][0];
    const { rows } = await c.query(`SELECT coalesce(sum(pg_relation_size(i.indexrelid)), 0)::bigint AS bytes
       FROM pg_inherits p JOIN pg_index i ON i.indrelid = p.inhrelid WHERE p.inhparent = 'delivery_attempts'::regclass`);
    sums[set].push([out['Execution Time'], out.Plan['WAL Bytes'], Number(rows[0].bytes)]);
    process.stderr.write(`${set}: insert ${out['Execution Time'].toFixed(0)} ms\n`);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  for (const set of ['before', 'after'] as const) {
    const col = (k: number) => median(sums[set].map((s) => s[k]!)) / ROWS;
    console.log(
      `${set.padEnd(6)} insert ${(col(0) * 1000).toFixed(2)} µs, ${col(1).toFixed(0)} B WAL, indexes ${col(2).toFixed(1)} B per attempt (medians of ${ROUNDS}, ${ROWS} attempts)`,
    );
  }

  // 2. The migration on a stored history.
  if (MIGRATE_ROWS > 0) {
    await c.query('TRUNCATE delivery_attempts');
    await c.query(DROP);
    await c.query(SETS.before);
    // Three weeks from this Monday (the migrations' partitions), one attempt in 50 years before them (DEFAULT).
    await c.query(
      STAGE(
        'history',
        MIGRATE_ROWS,
        `CASE WHEN g % 50 = 0 THEN ${MONDAY} - interval '5 years' ELSE ${MONDAY} END + g * ${Math.floor((3 * 7 * 86_400_000) / Math.ceil(MIGRATE_ROWS / 1.25))} * interval '1 ms'`,
      ),
    );
    await c.query(INSERT('history'));
    await c.query('DROP TABLE history, stage');
    await c.query('VACUUM ANALYZE delivery_attempts');
    const { rows: parts } = await c.query<{ relname: string; n: string }>(
      `SELECT c.relname, (SELECT count(*) FROM delivery_attempts a WHERE a.tableoid = c.oid) AS n
       FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid WHERE h.inhparent = 'delivery_attempts'::regclass ORDER BY 1`,
    );
    console.log(`history: ${parts.map((p) => `${p.relname} ${p.n}`).join(', ')}`);
    const perMillion = (s: number) => ((s * 1_000_000) / MIGRATE_ROWS).toFixed(2);
    const timedMigration = async () => seconds(`BEGIN; ${migration.sql}; ROLLBACK`);
    const plain = [await timedMigration(), await timedMigration()];
    let prebuild = 0;
    for (const p of parts) {
      prebuild += await seconds(
        `CREATE UNIQUE INDEX CONCURRENTLY ${p.relname}_key_next ON ${p.relname} (delivery_id, attempt_number, delivery_created_at)`,
      );
    }
    const adopting = await timedMigration();
    console.log(
      `migration 0029 on ${MIGRATE_ROWS} attempts: ${plain.map((s) => s.toFixed(2)).join(' s, ')} s (${plain.map(perMillion).join(', ')} s per million); ` +
        `prebuilt CONCURRENTLY first: ${prebuild.toFixed(2)} s (${perMillion(prebuild)} s per million, writes go on), then the migration ${adopting.toFixed(3)} s`,
    );
  }
  await c.end();
} finally {
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}

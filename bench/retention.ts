/**
 * Retention benchmark (issue 10 item 3), on real PostgreSQL with 10 million attempt rows.
 *
 *   npx tsx bench/retention.ts [--attempts 10000000] [--weeks 10] [--save name]
 *
 * 1. A scratch database at main's schema before 0007 (migrations up to 0006) is filled with
 *    set-based SQL (generate_series): `--attempts / 4` events over `--weeks` weeks ending now,
 *    one delivery each, 4 attempts per delivery, 20 endpoints.
 * 2. Before: the purge of the oldest week by DELETE (timed, rolled back).
 * 3. A file-level copy (CREATE DATABASE … TEMPLATE) is converted by migration 0007 (timed: the
 *    copy of every row into weekly partitions and the queue).
 * 4. Claim/record latency (the worker's two hot statements, batches of 10, 200 measured after 20
 *    warm-up batches, 2,200 due deliveries on top) on both databases side by side, in
 *    alternating rounds: before with main's statements of the time (read from git history at
 *    run time, unnamed as main ran them: see legacyStatements), after with this tree's (delivery_queue, named prepared statements). Then the purge
 *    of the same week by maintainPartitions (DROP of its three partitions), and the rounds again.
 * Table sizes are reported for the arithmetic in docs/performance.md.
 *
 * $BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres) is where the scratch
 * database is created; it is dropped at the end.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { openDatabase, type Database } from '../packages/server/src/db/client.ts';
import { listMigrations, migrate } from '../packages/server/src/db/migrate.ts';
import { claimDue } from '../packages/server/src/delivery/claim.ts';
import { recordOutcomes } from '../packages/server/src/delivery/record.ts';
import { AttemptStats } from '../packages/server/src/delivery/attempt-stats.ts';
import { maintainPartitions, weekStart } from '../packages/server/src/db/retention.ts';
import { createPgDatabase } from '../packages/server/test/helpers/database.ts';

const { values: args } = parseArgs({
  options: {
    attempts: { type: 'string', default: '10000000' },
    weeks: { type: 'string', default: '10' },
    save: { type: 'string' },
  },
});
const ATTEMPTS = Number(args.attempts);
const WEEKS = Number(args.weeks);
const EVENTS = Math.floor(ATTEMPTS / 4);
const DAY = 86_400_000;
/** Claim/record rounds per schema, alternating. */
const ROUNDS = 5;
const WEEK = 7 * DAY;

/**
 * The claim and record statements main ran before migration 0007, for the "before" side. History
 * belongs in git, not in copies in the tree: they are read from the commit that last had them
 * (`bench/legacy/` at LEGACY_COMMIT) into a scratch folder beside this file, so their relative
 * imports of the server's sources resolve, and imported from there.
 */
const LEGACY_COMMIT = '7205cfa';
async function legacyStatements(): Promise<{ claimDue: typeof claimDue; recordOutcomes: typeof recordOutcomes }> {
  const dir = new URL('./.legacy-statements/', import.meta.url);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const file of ['claim.ts', 'record.ts', 'interrupted.ts']) {
    const text = execFileSync('git', ['show', `${LEGACY_COMMIT}:bench/legacy/${file}`], { encoding: 'utf8' });
    writeFileSync(new URL(file, dir), text);
  }
  const [claim, record] = await Promise.all([import(new URL('claim.ts', dir).href), import(new URL('record.ts', dir).href)]);
  rmSync(dir, { recursive: true, force: true }); // loaded: nothing of the past stays in the tree
  return { claimDue: claim.claimDue, recordOutcomes: record.recordOutcomes };
}
const { claimDue: legacyClaimDue, recordOutcomes: legacyRecordOutcomes } = await legacyStatements();

const adminUrl = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const scratch = await createPgDatabase(adminUrl, 'payhooks_bench_retention');
let database = await openDatabase({ databaseUrl: scratch.url, poolSize: 4 });
/** The partitioned copy (made from the loaded database, then migrated). */
let copy: { url: string; drop(): Promise<void> } | null = null;
let after: Database | null = null;
const out: Record<string, unknown> = {
  date: new Date().toISOString(),
  machine: { cpus: cpus().length, cpu: cpus()[0]?.model, memory_gib: Math.round(totalmem() / 2 ** 30), node: process.version },
  attempts: ATTEMPTS,
  events: EVENTS,
  deliveries: EVENTS,
  weeks: WEEKS,
};
const log = (msg: string) => process.stdout.write(`${new Date().toISOString().slice(11, 19)} ${msg}\n`);
const run = (text: string, db: Database = database) => db.script((r) => r(text));
async function timed<T>(what: string, fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = performance.now();
  const value = await fn();
  const ms = Math.round(performance.now() - t0);
  log(`${what}: ${ms} ms`);
  return { ms, value };
}

// The end of the data is now; the oldest week is the one purged.
const now = new Date();
const firstWeek = new Date(weekStart(now).getTime() - (WEEKS - 1) * WEEK);
const span = now.getTime() - firstWeek.getTime();
const ts = (ms: number) => `'${new Date(ms).toISOString()}'::timestamptz`;

try {
  // 1. The schema before partitioning, and the data.
  (out as { postgres?: unknown }).postgres = (await run('SHOW server_version'))[0]?.server_version;
  await database.script(async (r) => {
    await r(`CREATE TABLE payhooks_migrations (id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    for (const m of listMigrations().filter((m) => m.id <= 6)) {
      await r(m.sql);
      await r(`INSERT INTO payhooks_migrations (id, name) VALUES (${m.id}, '${m.name}')`);
    }
    await r(`INSERT INTO platforms (id, name) VALUES ('plt_bench', 'Bench')`);
    await r(`INSERT INTO merchants (id, platform_id, name) VALUES ('mch_bench', 'plt_bench', 'Bench')`);
    await r(`INSERT INTO webhook_endpoints (id, platform_id, environment, url, enabled_events, status, secret_ciphertext)
      SELECT 'we_bench' || lpad(g::text, 2, '0'), 'plt_bench', 'live', 'https://merchant.example/hook/' || g, '{*}', 'enabled', 'x' FROM generate_series(0, 19) g`);
  });
  const step = span / EVENTS;
  const load = await timed(`load ${EVENTS} events, ${EVENTS} deliveries, ${ATTEMPTS} attempts`, async () => {
    // Secondary indexes are built after the load (faster than maintaining them row by row).
    const secondary = (
      await run(`SELECT c.relname, pg_get_indexdef(i.indexrelid) AS def FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      WHERE i.indrelid IN ('events'::regclass, 'webhook_deliveries'::regclass, 'delivery_attempts'::regclass)
        AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)`)
    ).map((r) => ({ name: String(r.relname), def: String(r.def) }));
    for (const ix of secondary) await run(`DROP INDEX ${ix.name}`);
    // A body of about 700 bytes, like a payment.succeeded envelope.
    await run(`INSERT INTO events (id, platform_id, environment, merchant_id, type, body, created_at)
      SELECT 'evt_' || lpad(g::text, 10, '0'), 'plt_bench', 'live', 'mch_bench', 'payment.succeeded',
             '{"id":"evt_' || lpad(g::text, 10, '0') || '","object":"event","type":"payment.succeeded","api_version":"2026-01-01","data":{"object":{"id":"pay_' || md5(g::text) ||
             '","object":"payment","status":"succeeded","amount":"125.00","asset_code":"USDC.ETH","metadata":{"order":"' || md5((g + 1)::text) || '","account":"' || md5((g + 2)::text) ||
             '","note":"' || md5((g + 3)::text) || md5((g + 4)::text) || md5((g + 5)::text) || md5((g + 6)::text) || md5((g + 7)::text) || '"}}},"created":' || g || '}',
             ${ts(firstWeek.getTime())} + (g * ${step}) * interval '1 millisecond'
      FROM generate_series(1, ${EVENTS}) g`);
    await run(`INSERT INTO webhook_deliveries (id, event_id, endpoint_id, platform_id, environment, state, attempt_count, automatic_attempts,
                 next_attempt_at, due_at, last_attempt_at, created_at, updated_at)
      SELECT 'whd_' || substr(e.id, 5), e.id, 'we_bench' || lpad((substr(e.id, 5)::bigint % 20)::text, 2, '0'), 'plt_bench', 'live', 'delivered', 4, 4,
             NULL, NULL, e.created_at + interval '36 minutes', e.created_at, e.created_at + interval '36 minutes'
      FROM events e`);
    await run(`INSERT INTO delivery_attempts (id, delivery_id, attempt_number, trigger, succeeded, started_at, duration_ms, status_code, response_body, error_kind)
      SELECT 'att_' || substr(d.id, 5) || k, d.id, k, 'automatic', k = 4, d.created_at + (k - 1) * interval '12 minutes', 40 + k, CASE WHEN k = 4 THEN 200 ELSE 503 END,
             CASE WHEN k = 4 THEN '{"received":true}' ELSE 'Service Unavailable' END, CASE WHEN k = 4 THEN NULL ELSE 'http_status' END
      FROM webhook_deliveries d CROSS JOIN generate_series(1, 4) k`);
    for (const ix of secondary) await run(ix.def);
    await database.query('VACUUM ANALYZE', []);
  });
  out.load_ms = load.ms;

  const sizes = async (db: Database = database) => {
    // Tables with their indexes and TOAST, summed over partitions (a partitioned parent itself is 0 bytes).
    const rows = await run(
      `SELECT t, CASE WHEN c.relkind = 'p'
             THEN (SELECT sum(pg_total_relation_size(p.relid)) FROM pg_partition_tree(t::regclass) p)
             ELSE pg_total_relation_size(t::regclass) END AS bytes
      FROM unnest(ARRAY['events', 'webhook_deliveries', 'delivery_attempts']) t JOIN pg_class c ON c.oid = t::regclass`,
      db,
    );
    return Object.fromEntries(rows.map((r) => [String(r.t), Number(r.bytes)]));
  };
  out.sizes_before = await sizes();
  log(`sizes: ${JSON.stringify(out.sizes_before)}`);

  out.postgres_settings = Object.fromEntries(
    (
      await run(
        `SELECT name, setting FROM pg_settings WHERE name IN ('shared_buffers', 'work_mem', 'max_wal_size', 'synchronous_commit', 'plan_cache_mode')`,
      )
    ).map((r) => [String(r.name), String(r.setting)]),
  );

  // 2. The purge by DELETE, before partitioning.
  const oldestEnd = new Date(firstWeek.getTime() + WEEK);
  const del = await timed('purge of the oldest week by DELETE (rolled back)', () =>
    database.script(async (r) => {
      const counts =
        await r(`WITH d AS (DELETE FROM webhook_deliveries WHERE created_at < ${ts(oldestEnd.getTime())} RETURNING id, event_id),
        a AS (DELETE FROM delivery_attempts USING d WHERE delivery_attempts.delivery_id = d.id RETURNING 1),
        e AS (DELETE FROM events USING d WHERE events.id = d.event_id RETURNING 1)
        SELECT (SELECT count(*) FROM a) AS attempts, (SELECT count(*) FROM d) AS deliveries, (SELECT count(*) FROM e) AS events`);
      await r('ROLLBACK; BEGIN'); // measure, keep the rows: the same week is dropped below
      return counts[0];
    }),
  );
  out.purge_delete_ms = del.ms;
  out.purged_rows = del.value;
  log(`rows in that week: ${JSON.stringify(del.value)}`);

  // 3. A file-level copy of the loaded database, converted by migration 0007, so both schemas
  //    can be measured side by side (rounds alternate, so a busy machine weighs on both alike).
  await database.close();
  copy = await copyDatabase(scratch.url);
  database = await openDatabase({ databaseUrl: scratch.url, poolSize: 4 });
  after = await openDatabase({ databaseUrl: copy.url, poolSize: 4 });
  const partitioned = after;
  const mig = await timed('migration 0007 (copy into weekly partitions)', async () => {
    await migrate(partitioned);
    await partitioned.query('VACUUM ANALYZE', []);
  });
  out.migration_ms = mig.ms;
  out.sizes_partitioned = await sizes(partitioned);
  out.partitions = Number(
    (await run(`SELECT count(*) AS n FROM pg_inherits WHERE inhparent = 'delivery_attempts'::regclass`, partitioned))[0]!.n,
  );

  // 4. Claim/record on both, alternating rounds; then the purge by DROP, and again.
  const rounds = async (label: string) => {
    const before: Samples = { claims: [], records: [] };
    const part: Samples = { claims: [], records: [] };
    for (let i = 0; i < ROUNDS; i++) {
      merge(before, await hotPath(database, 'unpartitioned'));
      merge(part, await hotPath(partitioned, label));
    }
    return { unpartitioned: summary(before, 'unpartitioned'), partitioned: summary(part, label) };
  };
  const first = await rounds('partitioned');
  out.hot_path_before_main = first.unpartitioned;
  out.hot_path_after_queue_partitioned = first.partitioned;
  const retentionMs = now.getTime() + 60_000 - oldestEnd.getTime(); // exactly the oldest week is past the window
  const drop = await timed('purge of the oldest week by dropping its partitions (maintainPartitions)', () =>
    maintainPartitions(partitioned, { now: new Date(now.getTime() + 60_000), retentionMs }),
  );
  out.purge_drop_ms = drop.ms;
  out.purge_drop_result = drop.value;
  const second = await rounds('partitioned, after the purge');
  out.hot_path_before_main_second = second.unpartitioned;
  out.hot_path_after_queue_partitioned_after_purge = second.partitioned;
  out.sizes_after_purge = await sizes(partitioned);
} finally {
  await database.close();
  await after?.close();
  await scratch.drop();
  await copy?.drop();
}

process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
if (args.save) {
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(new URL(`./results/${args.save}.json`, import.meta.url), `${JSON.stringify(out, null, 2)}\n`);
}

/**
 * 2,000 due deliveries (of fresh events, this week), claimed 10 at a time and recorded as
 * delivered, like one worker's loop without the HTTP: per-statement latency percentiles.
 */
async function hotPath(db: Database, label: string): Promise<Samples> {
  const legacy = label === 'unpartitioned';
  const claim = legacy ? legacyClaimDue : claimDue;
  const record = legacy ? legacyRecordOutcomes : recordOutcomes;
  const tag = `${label.replace(/\W+/g, '_')}_${Date.now()}`;
  const at = new Date();
  // 2,200 due deliveries of fresh events (this week), the way each schema holds due work.
  await db.script((r) =>
    r(`WITH e AS (
        INSERT INTO events (id, platform_id, environment, merchant_id, type, body, created_at)
        SELECT 'evt_hot_${tag}_' || g, 'plt_bench', 'live', 'mch_bench', 'payment.succeeded', '{}', ${ts(at.getTime())} FROM generate_series(1, 2200) g RETURNING id, created_at
      ), d AS (
        INSERT INTO webhook_deliveries (id, event_id, endpoint_id, platform_id, environment, state, attempt_count, automatic_attempts, next_attempt_at, ${legacy ? 'due_at, ' : ''}created_at, updated_at)
        SELECT 'whd_hot_' || substr(e.id, 9), e.id, 'we_bench' || lpad((abs(hashtext(e.id)) % 20)::text, 2, '0'), 'plt_bench', 'live', 'pending', 0, 0, created_at, ${legacy ? 'created_at, ' : ''}created_at, created_at FROM e
        RETURNING id, event_id, endpoint_id, platform_id, created_at
      )
      ${legacy ? 'SELECT count(*) FROM d' : 'INSERT INTO delivery_queue (delivery_id, delivery_created_at, event_id, endpoint_id, platform_id, due_at) SELECT id, created_at, event_id, endpoint_id, platform_id, created_at FROM d'}`),
  );
  const claims: number[] = [];
  const records: number[] = [];
  for (let i = 0; i < 220; i++) {
    const t = new Date();
    const token = `bench${i}`;
    let t0 = performance.now();
    const rows = await claim(db, {
      now: t,
      leaseUntil: new Date(t.getTime() + 60_000),
      limit: 10,
      perEndpoint: 10,
      perPlatform: 10,
      excludeEndpoints: [],
      excludePlatforms: [],
      token,
    });
    if (i >= 20) claims.push(performance.now() - t0); // the first 20 batches warm up
    if (rows.length === 0) break;
    t0 = performance.now();
    await record(
      db,
      rows.map((r) => ({
        deliveryId: r.id,
        endpointId: r.endpoint_id,
        token,
        trigger: 'automatic' as const,
        state: 'delivered' as const,
        nextAttemptAt: null,
        result: {
          succeeded: true,
          startedAt: t,
          durationMs: 3,
          statusCode: 200,
          responseBody: '{"received":true}',
          errorKind: null,
          errorMessage: null,
        },
      })),
      new Date(),
      new AttemptStats(),
    );
    if (i >= 20) records.push(performance.now() - t0);
  }
  return { claims, records };
}

interface Samples {
  claims: number[];
  records: number[];
}
function merge(into: Samples, from: Samples): void {
  into.claims.push(...from.claims);
  into.records.push(...from.records);
}
function summary(x: Samples, label: string): Record<string, number> {
  const pct = (xs: number[], p: number) => {
    const s = [...xs].sort((a, b) => a - b);
    return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! * 100) / 100;
  };
  const result = {
    batches: x.records.length,
    claim_p50_ms: pct(x.claims, 50),
    claim_p99_ms: pct(x.claims, 99),
    record_p50_ms: pct(x.records, 50),
    record_p99_ms: pct(x.records, 99),
  };
  log(`claim/record (${label}, ${ROUNDS} rounds): ${JSON.stringify(result)}`);
  return result;
}

/** CREATE DATABASE … TEMPLATE: a file-level copy (nobody may be connected to the source). */
async function copyDatabase(sourceUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const source = new URL(sourceUrl).pathname.slice(1);
  const name = `${source}_p`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name} TEMPLATE ${source}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

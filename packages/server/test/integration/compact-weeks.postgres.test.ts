import { afterAll, beforeAll, expect, it } from 'vitest';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { fillLooseWeek } from '../helpers/loose-week.ts';
import { until } from '../helpers/wait.ts';
import { openDatabase } from '../../src/db/client.ts';
import { maintainPartitions } from '../../src/db/retention.ts';

/**
 * docs/decisions/compact-closed-weeks.md, on PostgreSQL: the rebuild is REINDEX TABLE
 * CONCURRENTLY in autocommit, so reads and writes go on beside it, and one that is interrupted
 * is reported, not thrown, its invalid leftovers dropped before the next try.
 */

const DAY = 86_400_000;
const WEEK = Date.UTC(2031, 0, 6); // a Monday
const NEXT = '20310113';
const CLOSED = WEEK + 7 * DAY + (62 * 60 + 36) * 60_000 + DAY;

let testDb: TestDatabase;
let other: pg.Client;
beforeAll(async () => {
  testDb = await createTestDatabase();
  await maintainPartitions(testDb.database, { now: new Date(WEEK + 3_600_000), retentionMs: 30 * DAY });
  await fillLooseWeek(testDb.database, new Date(WEEK), 4000);
  other = new pg.Client({ connectionString: testDb.databaseUrl });
  await other.connect();
});
afterAll(async () => {
  await other?.end();
  await testDb?.dispose();
});

const run = () => maintainPartitions(testDb.database, { now: new Date(CLOSED), retentionMs: 30 * DAY });

/** The REINDEX of another session, once it waits on a lock (for the open writer below). */
const waitingReindex = async () => {
  const { rows } = await other.query(
    `SELECT pid, xact_start = query_start AS own_transaction FROM pg_stat_activity
      WHERE query LIKE 'REINDEX TABLE CONCURRENTLY%' AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
  );
  return rows[0] as { pid: number; own_transaction: boolean } | undefined;
};

/** A transaction that wrote into `partition` and stays open: REINDEX CONCURRENTLY waits for it. */
async function openWriter(partition: string, id: string): Promise<pg.Client> {
  const writer = new pg.Client({ connectionString: testDb.databaseUrl });
  await writer.connect();
  await writer.query('BEGIN');
  await writer.query(`UPDATE ${partition} SET created_at = created_at WHERE id = '${id}'`);
  return writer;
}

it('while a rebuild runs, publishing and recording go on, in the current week and in the week being rebuilt; another process skips maintenance', async () => {
  const writer = await openWriter('webhook_deliveries_p20310106', 'wd_' + 'c4ca4238a0b923820dcc509a6f75849b');
  const running = run();
  const reindex = await until(waitingReindex, { message: 'the REINDEX waiting for the open writer' });
  // Its own statement, not a transaction block's (PostgreSQL refuses the CONCURRENTLY form in one).
  expect(reindex.own_transaction).toBe(true);
  await other.query('SET statement_timeout = 5000');
  await other.query('BEGIN');
  await other.query('SET LOCAL session_replication_role = replica');
  await other.query(
    `INSERT INTO events (id, platform_id, environment, merchant_id, type, body, created_at)
     VALUES ('evt_during', 'plt_loose1', 'live', 'mch_loose1', 'payment.succeeded', '{}', '${new Date(CLOSED).toISOString()}')`,
  );
  await other.query(
    `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, platform_id, environment, event_type, state, created_at, updated_at)
     VALUES ('wd_during', 'evt_during', 'we_loose1', 'plt_loose1', 'live', 'payment.succeeded', 'pending', '${new Date(CLOSED).toISOString()}', now())`,
  );
  await other.query(`UPDATE webhook_deliveries SET state = 'delivered', attempt_count = attempt_count + 1 WHERE id = 'wd_during'`);
  // A manual replay recorded into the week being rebuilt.
  await other.query(
    `UPDATE webhook_deliveries SET attempt_count = attempt_count + 1 WHERE id = 'wd_' || md5('2') AND created_at < '${new Date(WEEK + 7 * DAY).toISOString()}'`,
  );
  await other.query('COMMIT');
  await other.query('RESET statement_timeout');
  expect((await other.query(`SELECT count(*)::int AS n FROM webhook_deliveries_p${NEXT} WHERE id = 'wd_during'`)).rows[0].n).toBe(1);
  const second = await openDatabase({ databaseUrl: testDb.databaseUrl });
  try {
    expect((await maintainPartitions(second, { now: new Date(CLOSED), retentionMs: 30 * DAY })).ran).toBe(false);
  } finally {
    await second.close();
  }
  await writer.query('COMMIT');
  await writer.end();
  const r = await running;
  expect(r.compactFailed).toEqual([]);
  expect(r.compacted.map((c) => c.partition)).toEqual(['webhook_deliveries_p20310106']);
});

it('an interrupted rebuild is reported, not thrown; its invalid _ccnew indexes are dropped before the next run rebuilds the partition', async () => {
  const invalid = async () =>
    (
      await other.query(
        `SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
          WHERE i.indrelid = 'events_p20310106'::regclass AND NOT i.indisvalid`,
      )
    ).rows.map((r) => String(r.relname));
  const writer = await openWriter('events_p20310106', 'evt_' + 'c4ca4238a0b923820dcc509a6f75849b');
  const running = run();
  const reindex = await until(waitingReindex, { message: 'the REINDEX waiting for the open writer' });
  await other.query('SELECT pg_cancel_backend($1)', [reindex.pid]);
  const failed = await running;
  expect(failed.compacted).toEqual([]);
  expect(failed.compactFailed).toEqual([{ partition: 'events_p20310106', error: expect.stringMatching(/cancel/) }]);
  expect((await invalid()).length).toBeGreaterThan(0);
  expect((await invalid()).every((n) => /_ccnew\d*$/.test(n))).toBe(true);
  expect((await other.query(`SELECT 1 FROM compacted_weeks WHERE partition = 'events_p20310106'`)).rowCount).toBe(0);
  await writer.query('COMMIT');
  await writer.end();
  const retried = await run();
  expect(retried.compactFailed).toEqual([]);
  expect(retried.compacted.map((c) => c.partition)).toEqual(['events_p20310106']);
  expect(await invalid()).toEqual([]);
  expect((await other.query(`SELECT 1 FROM compacted_weeks WHERE partition = 'events_p20310106'`)).rowCount).toBe(1);
});

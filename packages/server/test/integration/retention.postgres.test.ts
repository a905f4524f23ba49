import { afterAll, beforeAll, expect, it } from 'vitest';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { maintainPartitions } from '../../src/db/retention.ts';

/**
 * Issue 10 item 3: partition maintenance runs in every worker process, but one at a time across
 * processes (a transaction-level advisory lock; the others skip, never wait), and its DDL gives
 * up on a busy table instead of queueing the hot path behind it (lock_timeout).
 */
let testDb: TestDatabase;
beforeAll(async () => {
  testDb = await createTestDatabase();
});
afterAll(async () => testDb?.dispose());

const DAY = 86_400_000;

it('a second process skips maintenance while another one holds it, and runs once it is free', async () => {
  const other = new pg.Client({ connectionString: testDb.databaseUrl });
  await other.connect();
  try {
    await other.query('BEGIN');
    await other.query('SELECT pg_advisory_xact_lock(727275)'); // what a running maintenance step holds
    const now = new Date(Date.UTC(2031, 0, 6));
    const skipped = await maintainPartitions(testDb.database, { now, retentionMs: 30 * DAY });
    expect(skipped).toMatchObject({ ran: false, created: [] });
    await other.query('COMMIT');
    const ran = await maintainPartitions(testDb.database, { now, retentionMs: 30 * DAY });
    expect(ran.ran).toBe(true);
    expect(ran.created).toEqual(['20310106', '20310113', '20310120']);
  } finally {
    await other.end();
  }
});

it('a drop that cannot get its lock gives up (retried at the next run) instead of waiting; the week goes once the table is free', async () => {
  const now = new Date(Date.UTC(2031, 2, 3));
  await maintainPartitions(testDb.database, { now, retentionMs: 30 * DAY });
  const other = new pg.Client({ connectionString: testDb.databaseUrl });
  await other.connect();
  try {
    // A long transaction reading the deliveries (any statement on them holds this lock while it runs).
    await other.query('BEGIN');
    await other.query('SELECT count(*) FROM webhook_deliveries');
    const later = new Date(now.getTime() + 90 * DAY);
    const busy = await maintainPartitions(testDb.database, { now: later, retentionMs: 30 * DAY });
    expect(busy.dropped).toEqual([]);
    expect(busy.lockTimeouts).toEqual(expect.arrayContaining(['drop 20310303', 'drop 20310310']));
    await other.query('COMMIT');
    const free = await maintainPartitions(testDb.database, { now: later, retentionMs: 30 * DAY });
    expect(free.dropped).toEqual(expect.arrayContaining(['20310303', '20310310']));
    expect(free.lockTimeouts).toEqual([]);
  } finally {
    await other.end();
  }
});

import { afterAll, beforeAll, expect, it } from 'vitest';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { maintainPartitions } from '../../src/db/retention.ts';

/**
 * Issue 10 item 3: partition maintenance runs in every worker process, but exactly one at a
 * time across processes (a transaction-level advisory lock; the others skip, never wait).
 */
let testDb: TestDatabase;
beforeAll(async () => {
  testDb = await createTestDatabase();
});
afterAll(async () => testDb?.dispose());

it('a second process skips maintenance while another one holds it, and runs once it is free', async () => {
  const other = new pg.Client({ connectionString: testDb.databaseUrl });
  await other.connect();
  try {
    await other.query('BEGIN');
    await other.query('SELECT pg_advisory_xact_lock(727275)'); // what a running maintenance holds
    const now = new Date(Date.UTC(2031, 0, 6));
    const skipped = await maintainPartitions(testDb.database, { now, retentionMs: 30 * 86_400_000 });
    expect(skipped).toMatchObject({ ran: false, created: [] });
    await other.query('COMMIT');
    const ran = await maintainPartitions(testDb.database, { now, retentionMs: 30 * 86_400_000 });
    expect(ran.ran).toBe(true);
    expect(ran.created).toEqual(['20310106', '20310113', '20310120']);
  } finally {
    await other.end();
  }
});

import { afterAll, beforeAll, expect, it } from 'vitest';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';

/**
 * Issue 11: PostgreSQL's JIT compiler stays off for payhooks. It switches on by cost estimate,
 * which grows with the tables, and then costs tens of milliseconds per execution of statements
 * that take a few (migration 0009, docs/decisions/query-plans.md). Off for the database, so any new session
 * (through a pooler too) has it off, and set by each pooled connection as well.
 */
let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => t?.dispose());

it('every pooled connection runs with jit off', async () => {
  // Several at once, so the pool opens several connections.
  const rows = await Promise.all(
    Array.from({ length: 4 }, () =>
      t.database.query<{ jit: string; pid: number }>('SELECT current_setting($1) AS jit, pg_backend_pid() AS pid, pg_sleep(0.05)', ['jit']),
    ),
  );
  expect(new Set(rows.map((r) => r[0]!.pid)).size).toBeGreaterThan(1);
  for (const r of rows) expect(r[0]!.jit).toBe('off');
});

it('the migrated database has jit off for any new session, not only payhooks connections', async () => {
  const client = new pg.Client({ connectionString: t.databaseUrl });
  await client.connect();
  try {
    expect((await client.query('SHOW jit')).rows[0]).toEqual({ jit: 'off' });
  } finally {
    await client.end();
  }
  // The server default is untouched: another database keeps its own setting.
  const other = new pg.Client({ connectionString: t.databaseUrl!.replace(/\/[^/]+$/, '/postgres') });
  await other.connect();
  try {
    const [row] = (await other.query(`SELECT setting FROM pg_settings WHERE name = 'jit'`)).rows;
    expect(row.setting).toBe((await other.query(`SELECT boot_val FROM pg_settings WHERE name = 'jit'`)).rows[0].boot_val);
  } finally {
    await other.end();
  }
});

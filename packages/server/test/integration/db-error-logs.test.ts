import { Writable } from 'node:stream';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend, createTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { createLogger } from '../../src/logging.ts';

/**
 * Issue 9: a query that really fails, on this run's database, logged through the service's
 * logger: the line names the statement and the SQLSTATE, and holds none of the values the
 * query carried (PostgreSQL quotes this one in its own message, drizzle in its params).
 */
let testDb: TestDatabase;
beforeAll(async () => {
  testDb = await createTestDatabase();
});
afterAll(async () => {
  await testDb?.dispose();
});

const SECRET = 'sk_live_ThisMustNeverBeLogged0123456789';

function capture() {
  const lines: string[] = [];
  const logger = createLogger(
    { logLevel: 'info' },
    new Writable({
      write: (c, _e, cb) => {
        lines.push(String(c));
        cb();
      },
    }),
  );
  return { logger, lines };
}

describe(`failed queries in logs on ${backend}`, () => {
  it('a drizzle query that fails logs statement and SQLSTATE, not its parameters', async () => {
    const { logger, lines } = capture();
    const err = await testDb.database.db.execute(sql`SELECT ${SECRET}::int AS n`).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).not.toBeNull();
    logger.error({ err }, 'query failed');
    logger.error(err);
    for (const line of lines) {
      const entry = JSON.parse(line) as { err: Record<string, unknown>; msg: string };
      expect(entry.err).toMatchObject({ type: 'DatabaseError', statement: 'select', code: '22P02' });
      expect(line).not.toContain(SECRET);
      expect(line).not.toContain('Failed query');
    }
  });

  it('a hand-written statement that fails logs its own name', async () => {
    const { logger, lines } = capture();
    const err = await testDb.database.query('SELECT $1::int AS n', [SECRET], 'parse_number').then(
      () => null,
      (e: unknown) => e,
    );
    logger.error({ err }, 'query failed');
    expect(JSON.parse(lines[0]!).err).toMatchObject({ type: 'DatabaseError', statement: 'parse_number', code: '22P02' });
    expect(lines[0]).not.toContain(SECRET);
  });
});

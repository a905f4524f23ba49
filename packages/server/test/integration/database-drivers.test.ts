import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { QueryError } from '../../src/db/faults.ts';
import { scratchOf } from '../../src/db/scratch.ts';
import { runAlone, runInTransaction, statement } from '../../src/db/statement.ts';
import { openDatabase } from '../../src/db/client.ts';
import { backend, createTestDatabase, type TestDatabase } from '../helpers/database.ts';

/**
 * The database layer's conformance suite (db/client.ts): the same cases on each driver (this file
 * runs in the postgres and the pglite project), so code above the layer never converts a value
 * by driver. A case that fails on one driver only is a difference the layer must absorb.
 */

let t: TestDatabase;

beforeAll(async () => {
  t = await createTestDatabase({ migrate: false });
  await t.database.script((run) =>
    run(`CREATE TABLE conformance (id text PRIMARY KEY, n bigint NOT NULL, flag boolean NOT NULL, at timestamptz, tags text[], doc jsonb);
         INSERT INTO conformance VALUES ('a', 9007199254740991, true, '2026-12-07T10:00:00.123Z', '{x,y}', '{"k": [1, "two"]}'),
                                        ('b', 2, false, NULL, NULL, NULL)`),
  );
});
afterAll(async () => {
  await t?.dispose();
});

const VALUES_SQL = `SELECT true AS yes, false AS no, 1::bigint AS big, count(*) AS counted, 7::int AS small, 1.50::numeric AS exact,
  timestamptz '2026-12-07T10:00:00.123Z' AS at, NULL::timestamptz AS nothing, ARRAY[1, 2]::int[] AS ints, '{"a": {"b": 1}}'::jsonb AS doc`;

const EXPECTED = {
  yes: true,
  no: false,
  big: 1,
  counted: 1,
  small: 7,
  exact: '1.50',
  at: new Date('2026-12-07T10:00:00.123Z'),
  nothing: null,
  ints: [1, 2],
  doc: { a: { b: 1 } },
};

describe(`the database layer on ${backend}`, () => {
  it('one statement (query): booleans as booleans, int8 and counts as numbers, numeric exact, timestamps as Dates, arrays and jsonb parsed', async () => {
    expect(await t.database.query(VALUES_SQL, [])).toEqual([EXPECTED]);
  });

  it('a script and an autocommit run read values the same way', async () => {
    expect(await t.database.script((run) => run(`SELECT 1; ${VALUES_SQL}`))).toEqual([EXPECTED]);
    expect(await t.database.autocommit((run) => run(VALUES_SQL))).toEqual([EXPECTED]);
  });

  it('parameters: a Date binds as its instant, a string array as text[], null as NULL; bigint columns come back as numbers', async () => {
    const rows = await t.database.query<{ id: string; n: number; flag: boolean; at: Date | null; tags: string[] | null }>(
      `SELECT id, n, flag, at, tags FROM conformance WHERE id = ANY($1::text[]) AND (at IS NULL OR at = $2) AND ($3::text IS NULL OR id = $3) ORDER BY id`,
      [['a', 'b'], new Date('2026-12-07T10:00:00.123Z'), null],
    );
    expect(rows).toEqual([
      { id: 'a', n: Number.MAX_SAFE_INTEGER, flag: true, at: new Date('2026-12-07T10:00:00.123Z'), tags: ['x', 'y'] },
      { id: 'b', n: 2, flag: false, at: null, tags: null },
    ]);
  });

  it('a named statement runs again under its name with new parameters (prepared once per connection on PostgreSQL)', async () => {
    const text = 'SELECT id, flag FROM conformance WHERE id = $1';
    expect(await t.database.query(text, ['a'], 'conformance_by_id')).toEqual([{ id: 'a', flag: true }]);
    expect(await t.database.query(text, ['b'], 'conformance_by_id')).toEqual([{ id: 'b', flag: false }]);
  });

  it('a failing statement rejects with a QueryError naming the statement and its SQLSTATE', async () => {
    const err = await t.database.query('SELECT $1::int AS n', ['not a number'], 'conformance_bad').catch((e) => e);
    expect(err).toBeInstanceOf(QueryError);
    expect(err).toMatchObject({ statement: 'conformance_bad', code: '22P02' });
  });

  it('a script is one transaction: a failing statement rolls back the ones before it', async () => {
    await expect(
      t.database.script(async (run) => {
        await run(`INSERT INTO conformance (id, n, flag) VALUES ('rolled back', 1, true)`);
        await run('SELECT 1/0');
      }),
    ).rejects.toThrow();
    expect(await t.database.query(`SELECT count(*) AS n FROM conformance WHERE id = 'rolled back'`, [])).toEqual([{ n: 0 }]);
  });

  it("drizzle's transaction and the raw statements see the same committed data", async () => {
    await t.database.db.transaction(async (tx) => {
      await tx.execute(sql`INSERT INTO conformance (id, n, flag) VALUES ('from drizzle', 3, true)`);
    });
    expect(await t.database.query(`SELECT n, flag FROM conformance WHERE id = 'from drizzle'`, [])).toEqual([{ n: 3, flag: true }]);
  });

  it('a NOTIFY after a commit reaches a listener', async () => {
    const heard: string[] = [];
    const stop = await t.database.listen('conformance_channel', (payload) => heard.push(payload));
    try {
      await t.database.query(`SELECT pg_notify('conformance_channel', 'hello')`, []);
      await expect.poll(() => heard, { timeout: 10_000 }).toContain('hello');
    } finally {
      await stop();
    }
  });

  it("state kept per handle (db/scratch.ts): made once, found from the handle's top-level transactions, never another handle's", async () => {
    const key = Symbol('conformance');
    const kept = t.database.scratch.get(key, () => ({ made: 1 }));
    expect(t.database.scratch.get(key, () => ({ made: 2 }))).toBe(kept);
    const [inTx, inSavepoint] = await t.database.db.transaction(async (tx) => [
      scratchOf(tx),
      await tx.transaction(async (sp) => scratchOf(sp)),
    ]);
    expect(inTx).toBe(t.database.scratch);
    expect(inSavepoint).toBeUndefined();
    const other = await openDatabase({ databaseUrl: t.databaseUrl });
    try {
      expect(other.scratch).not.toBe(t.database.scratch);
      expect(other.scratch.get(key, () => ({ made: 3 }))).toEqual({ made: 3 });
    } finally {
      await other.close();
    }
  });

  it('a hand-written statement (db/statement.ts) in a transaction, in a savepoint and alone: the same rows, with named parameters', async () => {
    const byFlag = statement<{ flag: boolean; at: Date }, { id: string; n: number; at: Date | null; counted: number }>(
      'conformance_by_flag',
      `SELECT id, n, at, (SELECT count(*) FROM conformance WHERE id = 'a' AND flag = :flag) AS counted
       FROM conformance WHERE id = 'a' AND flag = :flag AND (at IS NULL OR at = :at::timestamptz)`,
    );
    expect(byFlag.params).toEqual(['flag', 'at']);
    const values = { flag: true, at: new Date('2026-12-07T10:00:00.123Z') };
    const expected = [{ id: 'a', n: Number.MAX_SAFE_INTEGER, at: new Date('2026-12-07T10:00:00.123Z'), counted: 1 }];
    const [inTx, inSavepoint] = await t.database.db.transaction(async (tx) => [
      await runInTransaction(tx, byFlag, values),
      await tx.transaction((sp) => runInTransaction(sp, byFlag, values)),
    ]);
    expect(inTx).toEqual(expected);
    expect(inSavepoint).toEqual(expected);
    expect(await runAlone(t.database, byFlag, values)).toEqual(expected);
  });

  it("a transaction's hand-written statement runs on the transaction's own connection: it sees the transaction's uncommitted writes", async () => {
    const count = statement<{ id: string }, { n: number }>('conformance_count', 'SELECT count(*) AS n FROM conformance WHERE id = :id');
    const inside = await t.database.db.transaction(async (tx) => {
      await tx.execute(sql`INSERT INTO conformance (id, n, flag) VALUES ('uncommitted', 1, false)`);
      const rows = await runInTransaction(tx, count, { id: 'uncommitted' });
      await tx.execute(sql`DELETE FROM conformance WHERE id = 'uncommitted'`);
      return rows;
    });
    expect(inside).toEqual([{ n: 1 }]);
    expect(await runAlone(t.database, count, { id: 'uncommitted' })).toEqual([{ n: 0 }]);
  });

  it('a statement with a parameter left out is refused before it is sent', async () => {
    const count = statement<{ id: string }, { n: number }>('conformance_count', 'SELECT count(*) AS n FROM conformance WHERE id = :id');
    await expect(runAlone(t.database, count, {} as { id: string })).rejects.toThrow('statement conformance_count: no value for :id');
  });
});

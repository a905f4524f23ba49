import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { fillLooseWeek, indexAnswers, indexSizes } from '../helpers/loose-week.ts';
import { maintainPartitions } from '../../src/db/retention.ts';
import type { Database } from '../../src/db/client.ts';

/**
 * docs/decisions/compact-closed-weeks.md: once a week is closed (its end older than the whole
 * automatic retry schedule plus a day), the retention job rebuilds its partitions' indexes, one
 * partition per run, once each. Time is the `now` each run is given.
 */

const DAY = 86_400_000;
const WEEK = Date.UTC(2031, 0, 6); // a Monday
const SUFFIX = '20310106';
const RETENTION = 30 * DAY;
/** The default schedule (2 d 14 h 36 min) plus the day's margin. */
const CLOSED_AFTER = (62 * 60 + 36) * 60_000 + DAY;
const TABLES = ['webhook_deliveries', 'events', 'delivery_attempts', 'event_idempotency_keys'];

let testDb: TestDatabase;
let statements: string[];
let database: Database;

/** The test database, with every statement any of its entry points is handed recorded. */
function recorded(inner: Database): Database {
  const spy = (fn: (text: string) => Promise<Record<string, unknown>[]>) => (text: string) => {
    statements.push(text);
    return fn(text);
  };
  return {
    ...inner,
    kind: inner.kind,
    db: inner.db,
    script: (fn) => inner.script((run) => fn(spy(run))),
    autocommit: (fn) => inner.autocommit((run) => fn(spy(run))),
    query: (text, params, name) => {
      statements.push(text);
      return inner.query(text, params, name);
    },
  };
}

const run = (at: number) => maintainPartitions(database, { now: new Date(at), retentionMs: RETENTION });
const reindexes = () => statements.filter((s) => /REINDEX/i.test(s));
const compactedRows = async () =>
  (await testDb.database.script((r) => r('SELECT partition FROM compacted_weeks ORDER BY 1'))).map((r) => String(r.partition));

beforeAll(async () => {
  testDb = await createTestDatabase();
  statements = [];
  database = recorded(testDb.database);
});
afterAll(async () => testDb?.dispose());

let before: Map<string, Map<string, number>>;
let answers: Map<string, Record<string, string>>;

it('the current week is never rebuilt, however loose its indexes', async () => {
  expect((await run(WEEK + 10 * 3_600_000)).created).toContain(SUFFIX);
  await fillLooseWeek(testDb.database, new Date(WEEK));
  before = new Map();
  answers = new Map();
  for (const t of TABLES) {
    before.set(t, await indexSizes(testDb.database, `${t}_p${SUFFIX}`));
    answers.set(t, await indexAnswers(testDb.database, `${t}_p${SUFFIX}`));
  }
  statements.length = 0;
  const r = await run(WEEK + 6 * DAY);
  expect(r).toMatchObject({ ran: true, compacted: [], compactFailed: [] });
  expect(reindexes()).toEqual([]);
});

it('a week whose last deliveries may still be retried automatically is not rebuilt: a run issues no REINDEX', async () => {
  statements.length = 0;
  const r = await run(WEEK + 7 * DAY + CLOSED_AFTER - 60_000);
  expect(r).toMatchObject({ ran: true, compacted: [], compactFailed: [] });
  expect(reindexes()).toEqual([]);
  expect(await compactedRows()).toEqual([]);
});

it('once closed, the week is rebuilt one partition per run: every index smaller, the same answers, each partition recorded', async () => {
  const closed = WEEK + 7 * DAY + CLOSED_AFTER;
  for (const t of TABLES) {
    statements.length = 0;
    const r = await run(closed);
    expect(r.compactFailed).toEqual([]);
    expect(r.compacted.map((c) => c.partition)).toEqual([`${t}_p${SUFFIX}`]);
    expect(reindexes()).toEqual([
      testDb.database.kind === 'postgres' ? `REINDEX TABLE CONCURRENTLY ${t}_p${SUFFIX}` : `REINDEX TABLE ${t}_p${SUFFIX}`,
    ]);
    const [c] = r.compacted;
    const sizes = await indexSizes(testDb.database, `${t}_p${SUFFIX}`);
    // The result reports what the catalog says, before and after.
    expect(c!.indexBytesBefore).toBe([...before.get(t)!.values()].reduce((a, b) => a + b, 0));
    expect(c!.indexBytesAfter).toBe([...sizes.values()].reduce((a, b) => a + b, 0));
    expect(c!.indexes.map((i) => i.index)).toEqual([...sizes.keys()]);
    for (const [index, bytes] of sizes) expect(bytes, index).toBeLessThan(before.get(t)!.get(index)!);
    expect(await indexAnswers(testDb.database, `${t}_p${SUFFIX}`)).toEqual(answers.get(t));
  }
  expect(await compactedRows()).toEqual(TABLES.map((t) => `${t}_p${SUFFIX}`).sort());
});

it('a rebuilt partition is not rebuilt again: a run with nothing left issues no REINDEX and reads nothing but compacted_weeks', async () => {
  statements.length = 0;
  const r = await run(WEEK + 7 * DAY + CLOSED_AFTER + DAY);
  expect(r).toMatchObject({ ran: true, compacted: [], compactFailed: [] });
  expect(reindexes()).toEqual([]);
  expect(statements.filter((s) => /compacted_weeks|pg_relation_size|pg_try_advisory_lock\(/.test(s))).toEqual([
    'SELECT partition FROM compacted_weeks WHERE partition = ANY($1::text[])',
  ]);
});

it('a closed week that never had a row is remembered without a REINDEX', async () => {
  statements.length = 0;
  // 20310113 and 20310120 were created ahead and stayed empty; by now both are closed.
  const r = await run(WEEK + 21 * DAY + CLOSED_AFTER);
  expect(r).toMatchObject({ ran: true, compacted: [], compactFailed: [] });
  expect(reindexes()).toEqual([]);
  expect((await compactedRows()).filter((p) => /_p2031011[3]$|_p20310120$/.test(p))).toHaveLength(8);
});

it('a week dropped by retention takes its rows in compacted_weeks with it', async () => {
  const r = await run(WEEK + 7 * DAY + RETENTION);
  expect(r.dropped).toContain(SUFFIX);
  expect((await compactedRows()).filter((p) => p.endsWith(SUFFIX))).toEqual([]);
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, startService, type TestService } from '../helpers/service.ts';
import { publish } from '../helpers/publish.ts';
import { createTestDatabase, type TestDatabase, migrationNamesFrom } from '../helpers/database.ts';
import { listMigrations, migrate } from '../../src/db/migrate.ts';
import { maintainPartitions } from '../../src/db/retention.ts';
import { publishEvent } from '../../src/events/publish.ts';
import type { Database } from '../../src/db/client.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import { payment } from '../helpers/publish.ts';

/**
 * Event idempotency keys are partitioned by week (migration 0028): a key has a row in its
 * event's week (and one in the next when published in a week's last day), and retention drops a week's keys with its events, never
 * deleting them one by one. A key stays unique per Platform and environment across a week's
 * end (for at least 7 days since migration 0030: event-key-window.test.ts).
 */

const DAY = 86_400_000;
const HOUR = 3_600_000;
const T = Date.UTC(2027, 2, 1); // Monday 2027-03-01 00:00 UTC: week W0; W1 starts 03-08, W2 03-15

let svc: TestService;
let clock: ManualClock;
let platform: CreatedPlatform;

const sql = (database: Database, text: string) => database.script((run) => run(text));
const count = async (database: Database, text: string) => Number((await sql(database, text))[0]!.n);
const keyRows = (key: string) =>
  sql(svc.ctx.database, `SELECT week, event_id FROM event_idempotency_keys WHERE idempotency_key = '${key}' ORDER BY week`);
const maintain = (now: number, retentionMs = 30 * DAY) => maintainPartitions(svc.ctx.database, { now: new Date(now), retentionMs });
const pub = (key: string) => publish(svc.ctx, platform.merchant_id, { idempotencyKey: key });

/** Every plan node of an EXPLAIN (ANALYZE, FORMAT JSON) result. */
function nodes(plan: Record<string, unknown>): Record<string, unknown>[] {
  const children = (plan.Plans as Record<string, unknown>[] | undefined) ?? [];
  return [plan, ...children.flatMap(nodes)];
}

beforeAll(async () => {
  clock = new ManualClock(T);
  svc = await startService({ dev: true }, { clock });
  // No endpoints: events fan out to nothing, so no week is held by a queued delivery.
  platform = await svc.platform('Keys by week');
});
afterAll(async () => svc?.close());

describe('event idempotency keys by week', () => {
  it('a replay answers from the key: published late on a Sunday, again in the next week (its second row) and a week on (its first, by the lookup)', async () => {
    await maintain(T);
    clock.set(T + 7 * DAY - 60_000); // Sunday 23:59 of W0
    const first = await pub('k-window');
    expect(first.replayed).toBe(false);
    expect((await keyRows('k-window')).map((r) => new Date(r.week as string).getTime())).toEqual([T, T + 7 * DAY]);

    clock.set(T + 7 * DAY + 60_000); // Monday 00:01 of W1
    await maintain(clock.now().getTime());
    const nextWeek = await pub('k-window');
    expect(nextWeek).toMatchObject({ replayed: true, deliveries: 0 });
    expect(nextWeek.event.id).toBe(first.event.id);

    // W1 still, 7 days after the first (a key is unique for at least 7 days: event-key-window.test.ts
    // shows a use two weeks on making a new event).
    clock.set(T + 14 * DAY - 30_000);
    const later = await pub('k-window');
    expect(later.replayed).toBe(true);
    expect(later.event.id).toBe(first.event.id);
    expect(await count(svc.ctx.database, `SELECT count(*) AS n FROM events WHERE idempotency_key = 'k-window'`)).toBe(1);
    // Replays write nothing: still the key's two rows.
    expect(await keyRows('k-window')).toHaveLength(2);
  });

  it('retention drops the expired week with its keys (no row deleted one by one) and keeps the live ones; an expired key is free again', async () => {
    // W0 holds k-window's event (and its first row); W1 its second row, and k-live's event.
    clock.set(T + 8 * DAY);
    const live = await pub('k-live');
    // W2, with a 7-day window: W0 ended more than 7 days ago, W1 did not.
    const now = T + 14 * DAY + 2 * HOUR;
    const r = await maintain(now, 7 * DAY);
    expect(r.dropped).toEqual(['20270301']);
    expect(r.eventKeysDeleted).toBe(0);
    const partitions = await sql(
      svc.ctx.database,
      `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'event_idempotency_keys'::regclass ORDER BY 1`,
    );
    expect(partitions.map((p) => p.relname)).not.toContain('event_idempotency_keys_p20270301');
    expect(partitions.map((p) => p.relname)).toContain('event_idempotency_keys_p20270308');
    // k-window's event is gone; only its second row (W1) is left, which no longer holds the key.
    expect((await keyRows('k-window')).map((k) => new Date(k.week as string).getTime())).toEqual([T + 7 * DAY]);
    // Published on a Tuesday: one row, in its week (a second only in a week's last day).
    expect(await keyRows('k-live')).toHaveLength(1);

    clock.set(now);
    const again = await pub('k-window');
    expect(again.replayed).toBe(false);
    const stillLive = await pub('k-live');
    expect(stillLive.replayed).toBe(true);
    expect(stillLive.event.id).toBe(live.event.id);
  });

  it('a run with nothing to drop reads no kept row: no statement it issues scans a week of events, deliveries, attempts or keys', async () => {
    // Keys in W3 (2027-03-22) older than the cutoff, in a week that is not over yet: the old
    // row-by-row purge read every one of them (an anti-join against events) at every run.
    const w3 = T + 21 * DAY;
    clock.set(w3 + HOUR);
    await maintain(clock.now().getTime());
    for (let i = 0; i < 20; i++) await pub(`k-kept-${i}`);
    const now = w3 + 9 * DAY; // cutoff = w3 + 2 days: after the keys, before the week's end
    await maintain(now, 7 * DAY); // weeks ahead made, W1 and W2 dropped: the next run has nothing to do

    const issued: string[] = [];
    const database = svc.ctx.database;
    const recording: Database = {
      ...database,
      script: (fn) =>
        database.script((run) =>
          fn((text) => {
            issued.push(text);
            return run(text);
          }),
        ),
      query: (text, params, name) => {
        issued.push(text);
        return database.query(text, params, name);
      },
    };
    const r = await maintainPartitions(recording, { now: new Date(now), retentionMs: 7 * DAY });
    expect(r).toMatchObject({ ran: true, created: [], dropped: [], defaultRowsDeleted: 0, eventKeysDeleted: 0 });
    expect(await count(database, `SELECT count(*) AS n FROM event_idempotency_keys WHERE idempotency_key LIKE 'k-kept-%'`)).toBe(20);

    // Each statement again, under EXPLAIN ANALYZE (nothing is left for them to change).
    const history = /^(events|webhook_deliveries|delivery_attempts|event_idempotency_keys)(_p\d{8})?$/;
    const scanned: string[] = [];
    const plannable = issued.filter((s) => /^\s*(SELECT|WITH|DELETE)\b/i.test(s));
    expect(plannable.length).toBeGreaterThan(3);
    for (const text of plannable) {
      const [row] = await sql(database, `EXPLAIN (ANALYZE, FORMAT JSON) ${text}`);
      const raw = row!['QUERY PLAN'];
      const explained = (typeof raw === 'string' ? JSON.parse(raw) : raw) as { Plan: Record<string, unknown> }[];
      for (const n of nodes(explained[0]!.Plan)) {
        const rel = n['Relation Name'] as string | undefined;
        if (rel && history.test(rel) && Number(n['Actual Loops']) > 0)
          scanned.push(`${rel}: ${n['Actual Rows']} rows in ${text.slice(0, 60)}`);
      }
    }
    expect(scanned).toEqual([]);
  });
});

describe('migration 0028 on a database with keys', () => {
  let testDb: TestDatabase;
  beforeAll(async () => {
    testDb = await createTestDatabase({ migrate: false });
  });
  afterAll(async () => testDb?.dispose());

  it("moves the keys of kept events into their events' weeks, leaves out keys of purged events, and replays still answer", async () => {
    const db = testDb.database;
    await db.script(async (run) => {
      await run(
        `CREATE TABLE payhooks_migrations (id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      for (const m of listMigrations().filter((m) => m.id < 28)) {
        await run(m.sql);
        await run(`INSERT INTO payhooks_migrations (id, name) VALUES (${m.id}, '${m.name}')`);
      }
      await run(`INSERT INTO platforms (id, name) VALUES ('plt_k', 'K')`);
      await run(`INSERT INTO merchants (id, platform_id, name) VALUES ('mch_k', 'plt_k', 'K')`);
      // Events this week and last (the migrations made partitions from this week on; last week's
      // goes to the default partition), and one in 2019; a key each, and a key whose event is gone.
      await run(`INSERT INTO events (id, platform_id, environment, merchant_id, type, body, idempotency_key, created_at)
        VALUES ('evt_k1', 'plt_k', 'sandbox', 'mch_k', 'payment.succeeded', '{"n":1}', 'key1', now()),
               ('evt_k2', 'plt_k', 'sandbox', 'mch_k', 'payment.succeeded', '{"n":2}', 'key2', now() - interval '7 days'),
               ('evt_k3', 'plt_k', 'sandbox', 'mch_k', 'payment.succeeded', '{"n":3}', 'key3', timestamptz '2019-05-01 12:00:00Z')`);
      await run(`INSERT INTO event_idempotency_keys (platform_id, environment, idempotency_key, event_id, event_created_at)
        SELECT platform_id, environment, idempotency_key, id, created_at FROM events
        UNION ALL SELECT 'plt_k', 'sandbox', 'key-gone', 'evt_gone', now() - interval '60 days'`);
    });
    expect(await migrate(db)).toEqual(migrationNamesFrom(28));

    const rows = await sql(
      db,
      `SELECT k.idempotency_key, k.week = date_trunc('week', k.event_created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS own_week,
              c.relname = 'event_idempotency_keys_default' AS in_default
       FROM event_idempotency_keys k JOIN pg_class c ON c.oid = k.tableoid ORDER BY 1`,
    );
    expect(rows).toEqual([
      { idempotency_key: 'key1', own_week: true, in_default: false },
      { idempotency_key: 'key2', own_week: true, in_default: true },
      { idempotency_key: 'key3', own_week: true, in_default: true },
    ]);
    // A partition of keys for every week events have.
    const weeks = await sql(
      db,
      `SELECT (SELECT count(*) FROM pg_inherits WHERE inhparent = 'events'::regclass) AS events,
              (SELECT count(*) FROM pg_inherits WHERE inhparent = 'event_idempotency_keys'::regclass) AS keys`,
    );
    expect(Number(weeks[0]!.keys)).toBe(Number(weeks[0]!.events));
    // Still one event per key.
    await expect(
      sql(
        db,
        `INSERT INTO event_idempotency_keys (platform_id, environment, idempotency_key, event_id, event_created_at, week)
        SELECT platform_id, environment, idempotency_key, 'evt_dup', event_created_at, week FROM event_idempotency_keys WHERE idempotency_key = 'key1'`,
      ),
    ).rejects.toThrow(/duplicate key|unique/);
    for (const [key, n] of [
      ['key1', 1],
      ['key2', 2],
    ] as const) {
      const again = await db.db.transaction((tx) =>
        publishEvent(
          tx,
          { type: 'payment.succeeded', merchantId: 'mch_k', environment: 'sandbox', object: payment(), idempotencyKey: key },
          new Date(),
        ),
      );
      expect(again.replayed).toBe(true);
      expect(again.event).toEqual({ n });
    }
  });
});

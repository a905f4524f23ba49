import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, startService, type TestService } from '../helpers/service.ts';
import { publish } from '../helpers/publish.ts';
import { createTestDatabase, type TestDatabase, migrationNamesFrom } from '../helpers/database.ts';
import { attemptKeys, keyedByDelivery } from '../helpers/attempt-keys.ts';
import { claimDue } from '../../src/delivery/claim.ts';
import { recordOutcomes } from '../../src/delivery/record.ts';
import { AttemptStats } from '../../src/delivery/attempt-stats.ts';
import { listMigrations, migrate } from '../../src/db/migrate.ts';
import type { Database } from '../../src/db/client.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';

/**
 * Migration 0029 (decision record attempts-keyed-by-delivery): attempts are keyed by (delivery_id,
 * attempt_number, delivery_created_at) on every partition, including the weeks the retention job
 * creates afterwards, and the index on their id is gone; attempts are still unique per delivery
 * and number, recorded, listed with their delivery, and dropped or purged with their week.
 */

const DAY = 86_400_000;
const sql = (database: Database, text: string) => database.script((run) => run(text));
const DUPLICATE = /duplicate key|unique/;

/** The first attempt matching `where` again (same delivery, number and week) under a new id. */
const sameAttemptAgain = (where: string) => `
  INSERT INTO delivery_attempts (id, delivery_id, attempt_number, trigger, succeeded, started_at, duration_ms, delivery_created_at)
  SELECT 'wha_again', delivery_id, attempt_number, trigger, succeeded, started_at, duration_ms, delivery_created_at
  FROM delivery_attempts WHERE ${where} LIMIT 1`;

describe('migration 0029 on a database with attempts', () => {
  let testDb: TestDatabase;
  beforeAll(async () => {
    testDb = await createTestDatabase({ migrate: false });
  });
  afterAll(async () => testDb?.dispose());

  it("keeps every attempt, keys every partition by its delivery (an index built beforehand becomes its partition's key) and leaves no index on id", async () => {
    const db = testDb.database;
    const prebuilt = await db.script(async (run) => {
      await run(
        `CREATE TABLE payhooks_migrations (id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      for (const m of listMigrations().filter((m) => m.id < 29)) {
        await run(m.sql);
        await run(`INSERT INTO payhooks_migrations (id, name) VALUES (${m.id}, '${m.name}')`);
      }
      // Attempts (one or two per delivery) in this week's partition, next week's and, from 2019, the DEFAULT one.
      await run(`INSERT INTO delivery_attempts (id, delivery_id, attempt_number, trigger, succeeded, started_at, duration_ms, status_code, delivery_created_at)
        SELECT 'wha_m' || g || '_' || n, 'whd_m' || g, n, 'automatic', n = 2, now(), 5, 200,
               CASE g % 3 WHEN 0 THEN now() WHEN 1 THEN now() + interval '7 days' ELSE timestamptz '2019-05-01 12:00:00Z' END
        FROM generate_series(1, 60) g, generate_series(1, 2) n WHERE n = 1 OR g % 2 = 0`);
      // The operator's step for a large history (CONCURRENTLY there; not in a transaction here).
      const [week] = await run(`SELECT tableoid::regclass::text AS rel FROM delivery_attempts WHERE delivery_id = 'whd_m3'`);
      await run(`CREATE UNIQUE INDEX attempts_key_next ON ${week!.rel} (delivery_id, attempt_number, delivery_created_at)`);
      const [idx] = await run(`SELECT 'attempts_key_next'::regclass::oid AS oid`);
      return { rel: String(week!.rel), oid: String(idx!.oid) };
    });
    const snapshot = () =>
      sql(
        db,
        `SELECT id, delivery_id, attempt_number, succeeded, delivery_created_at, tableoid::regclass::text AS rel FROM delivery_attempts ORDER BY id`,
      );
    const before = await snapshot();
    expect(before).toHaveLength(90);
    expect(new Set(before.map((r) => r.rel)).size).toBe(3);

    expect(await migrate(db)).toEqual(migrationNamesFrom(29));
    expect(await snapshot()).toEqual(before);
    const keys = await attemptKeys(db);
    expect(keys.length).toBeGreaterThanOrEqual(5); // the parent, three weeks, DEFAULT
    expect(keys).toEqual(keys.map((k) => keyedByDelivery(k.rel)));
    const [adopted] = await sql(db, `SELECT '${prebuilt.rel}_pkey'::regclass::oid AS oid`);
    expect(String(adopted!.oid)).toBe(prebuilt.oid);

    for (const where of [`delivery_id = 'whd_m3'`, `delivery_id = 'whd_m4' AND attempt_number = 2`, `delivery_id = 'whd_m2'`]) {
      await expect(sql(db, sameAttemptAgain(where)), where).rejects.toThrow(DUPLICATE);
    }
  });
});

describe('attempts keyed by their delivery on a running service', () => {
  const MONDAY = Date.UTC(2025, 5, 2, 10); // a Monday
  let svc: TestService;
  let clock: ManualClock;
  let platform: CreatedPlatform;

  beforeAll(async () => {
    clock = new ManualClock(MONDAY);
    svc = await startService({ dev: true }, { clock });
    platform = await svc.platform('Attempts');
    const r = await svc.api(platform.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url: 'http://127.0.0.1:9/hook',
      enabled_events: ['*'],
    });
    expect(r.status).toBe(201);
  });
  afterAll(async () => svc?.close());

  /** Claims every due delivery and records an attempt for each: failed and retried, or delivered. */
  async function attemptDue(succeeded: boolean): Promise<number> {
    const now = clock.now();
    const rows = await claimDue(svc.ctx.database, {
      now,
      leaseUntil: new Date(now.getTime() + 60_000),
      limit: 100,
      perEndpoint: 100,
      perPlatform: 100,
      excludeEndpoints: [],
      excludePlatforms: [],
      token: 'tok',
    });
    const recorded = await recordOutcomes(
      svc.ctx.database,
      rows.map((r) => ({
        deliveryId: r.id,
        endpointId: r.endpoint_id,
        token: 'tok',
        trigger: 'automatic' as const,
        state: succeeded ? ('delivered' as const) : ('failed_retrying' as const),
        nextAttemptAt: succeeded ? null : now,
        result: {
          succeeded,
          startedAt: now,
          durationMs: 5,
          statusCode: succeeded ? 200 : 500,
          responseBody: 'ok',
          errorKind: succeeded ? null : ('http_status' as never),
          errorMessage: null,
        },
      })),
      now,
      new AttemptStats(),
    );
    expect(recorded).toHaveLength(rows.length);
    return rows.length;
  }

  const attemptsOf = async (eventId: string) => {
    const r = await svc.api(platform.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?event_id=${eventId}`);
    expect(r.status).toBe(200);
    return (r.body.data as Array<{ id: string; attempts: Array<{ id: string; attempt_number: number; succeeded: boolean }> }>).flatMap(
      (d) => d.attempts,
    );
  };

  it('a week the retention job creates is keyed by delivery; attempts are recorded, listed, refused a second copy, and dropped with their week', async () => {
    const job = svc.ctx.createRetentionJob();
    expect((await job.runOnce()).created).toEqual(['20250602', '20250609', '20250616']);
    const keys = await attemptKeys(svc.ctx.database);
    expect(keys.map((k) => k.rel)).toEqual(expect.arrayContaining(['delivery_attempts_p20250602', 'delivery_attempts_p20250616']));
    expect(keys).toEqual(keys.map((k) => keyedByDelivery(k.rel)));

    const event = await publish(svc.ctx, platform.merchant_id);
    expect(await attemptDue(false)).toBe(1);
    expect(await attemptDue(true)).toBe(1);
    const attempts = await attemptsOf(event.event.id);
    expect(attempts.map((a) => [a.attempt_number, a.succeeded])).toEqual([
      [1, false],
      [2, true],
    ]);
    expect(attempts.every((a) => /^wha_[0-9A-Za-z]{24}$/.test(a.id))).toBe(true);
    const rows = await sql(svc.ctx.database, `SELECT count(*) AS n FROM delivery_attempts_p20250602`);
    expect(Number(rows[0]!.n)).toBe(2);
    await expect(sql(svc.ctx.database, sameAttemptAgain('attempt_number = 2'))).rejects.toThrow(DUPLICATE);

    // 60 days on (window 30 days): the week goes whole, its attempts with it.
    clock.advance(60 * DAY);
    const r = await job.runOnce();
    expect(r.dropped).toContain('20250602');
    expect(await attemptsOf(event.event.id)).toEqual([]);
    expect(await attemptKeys(svc.ctx.database)).not.toContainEqual(expect.objectContaining({ rel: 'delivery_attempts_p20250602' }));
  });

  it('attempts outside every week (the DEFAULT partition) are refused a second copy all the same, and purged with their delivery', async () => {
    clock.set(Date.UTC(2019, 4, 1, 12));
    const old = await publish(svc.ctx, platform.merchant_id);
    expect(await attemptDue(true)).toBe(1);
    const inDefault = await sql(svc.ctx.database, `SELECT count(*) AS n FROM delivery_attempts_default`);
    expect(Number(inDefault[0]!.n)).toBe(1);
    await expect(sql(svc.ctx.database, sameAttemptAgain(`delivery_created_at < '2020-01-01'`))).rejects.toThrow(DUPLICATE);

    clock.set(MONDAY + 70 * DAY);
    const r = await svc.ctx.createRetentionJob().runOnce();
    expect(r.defaultRowsDeleted).toBe(3); // the attempt, its delivery and its event
    expect(await attemptsOf(old.event.id)).toEqual([]);
    const left = await sql(svc.ctx.database, `SELECT count(*) AS n FROM delivery_attempts_default`);
    expect(Number(left[0]!.n)).toBe(0);
  });
});

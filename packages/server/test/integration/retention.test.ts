import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, startService, type TestService } from '../helpers/service.ts';
import { publish, payment } from '../helpers/publish.ts';
import { createTestDatabase, type TestDatabase, migrationNamesFrom } from '../helpers/database.ts';
import { claimDue } from '../../src/delivery/claim.ts';
import { recordOutcomes } from '../../src/delivery/record.ts';
import { AttemptStats } from '../../src/delivery/attempt-stats.ts';
import { listMigrations, migrate } from '../../src/db/migrate.ts';
import { publishEvent } from '../../src/events/publish.ts';
import type { Database } from '../../src/db/client.ts';
import type { RetentionJob } from '../../src/db/retention.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import { maintainPartitions } from '../../src/db/retention.ts';
import { AuditTrail } from '../../src/audit/trail.ts';
import { pino } from 'pino';

/**
 * Issue 10 item 3: events, deliveries and attempts are partitioned by week and the worker drops
 * whole weeks older than PAYHOOKS_RETENTION (here the default, 30 days), never a week with a
 * delivery still queued (retrying); expired idempotency keys go after 24 h. Time is a ManualClock.
 */

const DAY = 86_400_000;
const MONDAY = Date.UTC(2025, 2, 3, 10, 0, 0); // 2025-03-03 10:00 UTC, a Monday

let svc: TestService;
let clock: ManualClock;
let platform: CreatedPlatform;
let job: RetentionJob;

const sql = (database: Database, text: string) => database.script((run) => run(text));
const count = async (database: Database, text: string) => Number((await sql(database, text))[0]!.n);

async function partitionsOf(database: Database, table: string): Promise<string[]> {
  const rows = await sql(
    database,
    `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = '${table}'::regclass ORDER BY 1`,
  );
  return rows.map((r) => String(r.relname));
}

/** Claims every due delivery and records an automatic attempt for each: `outcome` decides by event id. */
async function attemptDue(
  outcome: (
    eventId: string,
    endpointId: string,
  ) => { succeeded: boolean; state: 'delivered' | 'failed_retrying' | 'exhausted'; next: Date | null },
): Promise<number> {
  const database = svc.ctx.database;
  const now = clock.now();
  const rows = await claimDue(database, {
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
    database,
    rows.map((r) => {
      const o = outcome(r.event_id, r.endpoint_id);
      return {
        deliveryId: r.id,
        endpointId: r.endpoint_id,
        token: 'tok',
        trigger: 'automatic' as const,
        state: o.state,
        nextAttemptAt: o.next,
        result: {
          succeeded: o.succeeded,
          startedAt: now,
          durationMs: 5,
          statusCode: o.succeeded ? 200 : 500,
          responseBody: 'ok',
          errorKind: o.succeeded ? null : ('http_status' as never),
          errorMessage: null,
        },
      };
    }),
    now,
    new AttemptStats(),
  );
  expect(recorded).toHaveLength(rows.length);
  return rows.length;
}

const deliveriesOf = async (eventId: string) =>
  (await svc.api(platform.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?event_id=${eventId}`)).body.data as Array<{
    id: string;
    endpoint_id: string;
    state: string;
    next_attempt_at: string | null;
    attempts: unknown[];
  }>;

async function endpoint(url: string): Promise<string> {
  const r = await svc.api(platform.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url, enabled_events: ['*'] });
  expect(r.status).toBe(201);
  return r.body.id as string;
}

beforeAll(async () => {
  clock = new ManualClock(MONDAY);
  svc = await startService({ dev: true }, { clock });
  platform = await svc.platform('Retention');
  await endpoint('http://127.0.0.1:9/hook');
  job = svc.ctx.createRetentionJob();
});
afterAll(async () => svc?.close());

describe('retention (issue 10 item 3)', () => {
  it('creates the current week and 2 weeks ahead for events, deliveries and attempts, once', async () => {
    const first = await job.runOnce();
    expect(first.ran).toBe(true);
    expect(first.created).toEqual(['20250303', '20250310', '20250317']);
    for (const t of ['events', 'webhook_deliveries', 'delivery_attempts']) {
      expect(await partitionsOf(svc.ctx.database, t)).toEqual(
        expect.arrayContaining(first.created.map((w) => `${t}_p${w}`).concat(`${t}_default`)),
      );
    }
    expect((await job.runOnce()).created).toEqual([]);
  });

  it("drops only weeks entirely older than the window, never a week with a delivery still being retried, a disabled endpoint's included", async () => {
    const delivered = await publish(svc.ctx, platform.merchant_id);
    const retrying = await publish(svc.ctx, platform.merchant_id);
    // A second endpoint, disabled after this event: its delivery stays on its schedule, each
    // attempt failing without a request (spec 3.2, 8), so it holds its week like any retry.
    const disabledEndpoint = await endpoint('http://127.0.0.1:9/disabled');
    const onDisabled = await publish(svc.ctx, platform.merchant_id);
    expect(
      (await svc.api(platform.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${disabledEndpoint}`, { status: 'disabled' })).status,
    ).toBe(200);
    // Rows of the current week land in its partition, not the default one.
    expect(await count(svc.ctx.database, `SELECT count(*) AS n FROM webhook_deliveries_p20250303`)).toBe(4);
    expect(await count(svc.ctx.database, `SELECT count(*) AS n FROM webhook_deliveries_default`)).toBe(0);
    const fail = { succeeded: false, state: 'failed_retrying' as const, next: new Date(clock.now().getTime() + 60_000) };
    expect(
      await attemptDue((id, endpointId) =>
        id === retrying.event.id || endpointId === disabledEndpoint ? fail : { succeeded: true, state: 'delivered', next: null },
      ),
    ).toBe(4);
    const disabledDelivery = (await deliveriesOf(onDisabled.event.id)).find((d) => d.endpoint_id === disabledEndpoint)!;
    expect(disabledDelivery).toMatchObject({ state: 'failed_retrying', next_attempt_at: expect.any(String) });
    clock.set(Date.UTC(2025, 2, 17, 9, 0, 0));
    const recent = await publish(svc.ctx, platform.merchant_id);

    // 30 days before 2025-04-08 00:00 is 2025-03-09: the week of 03-03 ends 03-10, inside the window.
    clock.set(Date.UTC(2025, 3, 8));
    let r = await job.runOnce();
    expect(r.dropped).toEqual([]);
    expect(await deliveriesOf(delivered.event.id)).toHaveLength(1);

    // 2025-04-11: that week is wholly older than 30 days, but two of its deliveries are still due.
    clock.set(Date.UTC(2025, 3, 11));
    r = await job.runOnce();
    expect(r.dropped).toEqual([]);
    expect(r.keptBusy).toEqual([{ week: '20250303', queued: 2 }]);
    expect((await deliveriesOf(retrying.event.id))[0]!.state).toBe('failed_retrying');
    expect((await deliveriesOf(delivered.event.id))[0]!.attempts).toHaveLength(1);

    // Their schedules end (exhausted): now the whole week goes, attempts, deliveries and events.
    expect(await attemptDue(() => ({ succeeded: false, state: 'exhausted', next: null }))).toBe(3); // the two, and the recent one
    r = await job.runOnce();
    expect(r.dropped).toEqual(['20250303']);
    expect(r.keptBusy).toEqual([]);
    for (const t of ['events', 'webhook_deliveries', 'delivery_attempts']) {
      expect(await partitionsOf(svc.ctx.database, t)).not.toContain(`${t}_p20250303`);
    }
    for (const e of [delivered, retrying, onDisabled]) {
      expect(await deliveriesOf(e.event.id)).toEqual([]);
      expect((await svc.api(platform.keys.sandbox, 'GET', `/api/v1/events/${e.event.id}`)).status).toBe(404);
    }
    expect((await svc.api(platform.keys.sandbox, 'GET', `/api/v1/webhook_deliveries/${disabledDelivery.id}`)).status).toBe(404);
    // Re-enabling the endpoint finds nothing left to resume from that week.
    expect(
      (await svc.api(platform.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${disabledEndpoint}`, { status: 'enabled' })).status,
    ).toBe(200);
    expect(await count(svc.ctx.database, `SELECT count(*) AS n FROM delivery_queue WHERE endpoint_id = '${disabledEndpoint}'`)).toBe(0);
    // The week of 03-17 ends 03-24, within 30 days of 04-11: kept, with its attempt.
    expect((await svc.api(platform.keys.sandbox, 'GET', `/api/v1/events/${recent.event.id}`)).status).toBe(200);
    expect((await deliveriesOf(recent.event.id))[0]!.attempts).toHaveLength(1);
    // And the weeks ahead of the new date exist.
    expect(await partitionsOf(svc.ctx.database, 'webhook_deliveries')).toEqual(
      expect.arrayContaining(['webhook_deliveries_p20250407', 'webhook_deliveries_p20250421']),
    );
    expect(
      (await svc.api(platform.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${disabledEndpoint}`, { status: 'disabled' })).status,
    ).toBe(200);
  });

  it('rows outside every week (the default partition) are purged row by row with the same rules', async () => {
    clock.set(Date.UTC(2024, 0, 1, 12));
    const old = await publish(svc.ctx, platform.merchant_id);
    const oldRetrying = await publish(svc.ctx, platform.merchant_id);
    expect(await count(svc.ctx.database, `SELECT count(*) AS n FROM webhook_deliveries_default`)).toBe(2);
    await attemptDue((id) =>
      id === old.event.id
        ? { succeeded: true, state: 'delivered', next: null }
        : { succeeded: false, state: 'failed_retrying', next: new Date(Date.UTC(2025, 3, 11, 1)) },
    );
    clock.set(Date.UTC(2025, 3, 11));
    const r = await job.runOnce();
    expect(r.defaultRowsDeleted).toBe(3); // the delivered one's attempt, delivery and event
    expect(await deliveriesOf(old.event.id)).toEqual([]);
    expect((await deliveriesOf(oldRetrying.event.id))[0]!.state).toBe('failed_retrying');
    expect((await svc.api(platform.keys.sandbox, 'GET', `/api/v1/events/${oldRetrying.event.id}`)).status).toBe(200);
  });

  it('Idempotency-Key records are removed once older than 24 hours', async () => {
    clock.set(Date.UTC(2025, 3, 12, 8));
    const body = { url: 'http://127.0.0.1:9/other', enabled_events: ['*'] };
    const first = await svc.api(platform.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', body, { 'idempotency-key': 'retention-k1' });
    expect(first.status).toBe(201);
    await svc.api(platform.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${first.body.id}`, { status: 'disabled' });
    const keys = () => count(svc.ctx.database, `SELECT count(*) AS n FROM idempotency_keys WHERE key = 'retention-k1'`);
    clock.advance(23 * 3_600_000);
    expect((await job.runOnce()).idempotencyKeysDeleted).toBe(0);
    expect(await keys()).toBe(1);
    clock.advance(2 * 3_600_000);
    expect((await job.runOnce()).idempotencyKeysDeleted).toBe(1);
    expect(await keys()).toBe(0);
  });

  it('an event idempotency key stays unique into the next week (at least 7 days), and goes with its week', async () => {
    clock.set(Date.UTC(2025, 3, 14, 8));
    await job.runOnce();
    const a = await publish(svc.ctx, platform.merchant_id, { idempotencyKey: 'evt-key-1' });
    clock.advance(7 * DAY); // a week later: the next partition, inside the key's window
    await job.runOnce();
    const b = await publish(svc.ctx, platform.merchant_id, { idempotencyKey: 'evt-key-1' });
    expect(b.replayed).toBe(true);
    expect(b.event.id).toBe(a.event.id);
    clock.advance(60 * DAY);
    await attemptDue(() => ({ succeeded: true, state: 'delivered', next: null }));
    await job.runOnce();
    expect(await count(svc.ctx.database, `SELECT count(*) AS n FROM event_idempotency_keys WHERE idempotency_key = 'evt-key-1'`)).toBe(0);
    const c = await publish(svc.ctx, platform.merchant_id, { idempotencyKey: 'evt-key-1' });
    expect(c.replayed).toBe(false);
    expect(c.event.id).not.toBe(a.event.id);
  });
});

describe('the audit trail keeps its own window (PAYHOOKS_AUDIT_RETENTION) and loses rows only with their week', () => {
  // On the service's database, years after the tests above (their weeks are long gone by then).

  const refused = (database: Database, text: string) =>
    sql(database, text).then(
      () => 'done',
      (err: Error) => String(err.message),
    );

  it('weeks ahead are created refusing TRUNCATE, whole weeks past the window are dropped, and old rows of the default partition go only all together', async () => {
    const database = svc.ctx.database;
    const t0 = Date.UTC(2032, 0, 5); // a Monday
    const clock = new ManualClock(t0 + DAY);
    const trail = new AuditTrail({ logger: pino({ level: 'silent' }), clock });
    const subject = { platformId: 'plt_audit', environment: null, actor: { type: 'system' as const, id: 'test' } };
    const made = await maintainPartitions(database, { now: new Date(t0), retentionMs: 30 * DAY, auditRetentionMs: 30 * DAY });
    expect(made.auditCreated).toEqual(['20320105', '20320112', '20320119']);
    await trail.record(database.db, subject, { action: 'test.kept_a_while', resourceType: 'test', resourceId: 'a' });
    clock.set(t0 + 8 * DAY);
    await trail.record(database.db, subject, { action: 'test.next_week', resourceType: 'test', resourceId: 'b' });
    expect(await refused(database, 'TRUNCATE audit_events_p20320105')).toMatch(/append-only/);
    expect(await refused(database, 'DELETE FROM audit_events_p20320105')).toMatch(/append-only/);
    // 40 days on, the window (30 days) covers the second week but not the first.
    const later = await maintainPartitions(database, { now: new Date(t0 + 40 * DAY), retentionMs: 30 * DAY, auditRetentionMs: 30 * DAY });
    expect(later.auditDropped).toEqual(['20320105']);
    const left = await sql(database, "SELECT resource_id FROM audit_events WHERE platform_id = 'plt_audit' ORDER BY 1");
    expect(left.map((r) => r.resource_id)).toEqual(['b']);

    // Rows outside every week land in the default partition; it is dropped (and made anew,
    // refusing TRUNCATE) only once every row in it is past the window.
    clock.set(Date.UTC(2020, 5, 1));
    await trail.record(database.db, subject, { action: 'test.very_old', resourceType: 'test', resourceId: 'c' });
    clock.set(Date.UTC(2040, 0, 2));
    await trail.record(database.db, subject, { action: 'test.far_future', resourceType: 'test', resourceId: 'd' });
    await maintainPartitions(database, { now: new Date(t0 + 40 * DAY), retentionMs: 30 * DAY, auditRetentionMs: 30 * DAY });
    expect(Number((await sql(database, "SELECT count(*) AS n FROM audit_events_default WHERE platform_id = 'plt_audit'"))[0]!.n)).toBe(2);
    await maintainPartitions(database, { now: new Date(Date.UTC(2041, 0, 1)), retentionMs: 30 * DAY, auditRetentionMs: 30 * DAY });
    expect(Number((await sql(database, 'SELECT count(*) AS n FROM audit_events_default'))[0]!.n)).toBe(0);
    expect(await refused(database, 'TRUNCATE audit_events_default')).toMatch(/append-only/);
  });
});

describe('migration 0007 on a database that already has rows (upgrading from 0006)', () => {
  let testDb: TestDatabase;
  beforeAll(async () => {
    testDb = await createTestDatabase({ migrate: false });
  });
  afterAll(async () => testDb?.dispose());

  it('keeps every event, delivery, attempt and key, their uniqueness, and queues exactly the deliveries with work to do', async () => {
    const db = testDb.database;
    await db.script(async (run) => {
      await run(
        `CREATE TABLE payhooks_migrations (id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      for (const m of listMigrations().filter((m) => m.id < 7)) {
        await run(m.sql);
        await run(`INSERT INTO payhooks_migrations (id, name) VALUES (${m.id}, '${m.name}')`);
      }
      await run(`INSERT INTO platforms (id, name) VALUES ('plt_m', 'M')`);
      await run(`INSERT INTO merchants (id, platform_id, name) VALUES ('mch_m', 'plt_m', 'M')`);
      await run(
        `INSERT INTO webhook_endpoints (id, platform_id, environment, url, enabled_events, status, secret_ciphertext) VALUES ('we_m', 'plt_m', 'sandbox', 'https://x.example/h', '{*}', 'enabled', 'c')`,
      );
      // 200 events over the last ~40 weeks (and one far older), each with two deliveries and attempts.
      await run(`INSERT INTO events (id, platform_id, environment, merchant_id, type, body, idempotency_key, created_at)
        SELECT 'evt_m' || g, 'plt_m', 'sandbox', 'mch_m', 'payment.succeeded', '{"n":' || g || '}', CASE WHEN g % 10 = 0 OR g = 3 THEN 'key' || g END,
               CASE WHEN g = 0 THEN timestamptz '2019-05-01 00:00:00Z' ELSE now() - g * interval '33 hours' END
        FROM generate_series(0, 199) g`);
      // Mostly delivered; a few retrying (due), one leased by a worker, one parked (due_at NULL).
      await run(`INSERT INTO webhook_deliveries (id, event_id, endpoint_id, copy, platform_id, environment, state, attempt_count, automatic_attempts, next_attempt_at, due_at, lease_token, leased_at, created_at, updated_at)
        SELECT 'whd_m' || e.id || '_' || c, e.id, 'we_m', c, 'plt_m', 'sandbox',
               CASE WHEN e.id IN ('evt_m1', 'evt_m2', 'evt_m3') AND c = 1 THEN 'failed_retrying' ELSE 'delivered' END, 1, 1,
               CASE WHEN e.id IN ('evt_m1', 'evt_m2', 'evt_m3') AND c = 1 THEN now() + interval '1 minute' END,
               CASE WHEN e.id IN ('evt_m1', 'evt_m2') AND c = 1 THEN now() + interval '1 minute' END,
               CASE WHEN e.id = 'evt_m2' AND c = 1 THEN 'w_old:1' END,
               CASE WHEN e.id = 'evt_m2' AND c = 1 THEN now() END,
               e.created_at, e.created_at
        FROM events e CROSS JOIN generate_series(1, 2) c`);
      await run(`INSERT INTO delivery_attempts (id, delivery_id, attempt_number, trigger, succeeded, started_at, duration_ms, status_code)
        SELECT 'att_' || d.id, d.id, 1, 'automatic', true, d.created_at, 7, 200 FROM webhook_deliveries d`);
    });
    const snapshot = async () => ({
      events: await sql(
        db,
        `SELECT id, platform_id, environment, merchant_id, type, body, idempotency_key, created_at FROM events ORDER BY id`,
      ),
      deliveries: await sql(
        db,
        `SELECT id, event_id, endpoint_id, copy, state, attempt_count, automatic_attempts, next_attempt_at, created_at, updated_at FROM webhook_deliveries ORDER BY id`,
      ),
      attempts: await sql(
        db,
        `SELECT id, delivery_id, attempt_number, trigger, succeeded, started_at, duration_ms, status_code FROM delivery_attempts ORDER BY id`,
      ),
    });
    const before = await snapshot();
    expect(before.attempts).toHaveLength(400);

    // 0007 and every migration after it.
    expect(await migrate(db)).toEqual(migrationNamesFrom(7));
    expect(await snapshot()).toEqual(before);
    const partitioned = await sql(db, `SELECT c.relname FROM pg_partitioned_table p JOIN pg_class c ON c.oid = p.partrelid ORDER BY 1`);
    expect(partitioned.map((r) => r.relname)).toEqual([
      'audit_events',
      'delivery_attempts',
      'event_idempotency_keys',
      'events',
      'webhook_deliveries',
    ]);
    expect(
      await count(
        db,
        `SELECT count(*) AS n FROM delivery_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE a.delivery_created_at <> d.created_at`,
      ),
    ).toBe(0);
    // The 2019 row is outside every week: the default partition holds it.
    expect(await count(db, `SELECT count(*) AS n FROM events_default`)).toBe(1);
    expect(await count(db, `SELECT count(*) AS n FROM event_idempotency_keys`)).toBe(21);
    // The queue: the two with a due time (one still leased, lease kept); the parked one is not queued.
    const queued = await sql(
      db,
      `SELECT delivery_id, lease_token, delivery_created_at = (SELECT created_at FROM events WHERE id = q.event_id) AS same_week FROM delivery_queue q ORDER BY 1`,
    );
    expect(queued).toEqual([
      { delivery_id: 'whd_mevt_m1_1', lease_token: null, same_week: true },
      { delivery_id: 'whd_mevt_m2_1', lease_token: 'w_old:1', same_week: true },
    ]);

    // Uniqueness as before: (event, endpoint, copy), and the event idempotency key per tenant
    // within its window (key3's event is 99 hours old; key150's, 206 days, is past any window).
    await expect(
      sql(
        db,
        `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, copy, platform_id, environment, state, attempt_count, automatic_attempts, created_at, updated_at)
        SELECT 'whd_dup', id, 'we_m', 1, 'plt_m', 'sandbox', 'pending', 0, 0, created_at, created_at FROM events WHERE id = 'evt_m5'`,
      ),
    ).rejects.toThrow(/duplicate key|unique/);
    const again = await db.db.transaction((tx) =>
      publishEvent(
        tx,
        { type: 'payment.succeeded', merchantId: 'mch_m', environment: 'sandbox', object: payment(), idempotencyKey: 'key3' },
        new Date(),
      ),
    );
    expect(again.replayed).toBe(true);
    expect(again.event).toEqual({ n: 3 });
    const pastWindow = await db.db.transaction((tx) =>
      publishEvent(
        tx,
        { type: 'payment.succeeded', merchantId: 'mch_m', environment: 'sandbox', object: payment(), idempotencyKey: 'key150' },
        new Date(),
      ),
    );
    expect(pastWindow.replayed).toBe(false);
  });
});

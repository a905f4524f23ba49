import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { payment } from '../helpers/publish.ts';
import { until } from '../helpers/wait.ts';
import { maintainPartitions } from '../../src/db/retention.ts';
import { publishEvent, type PublishResult } from '../../src/events/publish.ts';
import { createPlatform, type CreatedPlatform } from '../../src/tenancy/platforms.ts';

/**
 * A key's uniqueness across a week boundary (migration 0028), with two transactions at once: a
 * partitioned table's unique index is unique within a week only, so a publish in a week's last
 * day writes its key in its week and the next, and two publishes of one key on either side of a
 * Monday 00:00 meet on a common row.
 */

const DAY = 86_400_000;
const MONDAY = Date.UTC(2027, 5, 7); // Monday 2027-06-07 00:00 UTC
const SUNDAY = MONDAY - 1; // the last millisecond of the week before

let testDb: TestDatabase;
let platform: CreatedPlatform;

beforeAll(async () => {
  testDb = await createTestDatabase();
  platform = await createPlatform(testDb.database.db, 'Boundary');
  await maintainPartitions(testDb.database, { now: new Date(SUNDAY), retentionMs: 30 * DAY });
});
afterAll(async () => testDb?.dispose());

const publishAt = (key: string, at: number) =>
  testDb.database.db.transaction((tx) =>
    publishEvent(
      tx,
      { type: 'payment.succeeded', merchantId: platform.merchant_id, environment: 'sandbox', object: payment(), idempotencyKey: key },
      new Date(at),
    ),
  );

const waitingOnLocks = async () =>
  Number(
    (
      await testDb.database.query<{ n: string }>(
        `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        [],
      )
    )[0]!.n,
  );

describe('one event per key across a Monday 00:00', () => {
  it.each([
    ['Sunday 23:59:59.999 first, Monday 00:00 second', SUNDAY, MONDAY, 'k-sun-first'],
    ['Monday 00:00 first, Sunday 23:59:59.999 second (a clock behind)', MONDAY, SUNDAY, 'k-mon-first'],
  ])('%s, while the first is not committed: the second waits, then answers the first event', async (_, firstAt, secondAt, key) => {
    let release!: () => void;
    const hold = new Promise<void>((r) => (release = r));
    let written!: (r: PublishResult) => void;
    const firstWritten = new Promise<PublishResult>((r) => (written = r));
    const first = testDb.database.db.transaction(async (tx) => {
      const r = await publishEvent(
        tx,
        { type: 'payment.succeeded', merchantId: platform.merchant_id, environment: 'sandbox', object: payment(), idempotencyKey: key },
        new Date(firstAt),
      );
      written(r);
      await hold; // not committed until the second is seen waiting
      return r;
    });
    await firstWritten;
    const second = publishAt(key, secondAt);
    await until(async () => (await waitingOnLocks()) > 0);
    release();
    const [a, b] = await Promise.all([first, second]);
    expect(a.replayed).toBe(false);
    expect(b).toMatchObject({ replayed: true, deliveries: 0 });
    expect(b.event.id).toBe(a.event.id);
    const events = await testDb.database.query<{ n: string }>(`SELECT count(*) AS n FROM events WHERE idempotency_key = $1`, [key]);
    expect(Number(events[0]!.n)).toBe(1);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, startService, type TestService } from '../helpers/service.ts';
import { payment, publish } from '../helpers/publish.ts';
import { maintainPartitions } from '../../src/db/retention.ts';
import { publishEvents, type PublishResult } from '../../src/events/publish.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';

/**
 * An event's idempotency key is unique for at least 7 days, not while its event is kept
 * (docs/decisions/event-key-window.md): a publish looks at its own week and the previous one,
 * so a key used again in the next week is a replay, and one used again two weeks on or later
 * makes a new event, which later replays answer even while the older event is still kept.
 */

const DAY = 86_400_000;
const HOUR = 3_600_000;
const T = Date.UTC(2027, 8, 6); // Monday 2027-09-06 00:00 UTC: week W0; W1 starts 09-13, W2 09-20, W3 09-27

let svc: TestService;
let clock: ManualClock;
let platform: CreatedPlatform;

const at = (t: number) => {
  clock.set(t);
  return maintainPartitions(svc.ctx.database, { now: new Date(t), retentionMs: 30 * DAY });
};
const pub = (key: string) => publish(svc.ctx, platform.merchant_id, { idempotencyKey: key });
/** The same key through the batch statement (its own text), between two unkeyed events. */
async function pubInBatch(key: string): Promise<PublishResult> {
  const outcomes = await svc.ctx.database.db.transaction((tx) =>
    publishEvents(
      tx,
      [undefined, key, undefined].map((idempotencyKey) => ({
        type: 'payment.succeeded',
        merchantId: platform.merchant_id,
        environment: 'sandbox' as const,
        object: payment(),
        idempotencyKey,
      })),
      clock.now(),
    ),
  );
  const outcome = outcomes[1]!;
  if (!outcome.ok) throw outcome.error;
  return outcome.result;
}
const eventsOf = async (key: string) =>
  Number((await svc.ctx.database.query<{ n: string }>(`SELECT count(*) AS n FROM events WHERE idempotency_key = $1`, [key]))[0]!.n);

beforeAll(async () => {
  clock = new ManualClock(T);
  svc = await startService({ dev: true }, { clock });
  // No endpoints: no week is held by a queued delivery.
  platform = await svc.platform('Key window');
});
afterAll(async () => svc?.close());

describe('an idempotency key is unique for at least 7 days', () => {
  it('used again in the next week, up to its last minute, it is a replay of the same event (one statement and a batch)', async () => {
    await at(T + 60_000); // Monday 00:01 of W0: no guard row, only the main row in W0
    const first = await pub('k-next-week');
    expect(first.replayed).toBe(false);

    await at(T + 8 * DAY);
    expect(await pub('k-next-week')).toMatchObject({ replayed: true, deliveries: 0, event: { id: first.event.id } });
    await at(T + 14 * DAY - 60_000); // Sunday 23:59 of W1, almost 14 days on
    expect(await pub('k-next-week')).toMatchObject({ replayed: true, deliveries: 0, event: { id: first.event.id } });
    expect(await pubInBatch('k-next-week')).toMatchObject({ replayed: true, deliveries: 0, event: { id: first.event.id } });
    expect(await eventsOf('k-next-week')).toBe(1);
  });

  it('used again two weeks on it makes a new event, and replays after that answer the newer one, though the first is kept', async () => {
    await at(T + 2 * HOUR); // W0
    const first = await pub('k-two-weeks');
    await at(T + 14 * DAY + 2 * HOUR); // W2: W0 is not looked at
    const second = await pub('k-two-weeks');
    expect(second.replayed).toBe(false);
    expect(second.event.id).not.toBe(first.event.id);
    expect(await eventsOf('k-two-weeks')).toBe(2);

    // The same week (found on the primary key), then the next (found by the lookup).
    expect(await pub('k-two-weeks')).toMatchObject({ replayed: true, event: { id: second.event.id } });
    expect(await pubInBatch('k-two-weeks')).toMatchObject({ replayed: true, event: { id: second.event.id } });
    await at(T + 22 * DAY);
    expect(await pub('k-two-weeks')).toMatchObject({ replayed: true, event: { id: second.event.id } });
    expect(await pubInBatch('k-two-weeks')).toMatchObject({ replayed: true, event: { id: second.event.id } });
    expect(await eventsOf('k-two-weeks')).toBe(2);
  });

  it("published in a week's last day, its guard row in the next week does not hold the key a week later", async () => {
    // Sunday of W3: main row in W3, guard in W4. In W5 only W4 is looked at, which holds no main row.
    await at(T + 27 * DAY + HOUR);
    const first = await pub('k-guard');
    await at(T + 28 * DAY + HOUR); // Monday of W4: meets the guard
    expect(await pub('k-guard')).toMatchObject({ replayed: true, event: { id: first.event.id } });
    await at(T + 35 * DAY + HOUR); // W5
    const later = await pub('k-guard');
    expect(later.replayed).toBe(false);
    expect(await pub('k-guard')).toMatchObject({ replayed: true, event: { id: later.event.id } });
  });
});

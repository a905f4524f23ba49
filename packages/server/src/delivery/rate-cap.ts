import type { Database } from '../db/client.ts';
import { runAlone, statement } from '../db/statement.ts';

/**
 * A merchant's `max_requests_per_second` on an endpoint, held across every worker of a fleet.
 *
 * The endpoint row keeps `rate_next_at`, the earliest start of its next request (the generic
 * cell rate algorithm). A worker holding claimed rows of a capped endpoint reserves start times
 * for them with one call of `payhooks.reserve_rate` (migration 0025): under the row's lock,
 * on the database's clock, it hands out consecutive starts one spacing (1 s / N) apart, never one
 * more than RATE_HORIZON_MS ahead, and moves `rate_next_at` past them. The worker waits for each
 * start on a timer (no polling), holding the endpoint's slot but nothing else; rows that got no
 * start are handed back to the queue as due when the cap has room again, so a backlog waits in
 * the database, not in memory, and no claim picks them up before then.
 *
 * Consecutive starts are a spacing apart whoever reserved them. An endpoint without a cap never
 * calls this: the claim says which rows have one.
 */
export const RATE_HORIZON_MS = 1000;

/**
 * Starts are spaced as if a second lasted this long (1 s / N * 1.05), and each starts between its
 * reserved time and RATE_LATE_MS after it, or not at all (the row goes back to the queue): a
 * worker whose event loop or database answer was slow gives its start up instead of sending it
 * together with the next ones. Any one second then holds at most N + 1 starts (the window
 * stretched by RATE_LATE_MS holds 1.05 s / 1.05 * N slots, plus one at its edge), and at the
 * receiver, whose requests arrive a varying few milliseconds after their start, about the same.
 * The merchant gets about 95% of the cap under a backlog.
 */
export const RATE_SECOND_MS = 1050;

/** How late a reserved start may still go (see RATE_SECOND_MS). */
export const RATE_LATE_MS = 50;

export interface RateReservation {
  /** Rows that may start: the first after `waitMs`, then one every `spacingMs`. */
  granted: number;
  waitMs: number;
  spacingMs: number;
  /** When the cap has room again, from now: the due time of rows that got no start. */
  nextFreeMs: number;
}

const RESERVE = statement<
  { endpoint_id: string; wanted: number; horizon_ms: number; second_ms: number },
  { granted: number; wait_ms: number; spacing_ms: number; next_free_ms: number }
>(
  'reserve_rate',
  'SELECT granted, wait_ms, spacing_ms, next_free_ms FROM payhooks.reserve_rate(:endpoint_id, :wanted, :horizon_ms, :second_ms)',
);

export async function reserveRate(database: Database, endpointId: string, wanted: number): Promise<RateReservation> {
  const [row] = await runAlone(database, RESERVE, {
    endpoint_id: endpointId,
    wanted,
    horizon_ms: RATE_HORIZON_MS,
    second_ms: RATE_SECOND_MS,
  });
  if (!row) return { granted: wanted, waitMs: 0, spacingMs: 0, nextFreeMs: 0 };
  return {
    granted: row.granted,
    waitMs: Math.max(0, row.wait_ms),
    spacingMs: row.spacing_ms,
    nextFreeMs: Math.max(0, row.next_free_ms),
  };
}

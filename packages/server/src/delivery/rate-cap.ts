import type { Database } from '../db/client.ts';

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
 * Starts are spaced as if a second lasted this long (1 s / N * 1.05). A request reaches the
 * receiver a little after its start (the timer, the event loop, a new connection's handshake),
 * by a varying amount; N + 1 consecutive requests span at least 1.05 s at the sender, so a
 * one-second window at the receiver sees more than N only when that delay varies by more than
 * 50 ms between them, and then one more. The merchant gets about 95% of the cap under a backlog.
 */
export const RATE_SECOND_MS = 1050;

export interface RateReservation {
  /** Rows that may start: the first after `waitMs`, then one every `spacingMs`. */
  granted: number;
  waitMs: number;
  spacingMs: number;
  /** When the cap has room again, from now: the due time of rows that got no start. */
  nextFreeMs: number;
}

export async function reserveRate(database: Database, endpointId: string, wanted: number): Promise<RateReservation> {
  const [row] = await database.query<{ granted: number; wait_ms: number; spacing_ms: number; next_free_ms: number }>(
    'SELECT granted, wait_ms, spacing_ms, next_free_ms FROM payhooks.reserve_rate($1, $2, $3, $4)',
    [endpointId, wanted, RATE_HORIZON_MS, RATE_SECOND_MS],
    'reserve_rate',
  );
  if (!row) return { granted: wanted, waitMs: 0, spacingMs: 0, nextFreeMs: 0 };
  return {
    granted: Number(row.granted),
    waitMs: Math.max(0, Number(row.wait_ms)),
    spacingMs: Number(row.spacing_ms),
    nextFreeMs: Math.max(0, Number(row.next_free_ms)),
  };
}

import type { Database } from '../db/client.ts';
import { runAlone, statement } from '../db/statement.ts';

/**
 * A receiver that answers 429 or 503 with `Retry-After` (retry-after.ts) gets no new automatic
 * attempt until then, from any worker:
 *
 * - the worker that got the answer keeps the pause in memory at once and hands back the rows it
 *   holds for the endpoint, due when the pause ends;
 * - `pauseEndpoint` writes `paused_until` on the endpoint (never shortening a pause already
 *   there), moves the endpoint's unleased queue rows due before then to its end (and their
 *   deliveries' `next_attempt_at`, so the API shows when they go), and NOTIFYs PAUSE_CHANNEL so
 *   other workers hand back the rows they hold too;
 * - the claim returns `paused_until` with each row, so a row published during the pause is
 *   handed back, unattempted, as due when the pause ends.
 *
 * The failed attempt counts like any other and its retry keeps the schedule's time, moved to the
 * pause's end if that is later: never earlier than the schedule says.
 */
export const PAUSE_CHANNEL = 'payhooks_endpoint_paused';

const PAUSE = statement<{ endpoint_id: string; until: Date; channel: string }, never>(
  'pause_endpoint',
  `WITH e AS (
     UPDATE webhook_endpoints SET paused_until = greatest(coalesce(paused_until, :until), :until) WHERE id = :endpoint_id
     RETURNING paused_until
   ), q AS (
     UPDATE delivery_queue SET due_at = (SELECT paused_until FROM e)
     WHERE endpoint_id = :endpoint_id AND lease_token IS NULL AND due_at < (SELECT paused_until FROM e)
     RETURNING delivery_id, delivery_created_at
   ), d AS (
     UPDATE webhook_deliveries d SET next_attempt_at = (SELECT paused_until FROM e)
     FROM q WHERE d.id = q.delivery_id AND d.created_at = q.delivery_created_at
   )
   SELECT pg_notify(:channel, :endpoint_id || ' ' || (extract(epoch FROM paused_until) * 1000)::bigint) FROM e`,
);

export async function pauseEndpoint(database: Database, endpointId: string, until: Date): Promise<void> {
  await runAlone(database, PAUSE, { endpoint_id: endpointId, until, channel: PAUSE_CHANNEL });
}

/** A PAUSE_CHANNEL payload (`<endpoint id> <until, ms since the epoch>`); null if it isn't one. */
export function parsePauseNotice(payload: string): { endpointId: string; untilMs: number } | null {
  const space = payload.indexOf(' ');
  if (space <= 0) return null;
  const untilMs = Number(payload.slice(space + 1));
  return Number.isFinite(untilMs) ? { endpointId: payload.slice(0, space), untilMs } : null;
}

import { sql } from 'drizzle-orm';
import type { Queryable } from '../db/client.ts';

/**
 * A disabled endpoint gets no attempts: its unfinished deliveries are parked, in the same
 * transaction as the status change, by taking them out of `delivery_queue` (migration 0007): an
 * unfinished delivery without a queue row is parked, and shows `next_attempt_at: null`. Rows
 * leased at that moment finish their attempt; the worker parks them at their next claim.
 * Re-enabling puts them back on their schedule (or due at once, for those already due).
 */
export async function parkEndpointDeliveries(db: Queryable, endpointId: string): Promise<void> {
  await db.execute(sql`DELETE FROM delivery_queue WHERE endpoint_id = ${endpointId} AND lease_token IS NULL`);
}

export async function resumeEndpointDeliveries(db: Queryable, endpointId: string, now: Date): Promise<void> {
  // Through webhook_deliveries_endpoint_idx in each week: a rare operation, not the hot path.
  await db.execute(sql`INSERT INTO delivery_queue (delivery_id, delivery_created_at, event_id, endpoint_id, platform_id, due_at)
    SELECT d.id, d.created_at, d.event_id, d.endpoint_id, d.platform_id, COALESCE(d.next_attempt_at, ${now})
    FROM webhook_deliveries d
    WHERE d.endpoint_id = ${endpointId} AND d.state IN ('pending', 'failed_retrying')
    ON CONFLICT (delivery_id) DO NOTHING`);
  await db.execute(sql`SELECT pg_notify('payhooks_deliveries', '')`);
}

/**
 * A deleted endpoint's unfinished deliveries end: `cancelled`, reason `endpoint_deleted`, no
 * schedule, out of the queue. Rows leased at that moment finish their attempt, and the worker
 * cancels them at their next claim (claim.ts `cancelClaims`).
 */
export async function cancelEndpointDeliveries(db: Queryable, endpointId: string, now: Date): Promise<void> {
  await db.execute(sql`WITH leased AS (
      SELECT delivery_id FROM delivery_queue WHERE endpoint_id = ${endpointId} AND lease_token IS NOT NULL
    ), dequeued AS (
      DELETE FROM delivery_queue WHERE endpoint_id = ${endpointId} AND lease_token IS NULL
    )
    UPDATE webhook_deliveries
    SET state = 'cancelled', cancel_reason = 'endpoint_deleted', next_attempt_at = NULL, updated_at = ${now}
    WHERE endpoint_id = ${endpointId} AND state IN ('pending', 'failed_retrying')
      AND id NOT IN (SELECT delivery_id FROM leased)`);
}

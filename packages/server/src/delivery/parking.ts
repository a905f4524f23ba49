import { sql } from 'drizzle-orm';
import type { Queryable } from '../db/client.ts';

/**
 * A disabled endpoint's deliveries stay in `delivery_queue`, on their schedule: each attempt that
 * falls due is recorded as failed without a request (the worker, `endpoint_disabled`) and counts
 * toward the 8, so they end `exhausted` like any other (spec 3.2, 8). Enabling the endpoint lets
 * the remaining attempts run.
 *
 * Releases before issue 22 parked them instead (took them out of the queue). `resumeEndpointDeliveries`
 * puts any such delivery back on its schedule (or due at once, if it is already due): when the
 * endpoint is enabled, and, for endpoints still disabled, once per process start
 * (`requeueParkedDeliveries`), so a rolling upgrade leaves none behind.
 */
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
 * Deliveries parked by an earlier release on endpoints that are still disabled go back on their
 * schedule (they then fail without a request until exhausted, or run once enabled). Reaches the
 * deliveries through the disabled endpoints (few) and each week's endpoint index.
 */
export async function requeueParkedDeliveries(db: Queryable, now: Date): Promise<void> {
  await db.execute(sql`INSERT INTO delivery_queue (delivery_id, delivery_created_at, event_id, endpoint_id, platform_id, due_at)
    SELECT d.id, d.created_at, d.event_id, d.endpoint_id, d.platform_id, COALESCE(d.next_attempt_at, ${now})
    FROM webhook_endpoints w
    JOIN webhook_deliveries d ON d.endpoint_id = w.id AND d.state IN ('pending', 'failed_retrying')
    WHERE w.status = 'disabled' AND w.deleted_at IS NULL
    ON CONFLICT (delivery_id) DO NOTHING`);
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

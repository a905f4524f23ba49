import { sql } from 'drizzle-orm';
import type { Queryable } from '../db/client.ts';

/**
 * A disabled endpoint gets no attempts: its unfinished deliveries are parked
 * (`due_at` NULL, out of the claim index) in the same transaction as the status change.
 * Re-enabling resumes them on their schedule (or at once, for those already due).
 */
export async function parkEndpointDeliveries(db: Queryable, endpointId: string): Promise<void> {
  await db.execute(sql`UPDATE webhook_deliveries SET due_at = NULL
    WHERE endpoint_id = ${endpointId} AND state IN ('pending', 'failed_retrying') AND lease_token IS NULL`);
}

export async function resumeEndpointDeliveries(db: Queryable, endpointId: string, now: Date): Promise<void> {
  await db.execute(sql`UPDATE webhook_deliveries SET due_at = COALESCE(next_attempt_at, ${now})
    WHERE endpoint_id = ${endpointId} AND state IN ('pending', 'failed_retrying') AND due_at IS NULL`);
  await db.execute(sql`SELECT pg_notify('payhooks_deliveries', '')`);
}

/**
 * A deleted endpoint's unfinished deliveries end: `cancelled`, reason `endpoint_deleted`, no
 * schedule. Rows leased at that moment finish their attempt, and the worker cancels them at
 * their next claim (claim.ts `cancelClaims`).
 */
export async function cancelEndpointDeliveries(db: Queryable, endpointId: string, now: Date): Promise<void> {
  await db.execute(sql`UPDATE webhook_deliveries
    SET state = 'cancelled', cancel_reason = 'endpoint_deleted', next_attempt_at = NULL, due_at = NULL, updated_at = ${now}
    WHERE endpoint_id = ${endpointId} AND state IN ('pending', 'failed_retrying') AND lease_token IS NULL`);
}

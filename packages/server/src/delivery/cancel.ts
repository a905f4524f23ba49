import type { Database } from '../db/client.ts';
import { runAlone, statement } from '../db/statement.ts';
import type { Scope } from '../scope.ts';

/**
 * A merchant's cancel of one unfinished delivery (the portal's "Cancel delivery"): `cancelled`
 * with reason `manual`, no schedule, out of the queue, in one statement.
 *
 * Only while no attempt is in flight: a queue row holding a lease (a worker's claim, a manual
 * replay) keeps the delivery as it is, and its outcome is recorded as usual. The queue row and then
 * the delivery row are locked (the order the worker's record takes them in: the other order could
 * deadlock with it), so a claim or a record that commits meanwhile is seen as it is after it: a
 * row claimed meanwhile is in flight, a delivery recorded meanwhile as delivered or exhausted is
 * not found. A delivery out of the queue (parked behind a disabled endpoint) is
 * cancelled as it is. On an endpoint with per-object ordering, the object's later deliveries
 * were waiting for this queue row; they go out once it is gone.
 */
const CANCEL = statement<{ id: string; platform_id: string; environment: string; now: Date }, { id: string }>(
  'cancel_delivery',
  `
WITH q AS (
  -- Locked whatever its lease, so that a claim committed meanwhile is read as it is now (a
  -- condition on the lease here would be judged on the row as the statement began). \`d\`'s
  -- filter reads it, so it is locked before the delivery row is.
  SELECT q.lease_token FROM delivery_queue q WHERE q.delivery_id = :id FOR UPDATE
), d AS (
  SELECT d.id, d.created_at FROM webhook_deliveries d
  WHERE d.id = :id AND d.platform_id = :platform_id AND d.environment = :environment AND d.state IN ('pending', 'failed_retrying')
    AND NOT EXISTS (SELECT 1 FROM q WHERE q.lease_token IS NOT NULL)
  FOR UPDATE
), dequeued AS (
  DELETE FROM delivery_queue q USING d WHERE q.delivery_id = d.id
)
UPDATE webhook_deliveries w
SET state = 'cancelled', cancel_reason = 'manual', next_attempt_at = NULL, updated_at = :now
FROM d
WHERE w.id = d.id AND w.created_at = d.created_at
RETURNING w.id`,
);

/** True when the delivery was cancelled; false when it is not in scope, finished, or in flight. */
export async function cancelDelivery(database: Database, scope: Scope, id: string, now: Date): Promise<boolean> {
  const rows = await runAlone(database, CANCEL, { id, platform_id: scope.platformId, environment: scope.environment, now });
  return rows.length === 1;
}

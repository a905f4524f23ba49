import { sql } from 'drizzle-orm';
import { runAlone, statement } from '../db/statement.ts';
import type { Database, Queryable } from '../db/client.ts';
import type { DeliveryOrder } from '../db/schema.ts';

/**
 * Per-object ordering (migration 0016), opt-in per endpoint with `delivery_order: "per_object"`:
 * the events about one object (`data.object.id`) go to the endpoint one at a time, in the order
 * they were published. A queue row of such an endpoint carries the object's id (`order_key`,
 * written when the event is published) and the claim (claim.ts) passes it over while an earlier
 * row of the same endpoint and object is still queued: pending, retrying on its schedule, or in
 * flight. Delivered, exhausted or cancelled, that row leaves the queue and the next one goes.
 * Other objects, and other endpoints, are never held up.
 */

/**
 * Switching an endpoint's order applies to what is already queued too: its rows get their
 * object's id (looked up by each event's full key), or lose it.
 */
export async function setEndpointOrdering(db: Queryable, endpointId: string, order: DeliveryOrder): Promise<void> {
  if (order === 'per_object') {
    await db.execute(sql`UPDATE delivery_queue q SET order_key = e.object_id
      FROM events e
      WHERE q.endpoint_id = ${endpointId} AND e.id = q.event_id AND e.created_at = q.delivery_created_at`);
  } else {
    await db.execute(sql`UPDATE delivery_queue SET order_key = NULL WHERE endpoint_id = ${endpointId} AND order_key IS NOT NULL`);
  }
}

/** What a waiting delivery waits for: the earliest queued delivery of its endpoint and object. */
export interface WaitingFor {
  delivery_id: string;
  event_id: string;
}

const QUEUE_STATE = statement<{ ids: string[] }, { delivery_id: string; blocker_id: string | null; blocker_event_id: string | null }>(
  'queue_state_of',
  `SELECT q.delivery_id, b.delivery_id AS blocker_id, b.event_id AS blocker_event_id
   FROM delivery_queue q
   LEFT JOIN LATERAL (
     SELECT o.delivery_id, o.event_id FROM delivery_queue o
     WHERE q.order_key IS NOT NULL AND o.endpoint_id = q.endpoint_id AND o.order_key = q.order_key AND o.seq < q.seq
     ORDER BY o.seq LIMIT 1
   ) b ON true
   WHERE q.delivery_id = ANY(:ids::text[])`,
);

/**
 * For the given deliveries, in one read of the queue: which have a queue row (the others are
 * parked or finished), and those held back by per-object ordering with the delivery each waits
 * for (the earliest one of the same endpoint and object still queued). Deliveries that are not
 * queued, not ordered, or first in line are absent from `waiting`.
 */
export async function queueStateOf(
  database: Database,
  deliveryIds: string[],
): Promise<{ queued: Set<string>; waiting: Map<string, WaitingFor> }> {
  const queued = new Set<string>();
  const waiting = new Map<string, WaitingFor>();
  if (deliveryIds.length === 0) return { queued, waiting };
  const rows = await runAlone(database, QUEUE_STATE, { ids: deliveryIds });
  for (const r of rows) {
    queued.add(r.delivery_id);
    if (r.blocker_id !== null) waiting.set(r.delivery_id, { delivery_id: r.blocker_id, event_id: r.blocker_event_id! });
  }
  return { queued, waiting };
}

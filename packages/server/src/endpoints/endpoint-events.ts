import { asc, eq, sql } from 'drizzle-orm';
import type { EventType } from '@payhooks/contract';
import type { Tx } from '../db/client.ts';
import { merchants, type WebhookEndpointRow } from '../db/schema.ts';
import { publishEvent } from '../events/publish.ts';
import { toApiEndpoint, withRedactedHeaders, type WebhookEndpoint } from './service.ts';

/**
 * Publishes an operational event about an endpoint (webhook_endpoint.disabled, .failing,
 * .recovered) in the caller's transaction: the endpoint as the API shows it, its custom headers'
 * values redacted (they often carry a credential, and the event goes to other endpoints), as an
 * event of the Platform's first merchant (events belong to a merchant, endpoints to the Platform).
 * Never to the endpoint it is about: a failing endpoint would only fail it too. Returns the
 * endpoint object it carried.
 */
export async function publishEndpointEvent(tx: Tx, type: EventType, row: WebhookEndpointRow, now: Date): Promise<WebhookEndpoint> {
  const endpoint = toApiEndpoint(row, now);
  const [merchant] = await tx
    .select({ id: merchants.id })
    .from(merchants)
    .where(eq(merchants.platformId, row.platformId))
    .orderBy(asc(merchants.createdAt), asc(merchants.id))
    .limit(1);
  if (!merchant) return endpoint;
  const { event } = await publishEvent(
    tx,
    { type, merchantId: merchant.id, environment: row.environment, object: { ...withRedactedHeaders(endpoint) } },
    now,
  );
  await tx.execute(sql`WITH d AS (
      DELETE FROM webhook_deliveries WHERE event_id = ${event.id} AND endpoint_id = ${row.id} AND created_at = ${now} RETURNING id
    ) DELETE FROM delivery_queue WHERE delivery_id IN (SELECT id FROM d)`);
  return endpoint;
}

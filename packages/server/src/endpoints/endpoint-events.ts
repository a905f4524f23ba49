import { and, asc, eq, isNull, sql } from 'drizzle-orm';
import type { EventType } from '@payhooks/contract';
import type { Tx } from '../db/client.ts';
import { merchants, operatorEndpoints, webhookEndpoints, type WebhookEndpointRow } from '../db/schema.ts';
import { publishEvent } from '../events/publish.ts';
import { OPERATOR_MERCHANT_ID, OPERATOR_PLATFORM_ID, isOperatorPlatform } from '../scope.ts';
import { toApiEndpoint, withRedactedHeaders, type WebhookEndpoint } from './service.ts';

/**
 * Publishes an operational event about an endpoint (webhook_endpoint.disabled, .failing,
 * .recovered) in the caller's transaction: the endpoint as the API shows it, its custom headers'
 * values redacted (they often carry a credential, and the event goes to other endpoints), as an
 * event of the Platform's first merchant (events belong to a merchant, endpoints to the Platform).
 * Never to the endpoint it is about: a failing endpoint would only fail it too. Also to the
 * operator endpoints that hear about its Platform (below). Returns the endpoint object it carried.
 */
export async function publishEndpointEvent(tx: Tx, type: EventType, row: WebhookEndpointRow, now: Date): Promise<WebhookEndpoint> {
  const endpoint = toApiEndpoint(row, now);
  await publishToOperators(tx, type, row, withRedactedHeaders(endpoint), now);
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

/**
 * Sends an endpoint's health event to the operator endpoints that hear about its Platform (or all
 * Platforms), in its environment, subscribed to the type: one event each, in the caller's
 * transaction, carrying the endpoint object (already redacted) and its Platform. An operator
 * endpoint's own health is not sent on: it has no Platform to report to but the operator's.
 */
export async function publishToOperators(
  tx: Tx,
  type: EventType,
  row: WebhookEndpointRow,
  object: WebhookEndpoint,
  now: Date,
): Promise<number> {
  if (isOperatorPlatform(row.platformId)) return 0;
  const targets = await tx
    .select({ id: webhookEndpoints.id })
    .from(operatorEndpoints)
    .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, operatorEndpoints.endpointId))
    .where(
      and(
        eq(webhookEndpoints.platformId, OPERATOR_PLATFORM_ID),
        eq(webhookEndpoints.environment, row.environment),
        eq(webhookEndpoints.status, 'enabled'),
        isNull(webhookEndpoints.deletedAt),
        sql`(${operatorEndpoints.platformId} IS NULL OR ${operatorEndpoints.platformId} = ${row.platformId})`,
        sql`${webhookEndpoints.enabledEvents} && ARRAY['*', ${type}]::text[]`,
      ),
    )
    .orderBy(webhookEndpoints.id);
  for (const target of targets)
    await publishEvent(
      tx,
      {
        type,
        merchantId: OPERATOR_MERCHANT_ID,
        environment: row.environment,
        object: { ...object, platform_id: row.platformId },
        onlyEndpointId: target.id,
      },
      now,
    );
  return targets.length;
}

import { and, eq, isNull, sql } from 'drizzle-orm';
import { WILDCARD_EVENT_TYPE, type WebhookEvent } from '@payhooks/contract';
import type { Tx } from '../db/client.ts';
import { eventIdempotencyKeys, events, merchants, webhookEndpoints, type EventRow } from '../db/schema.ts';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import { buildEnvelope, validateEventInput, type EventInput } from './envelope.ts';

/** Workers LISTEN here; a publish NOTIFYs it at commit so they wake at once. */
export const WAKE_CHANNEL = 'payhooks_deliveries';

export interface PublishResult {
  event: WebhookEvent;
  /** How many deliveries the fan-out created (0 on an idempotent replay). */
  deliveries: number;
  /** True when `idempotencyKey` matched an event published before: nothing new was written. */
  replayed: boolean;
}

/**
 * Publishes an event inside the caller's transaction (transactional outbox), in two round
 * trips: writes the event and, in the same transaction, one delivery per enabled, undeleted endpoint of the event's
 * Platform and environment subscribed to its type or `*`. If the caller's transaction rolls
 * back, nothing was published. With `idempotencyKey`, a second publish returns the first event.
 */
export async function publishEvent(
  tx: Tx,
  input: EventInput & { idempotencyKey?: string | undefined; copies?: 1 | 2 | undefined; onlyEndpointId?: string | undefined },
  now: Date,
): Promise<PublishResult> {
  validateEventInput(input);
  // 1. The merchant's Platform and, in the same round trip, the endpoints that get this event.
  const targets = await tx
    .select({ platformId: merchants.platformId, endpointId: webhookEndpoints.id })
    .from(merchants)
    .leftJoin(
      webhookEndpoints,
      and(
        eq(webhookEndpoints.platformId, merchants.platformId),
        eq(webhookEndpoints.environment, input.environment),
        eq(webhookEndpoints.status, 'enabled'),
        isNull(webhookEndpoints.deletedAt),
        // A portal test event goes to the one endpoint it was sent from, whatever it subscribes to.
        input.onlyEndpointId
          ? eq(webhookEndpoints.id, input.onlyEndpointId)
          : sql`(${WILDCARD_EVENT_TYPE} = ANY(${webhookEndpoints.enabledEvents}) OR ${input.type} = ANY(${webhookEndpoints.enabledEvents}))`,
      ),
    )
    .where(eq(merchants.id, input.merchantId));
  if (targets.length === 0) throw new AppError('invalid_request', 'resource_missing', `No such merchant: '${input.merchantId}'.`, { param: 'merchant_id' });
  const platformId = targets[0]!.platformId;
  const endpointIds = targets.flatMap((t) => (t.endpointId ? [t.endpointId] : []));
  // Double delivery (spec 6.2 rule 5): copy 2 is a second delivery of the same event (same id,
  // same stored body) to the same endpoint, with its own state and attempt log.
  const copies = input.copies ?? 1;
  const targetIds = endpointIds.flatMap((e) => Array.from({ length: copies }, () => e));
  const copyNumbers = endpointIds.flatMap(() => Array.from({ length: copies }, (_, i) => i + 1));

  // 2. The event, its deliveries and the wake-up in one statement. With an idempotency key
  //    already used, ON CONFLICT leaves `k` and so `ev` empty: no delivery and no NOTIFY either.
  //    (The key's uniqueness lives in event_idempotency_keys: `events` is partitioned by week,
  //    and a unique index there could only be unique within a week; migration 0007.) The
  //    NOTIFY is sent at commit, so workers never wake for a rolled-back publish.
  const id = newId('event');
  const { envelope, body } = buildEnvelope(id, input, now);
  const result = (await tx.execute(sql`
    WITH k AS (
      INSERT INTO event_idempotency_keys (platform_id, environment, idempotency_key, event_id, event_created_at)
      SELECT ${platformId}, ${input.environment}, ${input.idempotencyKey ?? null}::text, ${id}, ${now}
      WHERE ${input.idempotencyKey ?? null}::text IS NOT NULL
      ON CONFLICT DO NOTHING
      RETURNING 1
    ), ev AS (
      INSERT INTO events (id, platform_id, environment, merchant_id, type, body, idempotency_key, created_at)
      SELECT ${id}, ${platformId}, ${input.environment}, ${input.merchantId}, ${input.type}, ${body}, ${input.idempotencyKey ?? null}, ${now}
      WHERE ${input.idempotencyKey ?? null}::text IS NULL OR EXISTS (SELECT 1 FROM k)
      RETURNING id
    ), d AS (
      INSERT INTO webhook_deliveries (id, event_id, endpoint_id, copy, platform_id, environment, state, attempt_count,
                                      automatic_attempts, next_attempt_at, due_at, created_at, updated_at)
      SELECT v.id, ev.id, v.endpoint_id, v.copy, ${platformId}, ${input.environment}, 'pending', 0, 0, ${now}, ${now}, ${now}, ${now}
      FROM ev CROSS JOIN unnest(${sql.param(targetIds.map(() => newId('webhookDelivery')))}::text[], ${sql.param(targetIds)}::text[],
                                ${sql.param(copyNumbers)}::smallint[]) AS v(id, endpoint_id, copy)
      RETURNING 1
    ), n AS (
      SELECT pg_notify(${WAKE_CHANNEL}, '') FROM (SELECT 1 FROM d LIMIT 1) AS any_delivery
    )
    SELECT (SELECT count(*) FROM ev)::int AS inserted, (SELECT count(*) FROM n)::int AS notified`)) as unknown as { rows: Array<{ inserted: number }> };
  if (Number(result.rows[0]?.inserted) === 0) {
    // The idempotency key was used before (or by a concurrent publish that committed first).
    const earlier = await findByIdempotencyKey(tx, platformId, input.environment, input.idempotencyKey!);
    return { event: JSON.parse(earlier!.body) as WebhookEvent, deliveries: 0, replayed: true };
  }
  return { event: envelope, deliveries: targetIds.length, replayed: false };
}

async function findByIdempotencyKey(tx: Tx, platformId: string, environment: string, key: string): Promise<Pick<EventRow, 'body'> | undefined> {
  const [row] = await tx
    .select({ body: events.body })
    .from(eventIdempotencyKeys)
    .innerJoin(events, and(eq(events.id, eventIdempotencyKeys.eventId), eq(events.createdAt, eventIdempotencyKeys.eventCreatedAt)))
    .where(and(eq(eventIdempotencyKeys.platformId, platformId), eq(eventIdempotencyKeys.environment, environment), eq(eventIdempotencyKeys.idempotencyKey, key)));
  return row;
}

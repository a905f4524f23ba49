import { and, eq, isNull } from 'drizzle-orm';
import { sql } from 'drizzle-orm';
import type { WebhookEvent } from '@payhooks/contract';
import type { Tx } from '../db/client.ts';
import { events, merchants, webhookDeliveries, webhookEndpoints, type EventRow } from '../db/schema.ts';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import { subscribes } from '../endpoints/enabled-events.ts';
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
 * Publishes an event inside the caller's transaction (transactional outbox): writes the event
 * and, in the same transaction, one delivery per enabled, undeleted endpoint of the event's
 * Platform and environment subscribed to its type or `*`. If the caller's transaction rolls
 * back, nothing was published. With `idempotencyKey`, a second publish returns the first event.
 */
export async function publishEvent(tx: Tx, input: EventInput & { idempotencyKey?: string | undefined }, now: Date): Promise<PublishResult> {
  validateEventInput(input);
  const [merchant] = await tx.select({ platformId: merchants.platformId }).from(merchants).where(eq(merchants.id, input.merchantId));
  if (!merchant) throw new AppError('invalid_request', 'resource_missing', `No such merchant: '${input.merchantId}'.`, { param: 'merchant_id' });
  const platformId = merchant.platformId;

  if (input.idempotencyKey !== undefined) {
    const earlier = await findByIdempotencyKey(tx, platformId, input.environment, input.idempotencyKey);
    if (earlier) return { event: JSON.parse(earlier.body) as WebhookEvent, deliveries: 0, replayed: true };
  }

  const id = newId('event');
  const { envelope, body } = buildEnvelope(id, input, now);
  const inserted = await tx
    .insert(events)
    .values({ id, platformId, environment: input.environment, merchantId: input.merchantId, type: input.type, body, idempotencyKey: input.idempotencyKey ?? null, createdAt: now })
    .onConflictDoNothing()
    .returning({ id: events.id });
  if (inserted.length === 0) {
    // A concurrent publish with the same idempotency key committed first.
    const earlier = await findByIdempotencyKey(tx, platformId, input.environment, input.idempotencyKey!);
    return { event: JSON.parse(earlier!.body) as WebhookEvent, deliveries: 0, replayed: true };
  }

  const endpoints = await tx
    .select({ id: webhookEndpoints.id, enabledEvents: webhookEndpoints.enabledEvents })
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.platformId, platformId), eq(webhookEndpoints.environment, input.environment), eq(webhookEndpoints.status, 'enabled'), isNull(webhookEndpoints.deletedAt)));
  const targets = endpoints.filter((e) => subscribes(e.enabledEvents, input.type));
  if (targets.length > 0) {
    await tx.insert(webhookDeliveries).values(
      targets.map((e) => ({
        id: newId('webhookDelivery'),
        eventId: id,
        endpointId: e.id,
        platformId,
        environment: input.environment,
        state: 'pending' as const,
        attemptCount: 0,
        automaticAttempts: 0,
        nextAttemptAt: now,
        dueAt: now,
        createdAt: now,
        updatedAt: now,
      })),
    );
    await tx.execute(sql`SELECT pg_notify(${WAKE_CHANNEL}, '')`);
  }
  return { event: envelope, deliveries: targets.length, replayed: false };
}

async function findByIdempotencyKey(tx: Tx, platformId: string, environment: string, key: string): Promise<EventRow | undefined> {
  const [row] = await tx
    .select()
    .from(events)
    .where(and(eq(events.platformId, platformId), eq(events.environment, environment as 'live'), eq(events.idempotencyKey, key)));
  return row;
}

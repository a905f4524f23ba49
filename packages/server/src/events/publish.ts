import { and, eq, sql, type SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
const dialect = new PgDialect();
import { WILDCARD_EVENT_TYPE, type WebhookEvent } from '@payhooks/contract';
import type { Tx } from '../db/client.ts';
import { eventIdempotencyKeys, events, type EventRow } from '../db/schema.ts';
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
 * Delivery ids generated per publish: a merchant's last fan-out size (bounded map), so the one
 * statement below almost always gets enough. A bigger fan-out costs one more round trip.
 */
const fanoutHint = new Map<string, number>();
const FANOUT_HINT_MAX = 10_000;
const DEFAULT_FANOUT = 4;

/**
 * Publishes an event inside the caller's transaction (transactional outbox), in one round trip:
 * one statement finds the merchant's Platform and the enabled, undeleted endpoints of the event's
 * Platform and environment subscribed to its type or `*`, and writes the event, one delivery per
 * endpoint (two with `copies: 2`), their queue rows and the wake-up. If the caller's transaction
 * rolls back, nothing was published. With `idempotencyKey`, a second publish returns the first
 * event and writes nothing.
 */
export async function publishEvent(
  tx: Tx,
  input: EventInput & { idempotencyKey?: string | undefined; copies?: 1 | 2 | undefined; onlyEndpointId?: string | undefined },
  now: Date,
): Promise<PublishResult> {
  validateEventInput(input);
  const id = newId('event');
  const { envelope, body } = buildEnvelope(id, input, now);
  // Double delivery (spec 6.2 rule 5): copy 2 is a second delivery of the same event (same id,
  // same stored body) to the same endpoint, with its own state and attempt log.
  const copies = input.copies ?? 1;
  let pool = fanoutHint.get(input.merchantId) ?? DEFAULT_FANOUT * copies;
  for (;;) {
    const r = await publishStatement(
      tx,
      { ...input, copies },
      id,
      body,
      now,
      Array.from({ length: pool }, () => newId('webhookDelivery')),
    );
    if (r.platform_id === null)
      throw new AppError('invalid_request', 'resource_missing', `No such merchant: '${input.merchantId}'.`, { param: 'merchant_id' });
    const needed = Number(r.needed);
    if (fanoutHint.size >= FANOUT_HINT_MAX && !fanoutHint.has(input.merchantId)) fanoutHint.clear();
    fanoutHint.set(input.merchantId, Math.max(needed, 1));
    if (needed > pool) {
      pool = needed; // more endpoints than ids: nothing was written; again with enough
      continue;
    }
    if (Number(r.inserted) === 1) return { event: envelope, deliveries: Number(r.deliveries), replayed: false };
    // The idempotency key was used before (or by a concurrent publish that committed meanwhile,
    // which ON CONFLICT caught): return the first event. A second round trip, on replays only:
    // reading the body in the statement made its generic plan too dear to be chosen.
    const earlier = await findByIdempotencyKey(tx, r.platform_id, input.environment, input.idempotencyKey!);
    return { event: JSON.parse(earlier!.body) as WebhookEvent, deliveries: 0, replayed: true };
  }
}

interface PublishRow {
  platform_id: string | null;
  needed: number;
  inserted: number;
  deliveries: number;
}

/**
 * The statement. `fan` numbers the (endpoint, copy) pairs 1..n so each takes the id of that
 * rank in `$ids`; with fewer ids than pairs (`fits` false) nothing is written and `needed`
 * says how many. An idempotency key seen before (`prior`) writes nothing and returns the first
 * event's body; a concurrent first use is caught by ON CONFLICT (then `ev` is empty too). The
 * NOTIFY is sent at commit, so workers never wake for a rolled-back publish.
 */
async function publishStatement(
  tx: Tx,
  input: EventInput & { idempotencyKey?: string | undefined; copies: 1 | 2; onlyEndpointId?: string | undefined },
  id: string,
  body: string,
  now: Date,
  ids: string[],
): Promise<PublishRow> {
  const prepared = tx._.session.prepareQuery(dialect.sqlToQuery(publishSql(input, id, body, now, ids)), undefined, 'publish_event', false);
  const result = (await prepared.execute()) as unknown as { rows: PublishRow[] };
  return result.rows[0]!;
}

/** The publishing statement (exported for EXPLAIN in benchmarks). */
export function publishSql(
  input: EventInput & { idempotencyKey?: string | undefined; copies: 1 | 2; onlyEndpointId?: string | undefined },
  id: string,
  body: string,
  now: Date,
  ids: string[],
): SQL {
  const key = input.idempotencyKey ?? null;
  const only = input.onlyEndpointId ?? null;
  return sql`
    WITH m AS (
      SELECT platform_id FROM merchants WHERE id = ${input.merchantId}
    ), fan AS (
      SELECT w.id AS endpoint_id, c.copy::smallint AS copy,
             ((row_number() OVER (ORDER BY w.id, c.copy)))::int AS slot
      FROM m JOIN webhook_endpoints w
        ON w.platform_id = m.platform_id AND w.environment = ${input.environment} AND w.status = 'enabled' AND w.deleted_at IS NULL
       AND CASE WHEN ${only}::text IS NOT NULL
                -- A portal test event goes to the one endpoint it was sent from, whatever it subscribes to.
                THEN w.id = ${only}::text
                ELSE (${WILDCARD_EVENT_TYPE}::text = ANY(w.enabled_events) OR ${input.type}::text = ANY(w.enabled_events)) END
      -- Not generate_series(1, $n): the planner guesses 1,000 rows for it, which makes the
      -- generic plan look expensive enough that every execution is planned again.
      JOIN (VALUES (1), (2)) AS c(copy) ON c.copy <= ${input.copies}::int
    ), fits AS (
      SELECT (SELECT count(*) FROM fan) <= ${ids.length}::int AS ok
    ), prior AS (
      SELECT 1 FROM event_idempotency_keys k
      WHERE k.platform_id = (SELECT platform_id FROM m) AND k.environment = ${input.environment} AND k.idempotency_key = ${key}::text
    ), k AS (
      INSERT INTO event_idempotency_keys (platform_id, environment, idempotency_key, event_id, event_created_at)
      SELECT m.platform_id, ${input.environment}, ${key}::text, ${id}, ${now}
      FROM m, fits WHERE ${key}::text IS NOT NULL AND fits.ok AND NOT EXISTS (SELECT 1 FROM prior)
      ON CONFLICT DO NOTHING
      RETURNING 1
    ), ev AS (
      INSERT INTO events (id, platform_id, environment, merchant_id, type, body, idempotency_key, created_at)
      SELECT ${id}, m.platform_id, ${input.environment}, ${input.merchantId}, ${input.type}, ${body}, ${key}::text, ${now}
      FROM m, fits WHERE fits.ok AND (${key}::text IS NULL OR EXISTS (SELECT 1 FROM k))
      RETURNING id, platform_id
    ), d AS (
      INSERT INTO webhook_deliveries (id, event_id, endpoint_id, copy, platform_id, environment, state, attempt_count,
                                      automatic_attempts, next_attempt_at, created_at, updated_at)
      SELECT (${sql.param(ids)}::text[])[f.slot], ev.id, f.endpoint_id, f.copy, ev.platform_id, ${input.environment}, 'pending', 0, 0, ${now}, ${now}, ${now}
      FROM ev CROSS JOIN fan f
      RETURNING id, endpoint_id, platform_id
    ), q AS (
      INSERT INTO delivery_queue (delivery_id, delivery_created_at, event_id, endpoint_id, platform_id, due_at)
      SELECT d.id, ${now}, ${id}, d.endpoint_id, d.platform_id, ${now} FROM d
      RETURNING 1
    ), n AS (
      SELECT pg_notify(${WAKE_CHANNEL}, '') FROM (SELECT 1 FROM q LIMIT 1) AS any_delivery
    )
    SELECT (SELECT platform_id FROM m) AS platform_id, (SELECT count(*) FROM fan)::int AS needed,
           (SELECT count(*) FROM ev)::int AS inserted, (SELECT count(*) FROM q)::int AS deliveries,
           (SELECT count(*) FROM n)::int AS notified`;
}

async function findByIdempotencyKey(
  tx: Tx,
  platformId: string,
  environment: string,
  key: string,
): Promise<Pick<EventRow, 'body'> | undefined> {
  const [row] = await tx
    .select({ body: events.body })
    .from(eventIdempotencyKeys)
    .innerJoin(events, and(eq(events.id, eventIdempotencyKeys.eventId), eq(events.createdAt, eventIdempotencyKeys.eventCreatedAt)))
    .where(
      and(
        eq(eventIdempotencyKeys.platformId, platformId),
        eq(eventIdempotencyKeys.environment, environment),
        eq(eventIdempotencyKeys.idempotencyKey, key),
      ),
    );
  return row;
}

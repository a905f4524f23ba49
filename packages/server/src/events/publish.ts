import { and, eq } from 'drizzle-orm';
import { WILDCARD_EVENT_TYPE, type WebhookEvent } from '@payhooks/contract';
import type { Tx } from '../db/client.ts';
import { notifyAfterCommit, wakesAfterCommit } from '../db/after-commit.ts';
import { runNamedStatement } from '../db/named-statement.ts';
import { eventIdempotencyKeys, events, type EventRow } from '../db/schema.ts';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import { buildEnvelope, validateEventInput, type EventInput } from './envelope.ts';
import { traced, tracing } from '../telemetry/tracing.ts';
import { WAKE_CHANNEL } from '../delivery/wake-channel.ts';

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
 * endpoint (two with `copies: 2`) and their queue rows; workers are woken once it commits. If the
 * caller's transaction rolls back, nothing was published. With `idempotencyKey`, a second publish returns the first
 * event and writes nothing. `onlyEndpointId` (a portal test event) delivers to that one endpoint,
 * whatever it subscribes to; `null` records the event and delivers it to none.
 */
export async function publishEvent(
  tx: Tx,
  input: EventInput & { idempotencyKey?: string | undefined; copies?: 1 | 2 | undefined; onlyEndpointId?: string | null | undefined },
  now: Date,
): Promise<PublishResult> {
  validateEventInput(input);
  const id = newId('event');
  // Without tracing, not even the span's name and attributes are built (the hot path).
  if (!tracing.enabled) return publishOne(tx, input, id, now, undefined);
  return traced(
    `publish ${input.type}`,
    {
      kind: 'producer',
      attributes: { 'payhooks.event.id': id, 'payhooks.event.type': input.type, 'payhooks.merchant.id': input.merchantId },
    },
    (traceparent) => publishOne(tx, input, id, now, traceparent),
    (r) => ({ 'payhooks.event.deliveries': r.deliveries, 'payhooks.event.replayed': r.replayed }),
  );
}

async function publishOne(
  tx: Tx,
  input: EventInput & { idempotencyKey?: string | undefined; copies?: 1 | 2 | undefined; onlyEndpointId?: string | null | undefined },
  id: string,
  now: Date,
  traceparent: string | undefined,
): Promise<PublishResult> {
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
      traceparent,
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
    if (Number(r.inserted) === 1) {
      if (Number(r.deliveries) > 0) notifyAfterCommit(tx, WAKE_CHANNEL);
      return { event: envelope, deliveries: Number(r.deliveries), replayed: false };
    }
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
 * rank in `$12` (the delivery ids); with fewer ids than pairs (`fits` false) nothing is written
 * and `needed` says how many. An idempotency key seen before (`prior`) writes nothing; a
 * concurrent first use is caught by ON CONFLICT (then `ev` is empty too). Workers are woken only
 * if the transaction commits: by a NOTIFY sent after the commit (db/after-commit.ts) or, where the
 * transaction can't defer one (PGlite, a savepoint), by the statement's own NOTIFY.
 *
 * Fixed text with numbered parameters, run as the named statement `publish_event`: PostgreSQL
 * prepares it once per connection and, after five executions planned for their parameters,
 * keeps its generic plan (no planning per publish; test/integration/publish-plan.postgres.test.ts
 * checks it). That choice is made from cost estimates, so the text avoids what makes a generic
 * plan look dear: a `generate_series` bounded by a parameter (the planner assumes 1,000 rows),
 * a join over every weekly partition of `events`.
 *
 *   $1 merchant id, $2 environment, $3 the one endpoint of a portal test event (or null),
 *   $4 the wildcard event type, $5 the event type, $6 copies (1 or 2), $7 how many ids $12
 *   holds, $8 idempotency key (or null), $9 event id, $10 now, $11 the event body, $12 ids,
 *   $13 NOTIFY in this transaction (false when the wake-up is sent after commit instead),
 *   $14 the resource's id (`data.object.id`), for finding an object's events, $15 the publish
 *   span's traceparent (null unless tracing).
 */
const PUBLISH_SQL = `
WITH m AS (
  SELECT platform_id FROM merchants WHERE id = $1::text
), fan AS (
  SELECT w.id AS endpoint_id, c.copy::smallint AS copy,
         ((row_number() OVER (ORDER BY w.id, c.copy)))::int AS slot,
         -- Per-object ordering (claim.ts): the object's id for ordered endpoints only.
         CASE WHEN w.delivery_order = 'per_object' THEN $14::text END AS order_key
  FROM m JOIN webhook_endpoints w
    ON w.platform_id = m.platform_id AND w.environment = $2::text AND w.status = 'enabled' AND w.deleted_at IS NULL
   AND CASE WHEN $3::text IS NOT NULL
            -- A portal test event goes to the one endpoint it was sent from, whatever it subscribes to.
            THEN w.id = $3::text
            ELSE ($4::text = ANY(w.enabled_events) OR $5::text = ANY(w.enabled_events)) END
  JOIN (VALUES (1), (2)) AS c(copy) ON c.copy <= $6::int
), fits AS (
  SELECT (SELECT count(*) FROM fan) <= $7::int AS ok
), prior AS (
  SELECT 1 FROM event_idempotency_keys k
  WHERE k.platform_id = (SELECT platform_id FROM m) AND k.environment = $2::text AND k.idempotency_key = $8::text
), k AS (
  INSERT INTO event_idempotency_keys (platform_id, environment, idempotency_key, event_id, event_created_at)
  SELECT m.platform_id, $2::text, $8::text, $9::text, $10::timestamptz
  FROM m, fits WHERE $8::text IS NOT NULL AND fits.ok AND NOT EXISTS (SELECT 1 FROM prior)
  ON CONFLICT DO NOTHING
  RETURNING 1
), ev AS (
  INSERT INTO events (id, platform_id, environment, merchant_id, type, body, idempotency_key, created_at, object_id, trace_parent)
  SELECT $9::text, m.platform_id, $2::text, $1::text, $5::text, $11::text, $8::text, $10::timestamptz, $14::text, $15::text
  FROM m, fits WHERE fits.ok AND ($8::text IS NULL OR EXISTS (SELECT 1 FROM k))
  RETURNING id, platform_id
), d AS (
  INSERT INTO webhook_deliveries (id, event_id, endpoint_id, copy, platform_id, environment, state, attempt_count,
                                  automatic_attempts, next_attempt_at, created_at, updated_at, event_type)
  SELECT ($12::text[])[f.slot], ev.id, f.endpoint_id, f.copy, ev.platform_id, $2::text, 'pending', 0, 0,
         $10::timestamptz, $10::timestamptz, $10::timestamptz, $5::text
  FROM ev CROSS JOIN fan f
  RETURNING id, endpoint_id, platform_id, copy
), q AS (
  INSERT INTO delivery_queue (delivery_id, delivery_created_at, event_id, endpoint_id, platform_id, due_at, order_key)
  SELECT d.id, $10::timestamptz, $9::text, d.endpoint_id, d.platform_id, $10::timestamptz, f.order_key
  FROM d JOIN fan f ON f.endpoint_id = d.endpoint_id AND f.copy = d.copy
  RETURNING 1
), n AS (
  SELECT pg_notify('${WAKE_CHANNEL}', '') FROM (SELECT 1 FROM q LIMIT 1) AS any_delivery WHERE $13::boolean
)
SELECT (SELECT platform_id FROM m) AS platform_id, (SELECT count(*) FROM fan)::int AS needed,
       (SELECT count(*) FROM ev)::int AS inserted, (SELECT count(*) FROM q)::int AS deliveries,
       (SELECT count(*) FROM n)::int AS notified`;

/** `PUBLISH_SQL`'s parameters, in order. */
function publishParams(
  input: EventInput & { idempotencyKey?: string | undefined; copies: 1 | 2; onlyEndpointId?: string | null | undefined },
  id: string,
  body: string,
  now: Date,
  ids: string[],
  notifyHere: boolean,
  traceparent: string | undefined,
): unknown[] {
  return [
    input.merchantId,
    input.environment,
    // null delivers to none: '' is no endpoint's id.
    input.onlyEndpointId === null ? '' : (input.onlyEndpointId ?? null),
    WILDCARD_EVENT_TYPE,
    input.type,
    input.copies,
    ids.length,
    input.idempotencyKey ?? null,
    id,
    now,
    body,
    ids,
    notifyHere,
    typeof input.object.id === 'string' ? input.object.id : null,
    traceparent ?? null,
  ];
}

/**
 * `PUBLISH_SQL` for the common publish: no idempotency key, not a portal test event, one copy,
 * workers woken after the commit. The same writes with about half the plan: the parts those
 * options need (the key's lookup and insert, the one-endpoint CASE, the copies join, the
 * in-statement NOTIFY) cost their executor set-up on every execution even when they do nothing,
 * and that set-up was a fifth of PostgreSQL's CPU for a one-event publish
 * (bench/investigations/cpu-per-delivery.md, "A plain statement for the common publish").
 * The queue rows take their delivery ids from `fan` as the deliveries do, so they need not wait
 * for the deliveries' RETURNING (the queue has no foreign key to them: migration 0007).
 *
 *   $1 merchant id, $2 environment, $3 the wildcard event type, $4 the event type, $5 how many
 *   ids $9 holds, $6 event id, $7 now, $8 the event body, $9 ids, $10 the resource's id,
 *   $11 the publish span's traceparent (null unless tracing).
 */
const PUBLISH_PLAIN_SQL = `
WITH m AS (
  SELECT platform_id FROM merchants WHERE id = $1::text
), fan AS (
  SELECT w.id AS endpoint_id, ((row_number() OVER (ORDER BY w.id)))::int AS slot,
         CASE WHEN w.delivery_order = 'per_object' THEN $10::text END AS order_key
  FROM m JOIN webhook_endpoints w
    ON w.platform_id = m.platform_id AND w.environment = $2::text AND w.status = 'enabled' AND w.deleted_at IS NULL
   AND ($3::text = ANY(w.enabled_events) OR $4::text = ANY(w.enabled_events))
), ev AS (
  INSERT INTO events (id, platform_id, environment, merchant_id, type, body, created_at, object_id, trace_parent)
  SELECT $6::text, m.platform_id, $2::text, $1::text, $4::text, $8::text, $7::timestamptz, $10::text, $11::text
  FROM m WHERE (SELECT count(*) FROM fan) <= $5::int
  RETURNING platform_id
), d AS (
  INSERT INTO webhook_deliveries (id, event_id, endpoint_id, copy, platform_id, environment, state, attempt_count,
                                  automatic_attempts, next_attempt_at, created_at, updated_at, event_type)
  SELECT ($9::text[])[f.slot], $6::text, f.endpoint_id, 1, ev.platform_id, $2::text, 'pending', 0, 0,
         $7::timestamptz, $7::timestamptz, $7::timestamptz, $4::text
  FROM ev CROSS JOIN fan f
), q AS (
  INSERT INTO delivery_queue (delivery_id, delivery_created_at, event_id, endpoint_id, platform_id, due_at, order_key)
  SELECT ($9::text[])[f.slot], $7::timestamptz, $6::text, f.endpoint_id, ev.platform_id, $7::timestamptz, f.order_key
  FROM ev CROSS JOIN fan f
  RETURNING 1
)
SELECT (SELECT platform_id FROM m) AS platform_id, (SELECT count(*) FROM fan)::int AS needed,
       (SELECT count(*) FROM ev)::int AS inserted, (SELECT count(*) FROM q)::int AS deliveries`;

async function publishStatement(
  tx: Tx,
  input: EventInput & { idempotencyKey?: string | undefined; copies: 1 | 2; onlyEndpointId?: string | null | undefined },
  id: string,
  body: string,
  now: Date,
  ids: string[],
  traceparent: string | undefined,
): Promise<PublishRow> {
  const notifyHere = !wakesAfterCommit(tx);
  const plain = input.idempotencyKey === undefined && input.onlyEndpointId === undefined && input.copies === 1 && !notifyHere;
  // Named, on the transaction's own connection (db/named-statement.ts): prepared once per connection.
  const [row] = plain
    ? await runNamedStatement<PublishRow>(tx, 'publish_event_plain', PUBLISH_PLAIN_SQL, [
        input.merchantId,
        input.environment,
        WILDCARD_EVENT_TYPE,
        input.type,
        ids.length,
        id,
        now,
        body,
        ids,
        typeof input.object.id === 'string' ? input.object.id : null,
        traceparent ?? null,
      ])
    : await runNamedStatement<PublishRow>(
        tx,
        'publish_event',
        PUBLISH_SQL,
        publishParams(input, id, body, now, ids, notifyHere, traceparent),
      );
  return row!;
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

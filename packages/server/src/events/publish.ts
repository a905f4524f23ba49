import { WILDCARD_EVENT_TYPE, type WebhookEvent } from '@payhooks/contract';
import type { Database, Tx } from '../db/client.ts';
import { notifyAfterCommit, wakesAfterCommit } from '../db/after-commit.ts';
import { runNamedStatement } from '../db/named-statement.ts';
import { scratchOf, type DatabaseScratch } from '../db/scratch.ts';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import { buildEnvelope, validateEventInput, type EventInput } from './envelope.ts';
import { traced, tracing } from '../telemetry/tracing.ts';
import { WAKE_CHANNEL } from '../delivery/wake-channel.ts';
import { weekStart } from '../db/retention.ts';

export interface PublishResult {
  event: WebhookEvent;
  /** How many deliveries the fan-out created (0 on an idempotent replay). */
  deliveries: number;
  /** True when `idempotencyKey` matched an event published before: nothing new was written. */
  replayed: boolean;
}

/** What `publishEvent` takes: an event, and the options of the payment flows, the sandbox and the portal. */
export type PublishInput = EventInput & {
  /**
   * A second publish with the same key (per Platform and environment) less than 7 days later returns the first event and
   * writes nothing; two weeks on or later it may publish a new one (docs/decisions/event-key-window.md).
   */
  idempotencyKey?: string | undefined;
  /** 2: double delivery (spec 6.2 rule 5), two deliveries of the same event to each endpoint. */
  copies?: 1 | 2 | undefined;
  /** A portal test event: delivered to this one endpoint, whatever it subscribes to; `null`: recorded, delivered to none. */
  onlyEndpointId?: string | null | undefined;
};

/** One event of a batch: what `publishEvent` takes, minus the portal's and the sandbox's options. */
export type BatchEventInput = EventInput & { idempotencyKey?: string | undefined };

/** Each event's outcome, in the order given: published (or replayed), or refused on its own. */
export type BatchOutcome = { ok: true; result: PublishResult } | { ok: false; error: AppError };

/** The most events one statement publishes (the batch API's limit too). */
export const PUBLISH_BATCH_MAX = 100;

/**
 * Publishes an event inside the caller's transaction (transactional outbox), in one round trip:
 * one statement finds the merchant's Platform and the enabled, undeleted endpoints of the event's
 * Platform and environment subscribed to its type or `*`, and writes the event, one delivery per
 * endpoint (two with `copies: 2`) and their queue rows; workers are woken once it commits. If the
 * caller's transaction rolls back, nothing was published. With `idempotencyKey`, a second publish
 * returns the first event and writes nothing. `onlyEndpointId` (a portal test event) delivers to
 * that one endpoint, whatever it subscribes to; `null` records the event and delivers it to none.
 *
 * One event is a batch of one: the same statement and the same code as `publishEvents`, which
 * answers an unknown merchant with an outcome; here it is thrown.
 */
export async function publishEvent(tx: Tx, input: PublishInput, now: Date): Promise<PublishResult> {
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

async function publishOne(tx: Tx, input: PublishInput, id: string, now: Date, traceparent: string | undefined): Promise<PublishResult> {
  const outcomes: Outcomes = [undefined];
  const event: Valid = {
    index: 0,
    input,
    id,
    copies: input.copies ?? 1,
    onlyEndpointId: input.onlyEndpointId,
    ...buildEnvelope(id, input, now),
  };
  await publishValid(inTransaction(tx), [event], now, traceparent, outcomes);
  const outcome = outcomes[0]!;
  if (!outcome.ok) throw outcome.error;
  return outcome.result;
}

/**
 * Publishes several events inside the caller's transaction in one statement: what N calls of
 * `publishEvent` would write, in one round trip instead of N. Every event stands alone: one whose
 * merchant is unknown, or that `publishEvent` would refuse, gets its own error and the others
 * are published; an idempotency key seen before (or earlier in the same batch) replays the first
 * event. The caller checks anything type-specific first. Workers are woken once the transaction
 * commits.
 */
export function publishEvents(tx: Tx, inputs: BatchEventInput[], now: Date): Promise<BatchOutcome[]> {
  return publishBatch(inTransaction(tx), inputs, now);
}

/**
 * The same as one statement of its own, outside any transaction: the statement is atomic, so
 * the events it publishes commit together, in one round trip where BEGIN, the statement and
 * COMMIT would take three. For callers that publish nothing else with the events (the internal
 * API); workers are woken after the commit.
 */
export function publishEventsAlone(database: Database, inputs: BatchEventInput[], now: Date): Promise<BatchOutcome[]> {
  return publishBatch(alone(database), inputs, now);
}

/** Where the statements run and how workers are woken. */
interface Target {
  run<T>(sql: string, params: unknown[], name: string): Promise<T[]>;
  /** NOTIFY inside the statement: the transaction can't send its wake-up after its commit (PGlite, a savepoint). */
  notifyHere: boolean;
  /** Some delivery was written: wake the workers once it is committed. */
  wake(): void;
  /** The handle's fan-out hints (a savepoint's publish starts without). */
  hints: FanoutHints;
}

/** The caller's transaction: named statements on its own connection (db/named-statement.ts). */
function inTransaction(tx: Tx): Target {
  return {
    run: (sql, params, name) => runNamedStatement(tx, name, sql, params),
    notifyHere: !wakesAfterCommit(tx),
    wake: () => notifyAfterCommit(tx, WAKE_CHANNEL),
    hints: hintsOf(scratchOf(tx)),
  };
}

/** A statement of its own on the pool: it commits when it returns. */
function alone(database: Database): Target {
  return {
    run: (sql, params, name) => database.query(sql, params, name),
    notifyHere: false,
    wake: () => database.wake(WAKE_CHANNEL),
    hints: hintsOf(database.scratch),
  };
}

type Outcomes = (BatchOutcome | undefined)[];

async function publishBatch(to: Target, inputs: BatchEventInput[], now: Date): Promise<BatchOutcome[]> {
  const outcomes: Outcomes = new Array(inputs.length);
  if (!tracing.enabled) await publishAll(to, inputs, now, undefined, outcomes);
  else
    await traced(
      'publish batch',
      { kind: 'producer', attributes: { 'payhooks.batch.size': inputs.length } },
      (traceparent) => publishAll(to, inputs, now, traceparent, outcomes),
      (deliveries) => ({ 'payhooks.event.deliveries': deliveries }),
    );
  return outcomes as BatchOutcome[];
}

/** Validates each event on its own (a refusal is its outcome), then publishes the rest. */
async function publishAll(
  to: Target,
  inputs: BatchEventInput[],
  now: Date,
  traceparent: string | undefined,
  outcomes: Outcomes,
): Promise<number> {
  if (inputs.length > PUBLISH_BATCH_MAX) throw new Error(`publishEvents: at most ${PUBLISH_BATCH_MAX} events per call`);
  const valid: Valid[] = [];
  inputs.forEach((input, index) => {
    const id = newId('event');
    let built: ReturnType<typeof buildEnvelope>;
    try {
      validateEventInput(input);
      built = buildEnvelope(id, input, now);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      outcomes[index] = { ok: false, error: err };
      return;
    }
    valid.push({ index, input, id, copies: 1, onlyEndpointId: undefined, ...built });
  });
  if (valid.length === 0) return 0;
  return publishValid(to, valid, now, traceparent, outcomes);
}

/** An event that passed the generic checks, with its id and its one serialisation. */
interface Valid {
  /** Its place in the caller's list (and in `outcomes`). */
  index: number;
  input: EventInput & { idempotencyKey?: string | undefined };
  id: string;
  copies: 1 | 2;
  onlyEndpointId: string | null | undefined;
  envelope: WebhookEvent;
  body: string;
}

/**
 * Delivery ids generated per event: its merchant's last fan-out (deliveries per event, copies
 * included), in a bounded map kept per database handle (db/scratch.ts), so the one statement
 * almost always gets enough. When it needs more it writes nothing and says how many: one more
 * round trip, with enough.
 */
type FanoutHints = Map<string, number>;
const FANOUT_HINTS = Symbol('publish fan-out hints');
const FANOUT_HINT_MAX = 10_000;
const DEFAULT_FANOUT = 4;

const hintsOf = (scratch: DatabaseScratch | undefined): FanoutHints =>
  scratch ? scratch.get(FANOUT_HINTS, () => new Map<string, number>()) : new Map<string, number>();

function rememberFanout(hints: FanoutHints, merchantId: string, fanout: number): void {
  if (hints.size >= FANOUT_HINT_MAX && !hints.has(merchantId)) hints.clear();
  hints.set(merchantId, Math.max(1, fanout));
}

/**
 * The one path every publish takes: the statement (again, with more delivery ids, when the
 * fan-out was wider than the ids given), each event's outcome, the replays' first events, the
 * wake-up. Returns the deliveries written.
 */
async function publishValid(to: Target, valid: Valid[], now: Date, traceparent: string | undefined, outcomes: Outcomes): Promise<number> {
  const plain =
    !to.notifyHere && valid.every((v) => v.input.idempotencyKey === undefined && v.onlyEndpointId === undefined && v.copies === 1);
  let pool = 0;
  for (const v of valid) pool += to.hints.get(v.input.merchantId) ?? DEFAULT_FANOUT * v.copies;
  const source: Source = valid.length === 1 ? 'one' : 'many';
  let rows: PublishRow[];
  for (;;) {
    const ids = Array.from({ length: pool }, () => newId('webhookDelivery'));
    rows = plain
      ? await to.run<PublishRow>(PUBLISH_PLAIN_SQL[source], plainParams(valid, now, ids, traceparent), PLAIN_NAME[source])
      : await to.run<PublishRow>(PUBLISH_SQL[source], publishParams(valid, now, ids, to.notifyHere, traceparent), NAME[source]);
    const needed = Number(rows[0]?.needed ?? 0);
    if (needed <= pool) break;
    pool = needed; // more deliveries than ids: nothing was written; again with enough
  }
  const replays: { v: Valid; platformId: string }[] = [];
  let deliveries = 0;
  for (const [i, row] of rows.entries()) {
    // Usually in the order given; found by id where the plan returned them otherwise.
    const v = valid[i]?.id === row.event_id ? valid[i]! : valid.find((x) => x.id === row.event_id)!;
    if (row.platform_id === null) {
      outcomes[v.index] = {
        ok: false,
        error: new AppError('invalid_request', 'resource_missing', `No such merchant: '${v.input.merchantId}'.`, { param: 'merchant_id' }),
      };
      continue;
    }
    const fanout = Number(row.fanout);
    rememberFanout(to.hints, v.input.merchantId, fanout);
    if (row.inserted ?? true) {
      // Every (endpoint, copy) of an event written has its delivery and its queue row.
      deliveries += fanout;
      outcomes[v.index] = { ok: true, result: { event: v.envelope, deliveries: fanout, replayed: false } };
    } else {
      // Its idempotency key was used before, earlier in this batch, or by a concurrent publish
      // that committed meanwhile (which ON CONFLICT caught).
      replays.push({ v, platformId: row.platform_id });
    }
  }
  if (deliveries > 0) to.wake();
  if (replays.length > 0) await readReplays(to, replays, now, outcomes);
  return deliveries;
}

/**
 * The first event of each replayed key, in one more round trip (on replays only: reading the
 * body in the statement joined every weekly partition of `events`, which made its generic plan
 * look too dear to be chosen).
 */
async function readReplays(to: Target, replays: { v: Valid; platformId: string }[], now: Date, outcomes: Outcomes): Promise<void> {
  const found = await to.run<{ n: number; body: string }>(
    REPLAYED_SQL,
    [
      replays.map((r) => r.platformId),
      replays.map((r) => r.v.input.environment),
      replays.map((r) => r.v.input.idempotencyKey ?? ''),
      weekStart(now),
    ],
    'publish_events_replayed',
  );
  for (const { n, body } of found) {
    outcomes[replays[Number(n) - 1]!.v.index] = {
      ok: true,
      result: { event: JSON.parse(body) as WebhookEvent, deliveries: 0, replayed: true },
    };
  }
  for (const { v } of replays) {
    // Only if the first event left the retention window while its key was read: rare, and never silent.
    outcomes[v.index] ??= {
      ok: false,
      error: new AppError('conflict', 'idempotency_key_in_use', 'This idempotency_key belongs to an event being removed; use a new key.', {
        param: 'idempotency_key',
      }),
    };
  }
}

/** A row of either statement: one per event, in the order given. */
interface PublishRow {
  event_id: string;
  /** Null: no such merchant (nothing of this event was written). */
  platform_id: string | null;
  /** Deliveries of the whole statement: more than the ids given, and nothing was written. */
  needed: number;
  /** This event's deliveries, whether or not it was written (the next publish's id hint). */
  fanout: number;
  /**
   * False: not written, its idempotency key was used before (or earlier in the batch). Absent
   * from the plain statement's rows, which write every event whose merchant exists.
   */
  inserted?: boolean;
}

/*
 * The statements. Each takes its events as arrays, one element per event, with each event's rank
 * (`n`), and returns a row per event. `fan` numbers every (event, endpoint, copy) in the order of
 * the events, so each takes the delivery id of that rank in the ids given, and the queue rows are
 * written in that order (a CTE is read back in the order it was written): events of one batch
 * about one object are queued (the queue's `seq`) in the order given, which per-object ordering
 * follows (delivery/ordering.ts), whatever join the planner chose. With fewer ids than deliveries nothing
 * is written and `needed` says how many. The queue rows take their ids from `fan` as the
 * deliveries do (the queue has no foreign key to them: migration 0007).
 *
 * Fixed texts with numbered parameters, run as named statements: PostgreSQL prepares each once
 * per connection and, after five executions planned for their parameters, keeps its generic
 * plan (no planning per publish; test/integration/publish-plan.postgres.test.ts checks it). That
 * choice is made from cost estimates, so the texts avoid what makes a generic plan look dear: a
 * `generate_series` bounded by a parameter (the planner assumes 1,000 rows), a join over every
 * weekly partition of `events` (docs/decisions/publish-statement.md), a subquery kept from being
 * flattened (OFFSET 0) to force a nested loop. And every plan node costs its set-up on each
 * execution, needed or not (bench/investigations/cpu-per-delivery.md, "A plain statement for the
 * common publish"), so the arrays are unnested in the select list (no tuplestore per array) and
 * neither text carries more than it needs.
 */

/**
 * Every option: idempotency keys, a portal test event's one endpoint, double delivery, and the
 * NOTIFY in the statement where the transaction can't send it after its commit (PGlite, a
 * savepoint; otherwise db/after-commit.ts sends it). The events' keys are inserted first, in the
 * order given, in its week's partition (and, in the week's last day, the next week's too:
 * migration 0028 says why that meets a publish on the other side of a Monday 00:00), unless
 * an event of the previous week holds it (older weeks are not looked at: a key is unique for at
 * least 7 days, docs/decisions/event-key-window.md): ON CONFLICT DO NOTHING catches a key used
 * before, a concurrent publish and a second use within the batch (the first use winning), and
 * an event is written only when every row of its key was.
 *
 *   $1 merchant ids, $2 environments, $3 types, $4 idempotency keys (null: none), $5 event ids,
 *   $6 bodies, $7 the resources' ids (`data.object.id`, null: none), $8 the one endpoint of a
 *   portal test event (null: the subscribed ones; '': none), $9 copies (1 or 2), $10 the wildcard
 *   type, $11 delivery ids, $12 now, $13 NOTIFY in this statement, $14 the publishing span's
 *   traceparent (null unless tracing; one span covers the statement), $15 the Monday 00:00 UTC
 *   of now's week, $16 the events' ranks.
 */
const publishSql = (source: Source) => `
WITH inp AS (
  SELECT i.*, mc.platform_id
  FROM (${events(source, [
    ['$1', 'text', 'merchant_id'],
    ['$2', 'text', 'environment'],
    ['$3', 'text', 'type'],
    ['$4', 'text', 'idem'],
    ['$5', 'text', 'event_id'],
    ['$6', 'text', 'body'],
    ['$7', 'text', 'object_id'],
    ['$8', 'text', 'only_endpoint'],
    ['$9', 'int', 'copies'],
    ['$16', 'int', 'n'],
  ])}) i
  LEFT JOIN merchants mc ON mc.id = i.merchant_id
), fan AS (
  SELECT inp.event_id, inp.environment, inp.type, w.id AS endpoint_id, w.platform_id, c.copy::smallint AS copy,
         (row_number() OVER (${inOrder(source)}))::int AS slot,
         -- Per-object ordering (claim.ts): the object's id for ordered endpoints only.
         CASE WHEN w.delivery_order = 'per_object' THEN inp.object_id END AS order_key
  FROM inp JOIN webhook_endpoints w
    ON w.platform_id = inp.platform_id AND w.environment = inp.environment AND w.status = 'enabled' AND w.deleted_at IS NULL
   AND CASE WHEN inp.only_endpoint IS NOT NULL
            -- A portal test event goes to the one endpoint it was sent from, whatever it subscribes to.
            THEN w.id = inp.only_endpoint
            ELSE ($10::text = ANY(w.enabled_events) OR inp.type = ANY(w.enabled_events)) END
  JOIN (VALUES (1), (2)) AS c(copy) ON c.copy <= inp.copies
), need AS (
  SELECT count(*)::int AS needed FROM fan
), k AS (
  INSERT INTO event_idempotency_keys (platform_id, environment, idempotency_key, event_id, event_created_at, week)
  SELECT inp.platform_id, inp.environment, inp.idem, inp.event_id, $12::timestamptz, w.week
  FROM inp CROSS JOIN (VALUES ($15::timestamptz), ($15::timestamptz + interval '168 hours')) AS w(week)
  WHERE inp.idem IS NOT NULL AND inp.platform_id IS NOT NULL AND (SELECT needed FROM need) <= cardinality($11::text[])
    -- The next week's row only in the week's last day (migration 0028).
    AND (w.week = $15::timestamptz OR $12::timestamptz >= $15::timestamptz + interval '144 hours')
    -- The key's main row of the previous week only (a key is unique for at least 7 days, not
    -- while its event is kept: docs/decisions/event-key-window.md): one index probe in one
    -- partition, pruned at the executor's start in a generic plan too, whatever the weeks kept.
    -- A scalar subquery, not NOT EXISTS, which the planner may turn into a hash anti-join.
    AND (SELECT 1 FROM event_idempotency_keys o
         WHERE o.platform_id = inp.platform_id AND o.environment = inp.environment AND o.idempotency_key = inp.idem
           AND o.week = $15::timestamptz - interval '168 hours' AND o.event_created_at >= o.week
         LIMIT 1) IS NULL
  ORDER BY ${source === 'one' ? '' : 'inp.n, '}w.week
  ON CONFLICT DO NOTHING
  RETURNING event_id
), ev AS (
  INSERT INTO events (id, platform_id, environment, merchant_id, type, body, idempotency_key, created_at, object_id, trace_parent)
  SELECT inp.event_id, inp.platform_id, inp.environment, inp.merchant_id, inp.type, inp.body, inp.idem, $12::timestamptz, inp.object_id,
         $14::text
  FROM inp
  WHERE inp.platform_id IS NOT NULL AND (inp.idem IS NULL OR inp.event_id IN (
           SELECT k.event_id FROM k GROUP BY k.event_id
           HAVING count(*) = CASE WHEN $12::timestamptz >= $15::timestamptz + interval '144 hours' THEN 2 ELSE 1 END))
    AND (SELECT needed FROM need) <= cardinality($11::text[])
  RETURNING id
), d AS (
  INSERT INTO webhook_deliveries (id, event_id, endpoint_id, copy, platform_id, environment, state, attempt_count,
                                  automatic_attempts, next_attempt_at, created_at, updated_at, event_type)
  SELECT ($11::text[])[f.slot], f.event_id, f.endpoint_id, f.copy, f.platform_id, f.environment, 'pending', 0, 0,
         $12::timestamptz, $12::timestamptz, $12::timestamptz, f.type
  FROM fan f WHERE f.event_id = ANY (ARRAY(SELECT ev.id FROM ev))
), q AS (
  INSERT INTO delivery_queue (delivery_id, delivery_created_at, event_id, endpoint_id, platform_id, due_at, order_key)
  SELECT ($11::text[])[f.slot], $12::timestamptz, f.event_id, f.endpoint_id, f.platform_id, $12::timestamptz, f.order_key
  FROM fan f WHERE f.event_id = ANY (ARRAY(SELECT ev.id FROM ev))
  RETURNING 1
), n AS (
  SELECT pg_notify('${WAKE_CHANNEL}', '') FROM (SELECT 1 FROM q LIMIT 1) AS any_delivery WHERE $13::boolean
)
SELECT inp.event_id, inp.platform_id, (SELECT needed FROM need) AS needed,
       (SELECT count(*) FROM fan WHERE fan.event_id = inp.event_id)::int AS fanout,
       inp.event_id = ANY (ARRAY(SELECT ev.id FROM ev)) AS inserted, (SELECT count(*) FROM n)::int AS notified
FROM inp`;
const PUBLISH_SQL = { one: publishSql('one'), many: publishSql('many') };
const NAME = { one: 'publish_event', many: 'publish_events' };

function publishParams(valid: Valid[], now: Date, ids: string[], notifyHere: boolean, traceparent: string | undefined): unknown[] {
  const params: unknown[] = [
    each(valid, (v) => v.input.merchantId),
    each(valid, (v) => v.input.environment),
    each(valid, (v) => v.input.type),
    each(valid, (v) => v.input.idempotencyKey ?? null),
    each(valid, (v) => v.id),
    each(valid, (v) => v.body),
    each(valid, objectId),
    // null delivers to none: '' is no endpoint's id.
    each(valid, (v) => (v.onlyEndpointId === null ? '' : (v.onlyEndpointId ?? null))),
    each(valid, (v) => v.copies),
    WILDCARD_EVENT_TYPE,
    ids,
    now,
    notifyHere,
    traceparent ?? null,
    weekStart(now),
  ];
  if (valid.length > 1) params.push(ranks(valid.length));
  return params;
}

/**
 * `PUBLISH_SQL` for the common publish: no idempotency key, not a portal test event, one copy,
 * workers woken after the commit. The same writes with about half the plan: the parts those
 * options need (the key's insert, the one-endpoint CASE, the copies join, the in-statement
 * NOTIFY) cost their executor set-up on every execution even when they do nothing, and that
 * set-up was a fifth of PostgreSQL's CPU for a one-event publish (bench/investigations/
 * cpu-per-delivery.md, "A plain statement for the common publish"). Every event whose merchant
 * exists is written once the ids fit, so its rows carry no `inserted`.
 *
 *   $1 merchant ids, $2 environments, $3 types, $4 event ids, $5 bodies, $6 the resources' ids,
 *   $7 the wildcard type, $8 delivery ids, $9 now, $10 the publishing span's traceparent,
 *   $11 the events' ranks.
 */
const publishPlainSql = (source: Source) => `
WITH inp AS (
  SELECT i.*, mc.platform_id
  FROM (${events(source, [
    ['$1', 'text', 'merchant_id'],
    ['$2', 'text', 'environment'],
    ['$3', 'text', 'type'],
    ['$4', 'text', 'event_id'],
    ['$5', 'text', 'body'],
    ['$6', 'text', 'object_id'],
    ['$11', 'int', 'n'],
  ])}) i
  LEFT JOIN merchants mc ON mc.id = i.merchant_id
), fan AS (
  SELECT inp.event_id, inp.environment, inp.type, w.id AS endpoint_id, w.platform_id, (row_number() OVER (${inOrder(source)}))::int AS slot,
         CASE WHEN w.delivery_order = 'per_object' THEN inp.object_id END AS order_key
  FROM inp JOIN webhook_endpoints w
    ON w.platform_id = inp.platform_id AND w.environment = inp.environment AND w.status = 'enabled' AND w.deleted_at IS NULL
   AND ($7::text = ANY(w.enabled_events) OR inp.type = ANY(w.enabled_events))
), need AS (
  SELECT count(*)::int AS needed FROM fan
), ev AS (
  INSERT INTO events (id, platform_id, environment, merchant_id, type, body, created_at, object_id, trace_parent)
  SELECT inp.event_id, inp.platform_id, inp.environment, inp.merchant_id, inp.type, inp.body, $9::timestamptz, inp.object_id, $10::text
  FROM inp WHERE inp.platform_id IS NOT NULL AND (SELECT needed FROM need) <= cardinality($8::text[])
), d AS (
  INSERT INTO webhook_deliveries (id, event_id, endpoint_id, copy, platform_id, environment, state, attempt_count,
                                  automatic_attempts, next_attempt_at, created_at, updated_at, event_type)
  SELECT ($8::text[])[f.slot], f.event_id, f.endpoint_id, 1, f.platform_id, f.environment, 'pending', 0, 0,
         $9::timestamptz, $9::timestamptz, $9::timestamptz, f.type
  FROM fan f WHERE (SELECT needed FROM need) <= cardinality($8::text[])
), q AS (
  INSERT INTO delivery_queue (delivery_id, delivery_created_at, event_id, endpoint_id, platform_id, due_at, order_key)
  SELECT ($8::text[])[f.slot], $9::timestamptz, f.event_id, f.endpoint_id, f.platform_id, $9::timestamptz, f.order_key
  FROM fan f WHERE (SELECT needed FROM need) <= cardinality($8::text[])
)
SELECT inp.event_id, inp.platform_id, (SELECT needed FROM need) AS needed,
       (SELECT count(*) FROM fan WHERE fan.event_id = inp.event_id)::int AS fanout
FROM inp`;
const PUBLISH_PLAIN_SQL = { one: publishPlainSql('one'), many: publishPlainSql('many') };
const PLAIN_NAME = { one: 'publish_event_plain', many: 'publish_events_plain' };

function plainParams(valid: Valid[], now: Date, ids: string[], traceparent: string | undefined): unknown[] {
  const params: unknown[] = [
    each(valid, (v) => v.input.merchantId),
    each(valid, (v) => v.input.environment),
    each(valid, (v) => v.input.type),
    each(valid, (v) => v.id),
    each(valid, (v) => v.body),
    each(valid, objectId),
    WILDCARD_EVENT_TYPE,
    ids,
    now,
    traceparent ?? null,
  ];
  if (valid.length > 1) params.push(ranks(valid.length));
  return params;
}

/**
 * Where the statements read their events from: one event's values as they are, or arrays of
 * every event's (the same text otherwise). One event bound as scalars costs PostgreSQL less
 * than the same in arrays of one (no arrays to parse and unnest, no sort by rank): about 20 % of
 * the statement's CPU, measured alone (docs/performance.md, "One way to publish").
 */
type Source = 'one' | 'many';

/** The events' columns: `$n::type AS name` for one event, `unnest($n::type[]) AS name` for many. */
function events(source: Source, columns: [param: string, type: string, name: string][]): string {
  if (source === 'one') return `SELECT ${columns.map(([p, t, name]) => (name === 'n' ? '1 AS n' : `${p}::${t} AS ${name}`)).join(', ')}`;
  return `SELECT ${columns.map(([p, t, name]) => `unnest(${p}::${t}[]) AS ${name}`).join(', ')}`;
}

/** Events in the order given: by rank when there are several. */
function inOrder(source: Source): string {
  return source === 'one' ? '' : 'ORDER BY inp.n';
}

/**
 * A column of the events: the one event's value, or every event's in an array. (node-postgres
 * builds these small arrays' text faster than db/array-literal.ts's one JSON.stringify, measured
 * in a CPU profile of bench/publish-ab.ts.)
 */
function each<T>(valid: Valid[], value: (v: Valid) => T): T | T[] {
  return valid.length === 1 ? value(valid[0]!) : valid.map(value);
}

/** Each event's rank, 1 to n, which the statements order by. */
const ranks = (n: number): number[] => Array.from({ length: n }, (_, i) => i + 1);

/** The resource's id (`data.object.id`), for finding an object's events and ordering per object. */
const objectId = (v: Valid): string | null => (typeof v.input.object.id === 'string' ? v.input.object.id : null);

/**
 * The event each replayed key holds now (`n`: its rank in the arrays; $4: the Monday 00:00 UTC
 * of now's week). A key has a row in its event's week, perhaps one in the next (and perhaps one
 * pointing to no event: migration 0028). What made the publish a replay is in the previous week,
 * this one or the next; and a key reused after its window (two weeks on) has a newer event
 * while the older one is kept: the newest event of those three weeks is the answer.
 */
const REPLAYED_SQL = `
SELECT DISTINCT ON (r.n) r.n, e.body
FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS r(platform_id, environment, idem, n)
JOIN event_idempotency_keys k ON k.platform_id = r.platform_id AND k.environment = r.environment AND k.idempotency_key = r.idem
 AND k.week >= $4::timestamptz - interval '168 hours' AND k.week <= $4::timestamptz + interval '168 hours'
JOIN events e ON e.id = k.event_id AND e.created_at = k.event_created_at
ORDER BY r.n, e.created_at DESC, e.id DESC`;

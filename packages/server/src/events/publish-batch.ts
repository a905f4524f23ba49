import { WILDCARD_EVENT_TYPE, type WebhookEvent } from '@payhooks/contract';
import type { Database, Tx } from '../db/client.ts';
import { notifyAfterCommit, wakesAfterCommit } from '../db/after-commit.ts';
import { runNamedStatement } from '../db/named-statement.ts';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import { buildEnvelope, validateEventInput, type EventInput } from './envelope.ts';
import type { PublishResult } from './publish.ts';
import { WAKE_CHANNEL } from '../delivery/wake-channel.ts';
import { traced, tracing } from '../telemetry/tracing.ts';

/** One event of a batch: what `publishEvent` takes, minus the portal's and the sandbox's options. */
export type BatchEventInput = EventInput & { idempotencyKey?: string | undefined };

/** Each event's outcome, in the order given: published (or replayed), or refused on its own. */
export type BatchOutcome = { ok: true; result: PublishResult } | { ok: false; error: AppError };

/** The most events one statement publishes (the batch API's limit too). */
export const PUBLISH_BATCH_MAX = 100;

/**
 * Publishes several events inside the caller's transaction in one statement: what N calls of
 * `publishEvent` would write (each event, one delivery and one queue row per enabled endpoint of
 * its Platform and environment subscribed to its type or `*`), in one round trip instead of N.
 * Every event stands alone: one whose merchant is unknown is refused with its own error and
 * the others are published; an idempotency key seen before (or earlier in the same batch)
 * replays the first event. Events are validated like `publishEvent` validates; the caller checks
 * anything type-specific first. Workers are woken once the transaction commits.
 */
export async function publishEvents(tx: Tx, inputs: BatchEventInput[], now: Date): Promise<BatchOutcome[]> {
  const notifyHere = !wakesAfterCommit(tx);
  const { outcomes, deliveries } = await publishWith(txRunner(tx), inputs, now, notifyHere);
  if (deliveries > 0) notifyAfterCommit(tx, WAKE_CHANNEL);
  return outcomes;
}

/**
 * The same as one statement of its own, outside any transaction: the statement is atomic, so
 * the events it publishes commit together, in one round trip where BEGIN, the statement and
 * COMMIT would take three. For callers that publish nothing else with the events (the internal
 * API); workers are woken after the commit.
 */
export async function publishEventsAlone(database: Database, inputs: BatchEventInput[], now: Date): Promise<BatchOutcome[]> {
  const run: Runner = (sql, params, name) => database.query(sql, params, name);
  const { outcomes, deliveries } = await publishWith(run, inputs, now, false);
  if (deliveries > 0) database.wake(WAKE_CHANNEL);
  return outcomes;
}

type Runner = <T>(sql: string, params: unknown[], name: string) => Promise<T[]>;

/** Statements on the transaction's own connection, named (db/named-statement.ts). */
const txRunner =
  (tx: Tx): Runner =>
  <T>(sql: string, params: unknown[], name: string) =>
    runNamedStatement<T>(tx, name, sql, params);

/** The most delivery ids generated per event before the statement says how many it needs. */
const fanoutHint = new Map<string, number>();
const FANOUT_HINT_MAX = 10_000;

async function publishWith(
  run: Runner,
  inputs: BatchEventInput[],
  now: Date,
  notifyHere: boolean,
): Promise<{ outcomes: BatchOutcome[]; deliveries: number }> {
  if (!tracing.enabled) return publishAll(run, inputs, now, notifyHere, undefined);
  return traced(
    'publish batch',
    { kind: 'producer', attributes: { 'payhooks.batch.size': inputs.length } },
    (traceparent) => publishAll(run, inputs, now, notifyHere, traceparent),
    (r) => ({ 'payhooks.event.deliveries': r.deliveries }),
  );
}

async function publishAll(
  run: Runner,
  inputs: BatchEventInput[],
  now: Date,
  notifyHere: boolean,
  traceparent: string | undefined,
): Promise<{ outcomes: BatchOutcome[]; deliveries: number }> {
  if (inputs.length > PUBLISH_BATCH_MAX) throw new Error(`publishEvents: at most ${PUBLISH_BATCH_MAX} events per call`);
  const outcomes: (BatchOutcome | undefined)[] = new Array(inputs.length);
  const valid: Valid[] = [];
  inputs.forEach((input, index) => {
    try {
      validateEventInput(input);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      outcomes[index] = { ok: false, error: err };
      return;
    }
    const id = newId('event');
    valid.push({ index, input, id, ...buildEnvelope(id, input, now) });
  });
  if (valid.length === 0) return { outcomes: outcomes as BatchOutcome[], deliveries: 0 };

  // As many delivery ids as these merchants' last fan-outs took; more only when the statement asks.
  let pool = valid.reduce((sum, v) => sum + (fanoutHint.get(v.input.merchantId) ?? 4), 0);
  let rows: BatchRow[];
  for (;;) {
    const ids = Array.from({ length: pool }, () => newId('webhookDelivery'));
    rows = await run<BatchRow>(PUBLISH_EVENTS_SQL, statementParams(valid, now, ids, notifyHere, traceparent), 'publish_events');
    const needed = Number(rows[0]?.needed ?? 0);
    if (needed <= pool) break;
    pool = needed; // more deliveries than ids: nothing was written; again with enough
  }
  if (fanoutHint.size >= FANOUT_HINT_MAX) fanoutHint.clear();
  const replays: number[] = [];
  let deliveries = 0;
  for (const row of rows) {
    const v = valid[Number(row.n) - 1]!;
    if (row.platform_id === null) {
      outcomes[v.index] = {
        ok: false,
        error: new AppError('invalid_request', 'resource_missing', `No such merchant: '${v.input.merchantId}'.`, { param: 'merchant_id' }),
      };
      continue;
    }
    fanoutHint.set(v.input.merchantId, Math.max(1, Number(row.fanout)));
    if (row.inserted) {
      deliveries += Number(row.deliveries);
      outcomes[v.index] = { ok: true, result: { event: v.envelope, deliveries: Number(row.deliveries), replayed: false } };
    } else {
      replays.push(Number(row.n) - 1);
    }
  }
  if (replays.length > 0) await readReplays(run, valid, rows, replays, outcomes);
  return { outcomes: outcomes as BatchOutcome[], deliveries };
}

/** Keys used before, or earlier in this batch: the first event of each, in one more round trip. */
async function readReplays(run: Runner, valid: Valid[], rows: BatchRow[], replays: number[], outcomes: (BatchOutcome | undefined)[]) {
  const found = await run<{ n: number; body: string }>(
    REPLAYED_SQL,
    [
      replays.map((i) => rows[i]!.platform_id),
      replays.map((i) => valid[i]!.input.environment),
      replays.map((i) => valid[i]!.input.idempotencyKey ?? ''),
    ],
    'publish_events_replayed',
  );
  for (const { n, body } of found) {
    const v = valid[replays[Number(n) - 1]!]!;
    outcomes[v.index] = { ok: true, result: { event: JSON.parse(body) as WebhookEvent, deliveries: 0, replayed: true } };
  }
  for (const i of replays) {
    // Only if the first event left the retention window while its key was read: rare, and never silent.
    outcomes[valid[i]!.index] ??= {
      ok: false,
      error: new AppError('conflict', 'idempotency_key_in_use', 'This idempotency_key belongs to an event being removed; use a new key.', {
        param: 'idempotency_key',
      }),
    };
  }
}

interface Valid {
  index: number;
  input: BatchEventInput;
  id: string;
  envelope: WebhookEvent;
  body: string;
}

interface BatchRow {
  n: number;
  platform_id: string | null;
  needed: number;
  /** This event's endpoints, whether or not it was written (the next publish's id hint). */
  fanout: number;
  inserted: boolean;
  deliveries: number;
}

/**
 * The statement: `publish.ts`'s PUBLISH_SQL over arrays, one element per event (`n` its rank).
 * `fan` numbers every (event, endpoint) pair so each takes the delivery id of that rank in $8;
 * with fewer ids than pairs nothing is written and `needed` says how many. An event's
 * idempotency key is inserted first (ON CONFLICT DO NOTHING catches a concurrent publish and a
 * second use within the batch, the lower rank winning), and the event is written only when its
 * key was. Named (`publish_events`): prepared once per connection.
 *
 *   $1 merchant ids, $2 environments, $3 types, $4 idempotency keys (null: none), $5 event ids,
 *   $6 bodies, $7 now, $8 delivery ids, $9 the wildcard type, $10 NOTIFY in this transaction,
 *   $11 the resources' ids (`data.object.id`, null: none), $12 the publishing span's traceparent
 *   (null unless tracing; one span covers the batch).
 */
const PUBLISH_EVENTS_SQL = `
WITH inp AS (
  SELECT i.n, i.merchant_id, i.environment, i.type, i.idem, i.event_id, i.body, i.object_id, mc.platform_id
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $11::text[])
         WITH ORDINALITY AS i(merchant_id, environment, type, idem, event_id, body, object_id, n)
  LEFT JOIN merchants mc ON mc.id = i.merchant_id
), fan AS (
  SELECT inp.n, inp.event_id, inp.environment, inp.type, w.id AS endpoint_id, w.platform_id, (row_number() OVER ())::int AS slot,
         -- Per-object ordering (claim.ts): the object's id for ordered endpoints only.
         CASE WHEN w.delivery_order = 'per_object' THEN inp.object_id END AS order_key
  FROM inp JOIN webhook_endpoints w
    ON w.platform_id = inp.platform_id AND w.environment = inp.environment AND w.status = 'enabled' AND w.deleted_at IS NULL
   AND ($9::text = ANY(w.enabled_events) OR inp.type = ANY(w.enabled_events))
), fits AS (
  SELECT (SELECT count(*) FROM fan) <= cardinality($8::text[]) AS ok
), k AS (
  INSERT INTO event_idempotency_keys (platform_id, environment, idempotency_key, event_id, event_created_at)
  SELECT inp.platform_id, inp.environment, inp.idem, inp.event_id, $7::timestamptz
  FROM inp, fits
  WHERE fits.ok AND inp.idem IS NOT NULL AND inp.platform_id IS NOT NULL
  ORDER BY inp.n
  ON CONFLICT DO NOTHING
  RETURNING event_id
), ev AS (
  INSERT INTO events (id, platform_id, environment, merchant_id, type, body, idempotency_key, created_at, object_id, trace_parent)
  SELECT inp.event_id, inp.platform_id, inp.environment, inp.merchant_id, inp.type, inp.body, inp.idem, $7::timestamptz, inp.object_id,
         $12::text
  FROM inp, fits
  WHERE fits.ok AND inp.platform_id IS NOT NULL AND (inp.idem IS NULL OR inp.event_id IN (SELECT k.event_id FROM k))
  RETURNING id
), d AS (
  INSERT INTO webhook_deliveries (id, event_id, endpoint_id, copy, platform_id, environment, state, attempt_count,
                                  automatic_attempts, next_attempt_at, created_at, updated_at, event_type)
  SELECT ($8::text[])[f.slot], f.event_id, f.endpoint_id, 1, f.platform_id, f.environment, 'pending', 0, 0,
         $7::timestamptz, $7::timestamptz, $7::timestamptz, f.type
  FROM fan f WHERE f.event_id IN (SELECT ev.id FROM ev)
  RETURNING id, event_id, endpoint_id, platform_id
), q AS (
  INSERT INTO delivery_queue (delivery_id, delivery_created_at, event_id, endpoint_id, platform_id, due_at, order_key)
  SELECT d.id, $7::timestamptz, d.event_id, d.endpoint_id, d.platform_id, $7::timestamptz, f.order_key
  FROM d JOIN fan f ON f.event_id = d.event_id AND f.endpoint_id = d.endpoint_id
  RETURNING event_id
), n AS (
  SELECT pg_notify('${WAKE_CHANNEL}', '') FROM (SELECT 1 FROM q LIMIT 1) AS any_delivery WHERE $10::boolean
)
SELECT inp.n, inp.platform_id, (SELECT count(*) FROM fan)::int AS needed,
       (SELECT count(*) FROM fan WHERE fan.n = inp.n)::int AS fanout,
       inp.event_id IN (SELECT ev.id FROM ev) AS inserted,
       (SELECT count(*) FROM q WHERE q.event_id = inp.event_id)::int AS deliveries,
       (SELECT count(*) FROM n)::int AS notified
FROM inp
ORDER BY inp.n`;

/** The first event of each replayed key (`n`: its rank in the arrays). */
const REPLAYED_SQL = `
SELECT r.n, e.body
FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS r(platform_id, environment, idem, n)
JOIN event_idempotency_keys k ON k.platform_id = r.platform_id AND k.environment = r.environment AND k.idempotency_key = r.idem
JOIN events e ON e.id = k.event_id AND e.created_at = k.event_created_at`;

function statementParams(valid: Valid[], now: Date, ids: string[], notifyHere: boolean, traceparent: string | undefined): unknown[] {
  return [
    valid.map((v) => v.input.merchantId),
    valid.map((v) => v.input.environment),
    valid.map((v) => v.input.type),
    valid.map((v) => v.input.idempotencyKey ?? null),
    valid.map((v) => v.id),
    valid.map((v) => v.body),
    now,
    ids,
    WILDCARD_EVENT_TYPE,
    notifyHere,
    valid.map((v) => (typeof v.input.object.id === 'string' ? v.input.object.id : null)),
    traceparent ?? null,
  ];
}

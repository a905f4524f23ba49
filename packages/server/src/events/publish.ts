import { WILDCARD_EVENT_TYPE, type WebhookEvent } from '@payhooks/contract';
import type { Database, Tx } from '../db/client.ts';
import { notifyAfterCommit, wakesAfterCommit } from '../db/after-commit.ts';
import { runAlone, runInTransaction, type Statement } from '../db/statement.ts';
import { scratchOf, type DatabaseScratch } from '../db/scratch.ts';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import { buildEnvelope, validateEventInput, type EventInput } from './envelope.ts';
import { traced, tracing } from '../telemetry/tracing.ts';
import { WAKE_CHANNEL } from '../delivery/wake-channel.ts';
import { weekStart } from '../db/retention.ts';
import { PUBLISH, PUBLISH_PLAIN, REPLAYED, type PublishParams, type PublishRow, type Source } from './publish-statements.ts';

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
  run<P extends object, R>(stmt: Statement<P, R>, values: P): Promise<R[]>;
  /** NOTIFY inside the statement: the transaction can't send its wake-up after its commit (PGlite, a savepoint). */
  notifyHere: boolean;
  /** Some delivery was written: wake the workers once it is committed. */
  wake(): void;
  /** The handle's fan-out hints (a savepoint's publish starts without). */
  hints: FanoutHints;
}

/** The caller's transaction: named statements on its own connection (db/statement.ts). */
function inTransaction(tx: Tx): Target {
  return {
    run: (stmt, values) => runInTransaction(tx, stmt, values),
    notifyHere: !wakesAfterCommit(tx),
    wake: () => notifyAfterCommit(tx, WAKE_CHANNEL),
    hints: hintsOf(scratchOf(tx)),
  };
}

/** A statement of its own on the pool: it commits when it returns. */
function alone(database: Database): Target {
  return {
    run: (stmt, values) => runAlone(database, stmt, values),
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
    rows = await to.run((plain ? PUBLISH_PLAIN : PUBLISH)[source], publishParams(valid, now, ids, to.notifyHere, traceparent, plain));
    const needed = rows[0]?.needed ?? 0;
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
    const fanout = row.fanout;
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
  const found = await to.run(REPLAYED, {
    platform_ids: replays.map((r) => r.platformId),
    environments: replays.map((r) => r.v.input.environment),
    idems: replays.map((r) => r.v.input.idempotencyKey ?? ''),
    week: weekStart(now),
  });
  for (const { n, body } of found) {
    outcomes[replays[n - 1]!.v.index] = {
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
 * The values of either statement for `valid`: one event's as they are, several events' in
 * arrays. The plain statement leaves out what it does not take (keys, one endpoint, copies,
 * NOTIFY, week).
 */
function publishParams(
  valid: Valid[],
  now: Date,
  ids: string[],
  notifyHere: boolean,
  traceparent: string | undefined,
  plain: boolean,
): PublishParams {
  const params: PublishParams = {
    merchant_id: each(valid, (v) => v.input.merchantId),
    environment: each(valid, (v) => v.input.environment),
    type: each(valid, (v) => v.input.type),
    event_id: each(valid, (v) => v.id),
    body: each(valid, (v) => v.body),
    object_id: each(valid, objectId),
    wildcard: WILDCARD_EVENT_TYPE,
    delivery_ids: ids,
    now,
    traceparent: traceparent ?? null,
  };
  if (valid.length > 1) params.n = ranks(valid.length);
  if (plain) return params;
  params.idem = each(valid, (v) => v.input.idempotencyKey ?? null);
  // null delivers to none: '' is no endpoint's id.
  params.only_endpoint = each(valid, (v) => (v.onlyEndpointId === null ? '' : (v.onlyEndpointId ?? null)));
  params.copies = each(valid, (v) => v.copies);
  params.notify_here = notifyHere;
  params.week = weekStart(now);
  return params;
}

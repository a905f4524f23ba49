import type { Database } from '../db/client.ts';
import type { AttemptTrigger, DeliveryState } from '../db/schema.ts';
import { newId } from '../ids.ts';
import { arrayLiteral } from '../db/array-literal.ts';
import { runAlone, statement } from '../db/statement.ts';
import type { AttemptResult } from './destinations/attempt.ts';
import { THROTTLE_AFTER_TIMEOUTS } from './fairness.ts';
import type { AttemptStats } from './attempt-stats.ts';

export interface Outcome {
  deliveryId: string;
  /** The delivery's endpoint: the attempt is counted in its stats (attempt-stats.ts). */
  endpointId: string;
  token: string;
  trigger: AttemptTrigger;
  state: DeliveryState;
  nextAttemptAt: Date | null;
  result: AttemptResult;
}

/** Postgres text can't hold NUL; a receiver's body may. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching NUL is the point
const clean = (s: string | null) => (s === null || !s.includes('\u0000') ? s : s.replace(/\u0000/g, '\uFFFD'));

/**
 * Records a batch of attempt outcomes in one statement: moves each delivery to its new state
 * and schedule and appends its attempt to the log (spec 2.4), atomically.
 *
 * Only deliveries whose queue row still holds the caller's `lease_token` are written (`held`),
 * so a worker whose lease ran out (and whose row another worker took) can't overwrite the newer
 * state; its attempt is not
 * logged either, and the caller is told which ids were dropped. The attempt number is the
 * delivery's new `attempt_count`, which also orders automatic and manual attempts together.
 * Automatic attempts advance `automatic_attempts`, the budget of spec 8; manual ones don't.
 */
export const RECORD = statement<RecordParams, RecordedAttempt>(
  'record_outcomes',
  `
WITH v AS (
  -- Times arrive as milliseconds since the epoch: formatting a Date as text costs the worker more
  -- than the rest of an outcome's parameters together, and parsing it costs PostgreSQL too.
  -- A millisecond count divided by 1,000 as float8 lands on the same microsecond exactly.
  SELECT id, token, state, to_timestamp(next_attempt_ms / 1000) AS next_attempt_at, succeeded,
         to_timestamp(started_ms / 1000) AS started_at, duration_ms, status_code, response_body, error_kind,
         error_message, attempt_id, trigger, request_signature, broker, trace_parent, request_webhook_signature,
         request_custom_headers, rate_limited_ms
  FROM unnest(:ids::text[], :tokens::text[], :states::text[], :next_attempt_ms::float8[], :succeeded::boolean[], :started_ms::float8[],
              :duration_ms::int[], :status_codes::int[], :response_bodies::text[], :error_kinds::text[], :error_messages::text[], :attempt_ids::text[], :triggers::text[], :request_signatures::text[],
              :brokers::text[], :trace_parents::text[], :request_webhook_signatures::text[], :request_custom_headers::text[], :rate_limited_ms::int[])
    AS v(id, token, state, next_attempt_ms, succeeded, started_ms, duration_ms, status_code,
         response_body, error_kind, error_message, attempt_id, trigger, request_signature, broker, trace_parent,
         request_webhook_signature, request_custom_headers, rate_limited_ms)
), held AS (
  -- Each outcome's queue row, locked, found from the batch's side: a LATERAL subquery with
  -- LIMIT 1 can't be flattened, so the queue is probed by primary key once per outcome, whatever
  -- the planner believes about the queue. The lease is checked here: a row another worker has
  -- taken since (another token) is not found, and its outcome is not recorded. The row's
  -- \`delivery_created_at\` gives the delivery's partition.
  --
  -- Joined to the queue as a plain join, the statement's plan followed the queue's statistics,
  -- which the worker's frequent VACUUM takes whenever it runs: at a low rate they say the queue
  -- is nearly empty, and the plan made then (kept as the generic plan) scanned the whole queue
  -- as the outer side of a nested loop, rescanning the batch for each row. When the rate jumped,
  -- a record of 145 outcomes took 240 ms until the next VACUUM replanned it
  -- (test/integration/queue-plan.postgres.test.ts builds that state).
  SELECT v.id, v.state, v.next_attempt_at, v.trigger, v.started_at, q.delivery_created_at
  FROM v CROSS JOIN LATERAL (
    SELECT q.delivery_created_at FROM delivery_queue q
    WHERE q.delivery_id = v.id AND q.lease_token = v.token
    LIMIT 1
    FOR UPDATE
  ) q
), finished AS (
  -- A finished delivery leaves the queue. The rows are the ones \`held\` locked; reached by key
  -- through the array, the queue side is those rows and no more in any plan.
  DELETE FROM delivery_queue q
  WHERE q.delivery_id = ANY (ARRAY(SELECT id FROM held WHERE next_attempt_at IS NULL))
), retried AS (
  -- A retry's row moves to its next due time, unleased.
  UPDATE delivery_queue q
  SET due_at = h.next_attempt_at, lease_token = NULL, leased_at = NULL
  FROM held h
  WHERE q.delivery_id = ANY (ARRAY(SELECT id FROM held WHERE next_attempt_at IS NOT NULL)) AND q.delivery_id = h.id
), updated AS (
  UPDATE webhook_deliveries d
  SET state = h.state,
      next_attempt_at = h.next_attempt_at,
      attempt_count = d.attempt_count + 1,
      automatic_attempts = d.automatic_attempts + CASE WHEN h.trigger = 'automatic' THEN 1 ELSE 0 END,
      last_attempt_at = h.started_at,
      updated_at = :now
  FROM held h
  WHERE d.id = h.id AND d.created_at = h.delivery_created_at
  RETURNING d.id, d.attempt_count, d.endpoint_id, d.created_at
), health AS (
  -- The circuit breaker's count (delivery/fairness.ts), per endpoint of the batch: any answer
  -- resets it (an HTTP status; from a broker, its confirmation or its refusal), each timeout
  -- adds one. Rows are written only when something changes, so healthy endpoints cost nothing here.
  SELECT u.endpoint_id,
         bool_or(v.status_code IS NOT NULL OR v.succeeded OR v.error_kind = 'broker') AS answered,
         count(*) FILTER (WHERE v.error_kind = 'timeout')::int AS timeouts,
         bool_or(v.succeeded) AS succeeded,
         min(v.started_at) FILTER (WHERE NOT v.succeeded) AS first_failure
  FROM updated u JOIN v ON v.id = u.id
  GROUP BY u.endpoint_id
), breaker AS (
  -- Also the auto-disable clock (endpoints/auto-disable.ts): any 2xx clears \`failing_since\`, the
  -- first failure after one sets it. Both are written only when they change.
  UPDATE webhook_endpoints w
  SET consecutive_timeouts = CASE WHEN h.answered THEN 0 ELSE w.consecutive_timeouts + h.timeouts END,
      throttled_at = CASE
        WHEN h.answered THEN NULL
        WHEN w.consecutive_timeouts + h.timeouts >= :throttle_after_timeouts THEN coalesce(w.throttled_at, :now)
        ELSE w.throttled_at END,
      failing_since = CASE WHEN h.succeeded THEN NULL ELSE coalesce(w.failing_since, h.first_failure) END
  FROM health h
  WHERE w.id = h.endpoint_id AND ((h.answered AND w.consecutive_timeouts > 0) OR (NOT h.answered AND h.timeouts > 0)
                                  OR (h.succeeded AND w.failing_since IS NOT NULL) OR (NOT h.succeeded AND w.failing_since IS NULL))
)
INSERT INTO delivery_attempts (id, delivery_id, attempt_number, trigger, succeeded, started_at, duration_ms,
                               status_code, response_body, error_kind, error_message, delivery_created_at, request_signature,
                               broker, trace_parent, request_webhook_signature, request_custom_headers,
                               rate_limited_ms)
SELECT v.attempt_id, v.id, u.attempt_count, v.trigger, v.succeeded, v.started_at, v.duration_ms,
       v.status_code, v.response_body, v.error_kind, v.error_message, u.created_at, v.request_signature,
       v.broker, v.trace_parent, v.request_webhook_signature, v.request_custom_headers, v.rate_limited_ms
FROM updated u JOIN v ON v.id = u.id
RETURNING delivery_id, attempt_number, id`,
);

export interface RecordedAttempt {
  delivery_id: string;
  attempt_number: number;
  id: string;
}

/** `RECORD`'s parameters: one array literal per column (db/array-literal.ts says why), and two values. */
export type RecordParams = Record<(typeof RECORD_COLUMNS)[number], string> & { now: Date; throttle_after_timeouts: number };

const RECORD_COLUMNS = [
  'ids',
  'tokens',
  'states',
  'next_attempt_ms',
  'succeeded',
  'started_ms',
  'duration_ms',
  'status_codes',
  'response_bodies',
  'error_kinds',
  'error_messages',
  'attempt_ids',
  'triggers',
  'request_signatures',
  'brokers',
  'trace_parents',
  'request_webhook_signatures',
  'request_custom_headers',
  'rate_limited_ms',
] as const;

/**
 * `RECORD`'s parameters for a batch (exported for the plan test): each column as one array
 * literal, built in a single pass over the outcomes.
 */
export function recordParams(outcomes: Outcome[], now: Date): RecordParams {
  const n = outcomes.length;
  const cols = Array.from({ length: RECORD_COLUMNS.length }, () => new Array<string | number | boolean | null>(n));
  for (let i = 0; i < n; i++) {
    const o = outcomes[i]!;
    const r = o.result;
    cols[0]![i] = o.deliveryId;
    cols[1]![i] = o.token;
    cols[2]![i] = o.state;
    cols[3]![i] = o.nextAttemptAt === null ? null : o.nextAttemptAt.getTime();
    cols[4]![i] = r.succeeded;
    cols[5]![i] = r.startedAt.getTime();
    cols[6]![i] = r.durationMs;
    cols[7]![i] = r.statusCode;
    cols[8]![i] = clean(r.responseBody);
    cols[9]![i] = r.errorKind;
    cols[10]![i] = clean(r.errorMessage);
    cols[11]![i] = newId('deliveryAttempt');
    cols[12]![i] = o.trigger;
    cols[13]![i] = r.requestSignature ?? null;
    cols[14]![i] = r.broker ?? null;
    cols[15]![i] = r.traceparent ?? null;
    cols[16]![i] = r.webhookSignature ?? null;
    cols[17]![i] = r.customHeaders ?? null;
    cols[18]![i] = r.rateLimitedMs ?? null;
  }
  const params = { now, throttle_after_timeouts: THROTTLE_AFTER_TIMEOUTS } as RecordParams;
  RECORD_COLUMNS.forEach((name, i) => {
    params[name] = arrayLiteral(cols[i]!);
  });
  return params;
}

/**
 * Records the outcomes (RECORD) and counts those recorded in `stats`, for the caller to
 * flush: an outcome dropped for a lost lease is neither logged nor counted.
 */
export async function recordOutcomes(database: Database, outcomes: Outcome[], now: Date, stats: AttemptStats): Promise<RecordedAttempt[]> {
  if (outcomes.length === 0) return [];
  const rows = await runAlone(database, RECORD, recordParams(outcomes, now));
  if (rows.length === outcomes.length) for (const o of outcomes) stats.add(o.endpointId, o.result);
  else {
    const recorded = new Set(rows.map((r) => r.delivery_id));
    for (const o of outcomes) if (recorded.has(o.deliveryId)) stats.add(o.endpointId, o.result);
  }
  return rows;
}

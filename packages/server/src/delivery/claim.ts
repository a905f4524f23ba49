import type { Database } from '../db/client.ts';
import type { DeliveryState, EndpointStatus } from '../db/schema.ts';
import { interruptedAttemptsSql } from './interrupted.ts';
import { runAlone, statement } from '../db/statement.ts';
import { SENDABLE_COLUMNS, sendableJoins, type SendableRow } from './attempt-request.ts';

/** A claimed delivery: what sending reads (attempt-request.ts), plus what the worker schedules by. */
export interface ClaimedDelivery extends SendableRow {
  platform_id: string;
  automatic_attempts: number;
  endpoint_status: EndpointStatus;
  /** The endpoint is throttled to one attempt at a time (fairness.ts). */
  endpoint_throttled: boolean;
  /** The endpoint was deleted: the delivery is cancelled instead of attempted. */
  endpoint_deleted: boolean;
  /** Taken over from an expired lease: an `interrupted` attempt was logged for the old holder. */
  interrupted: boolean;
  /**
   * When the interrupted attempt's lease was taken, if it was automatic (it then counts in
   * `automatic_attempts`, and the schedule runs from it: schedule.ts `beforeAutomaticAttempt`), else null.
   */
  interrupted_automatic_at: Date | null;
  /** The endpoint's max_requests_per_second (rate-cap.ts), null when uncapped. */
  endpoint_rate: number | null;
  /** While a Retry-After pause runs (pause.ts), its end; else null. */
  endpoint_paused_until: Date | null;
}

/**
 * Claims up to `limit` due deliveries for one worker, in one statement (see fairness.ts for
 * the sharing rules it applies).
 *
 * Everything until `claimed` reads and writes only `delivery_queue` (migration 0007): the small,
 * unpartitioned table of deliveries with an attempt coming. The partitioned tables are reached
 * by their full primary key (id, created_at) only, so a generic plan stays good.
 *
 * - `platforms` lists the Platforms that have any queued row, by a skip scan of the
 *   index on (platform_id, due_at): one index probe per Platform, however many rows
 *   each has. A single scan in due order would read through a noisy tenant's whole backlog of
 *   due rows (which it may not take: its share is full) before reaching anyone else's.
 * - `eligible` keeps those with a row due now that this worker may serve (not holding their
 *   share), oldest first, at most `limit` of them; each one's oldest row is one more probe.
 * - `candidates` takes, per eligible Platform, its `k` oldest due rows (k spreads the
 *   candidate budget over them, at least one endpoint's cap, at most the Platform's share),
 *   locking them with SKIP LOCKED so concurrent workers never block on, or take, the same rows.
 *   Endpoints this worker already holds at their cap are left out, and so are rows of
 *   `per_object` endpoints (migration 0016) with an earlier row of the same object still queued.
 * - `ranked` numbers each candidate within its endpoint and within its Platform, and marks the
 *   rows of throttled endpoints (one row per claim for those). The throttled endpoints come as a
 *   set from a partial index (migration 0010), usually empty: joining the candidates to
 *   `webhook_endpoints` instead was planned as a hash join that read every endpoint on every
 *   claim, so the claim slowed as endpoints were added. `throttled_at` is set exactly while the
 *   endpoint's `consecutive_timeouts` is at or past the threshold (record.ts).
 * - `picked` keeps at most the endpoint's cap per endpoint and the Platform's share per
 *   Platform, ordered by the Platform rank first: round robin between Platforms, oldest first
 *   within each.
 * - `claimed` leases them in the queue (by key, bounded to the picked rows whatever the queue's
 *   statistics say): `due_at` moves to the lease expiry and `lease_token` is set. A
 *   worker that dies leaves rows that become due again when the lease runs out; a worker that
 *   records a result must still hold the token (see record.ts).
 * - `interrupted`: a row taken over from an expired lease (it still has a `lease_token`) was
 *   claimed by a worker that never recorded an outcome: it may have died mid-attempt, after the
 *   receiver got the request. That attempt is logged as `interrupted` (no status code, the
 *   worker from the old token, started when its lease was taken; see interrupted.ts) and
 *   counted in `attempt_count` (`bumped`), and, when it was automatic (not a manual replay's), in
 *   the automatic budget of spec 8: the receiver may have had it, so it is one of the 8. The
 *   worker then applies the schedule from it before sending (schedule.ts `beforeAutomaticAttempt`).
 *   Only takeovers pay for this; a normal claim's row has no token and neither CTE writes anything.
 * - The final SELECT joins the stored event body and the endpoint (URL, encrypted secrets,
 *   status, whether it wants the Standard Webhooks headers, its custom headers, its rate cap, a
 *   Retry-After pause still running) so sending needs no further query.
 *
 * Exported for test/integration/claim-plan.postgres.test.ts, which reads its plan.
 */
export const CLAIM = statement<ClaimParams, ClaimedDelivery>(
  'claim_due',
  `
WITH RECURSIVE platforms AS (
  (SELECT platform_id FROM delivery_queue ORDER BY platform_id LIMIT 1)
  UNION ALL
  SELECT (SELECT q.platform_id FROM delivery_queue q
          WHERE q.platform_id > p.platform_id
          ORDER BY q.platform_id LIMIT 1)
  FROM platforms p WHERE p.platform_id IS NOT NULL
), eligible AS (
  SELECT p.platform_id, o.oldest
  FROM platforms p CROSS JOIN LATERAL (
    SELECT q.due_at AS oldest FROM delivery_queue q
    WHERE q.platform_id = p.platform_id
    ORDER BY q.due_at LIMIT 1
  ) o
  WHERE p.platform_id IS NOT NULL AND NOT (p.platform_id = ANY(:exclude_platforms::text[])) AND o.oldest <= :now
  ORDER BY o.oldest
  LIMIT :limit
), budget AS (
  SELECT least(:per_platform::int, greatest(:per_endpoint::int, ceil(:scan::float8 / greatest(1, count(*)))::int)) AS k FROM eligible
), candidates AS (
  SELECT c.delivery_id, c.delivery_created_at, c.endpoint_id, c.platform_id, c.due_at, c.seq, c.lease_token, c.leased_at
  FROM eligible e CROSS JOIN LATERAL (
    SELECT q.delivery_id, q.delivery_created_at, q.endpoint_id, q.platform_id, q.due_at, q.seq, q.lease_token, q.leased_at
    FROM delivery_queue q
    WHERE q.platform_id = e.platform_id AND q.due_at <= :now AND NOT (q.endpoint_id = ANY(:exclude_endpoints::text[]))
      -- Per-object ordering: a row of an ordered endpoint waits while an earlier row of the same
      -- endpoint and object is still queued (retrying, or in flight). Rows of other endpoints
      -- have no order_key and skip the probe.
      AND (q.order_key IS NULL OR NOT EXISTS (
        SELECT 1 FROM delivery_queue o
        WHERE o.endpoint_id = q.endpoint_id AND o.order_key = q.order_key AND o.seq < q.seq
      ))
    ORDER BY q.due_at, q.seq
    LIMIT (SELECT k FROM budget)
    FOR UPDATE SKIP LOCKED
  ) c
), ranked AS (
  SELECT c.delivery_id, c.delivery_created_at, c.due_at, c.seq, c.lease_token AS prev_token, c.leased_at AS prev_leased_at,
         row_number() OVER (PARTITION BY c.endpoint_id ORDER BY c.due_at, c.seq) AS endpoint_rank,
         row_number() OVER (PARTITION BY c.platform_id ORDER BY c.due_at, c.seq) AS platform_rank,
         c.endpoint_id IN (
           SELECT w.id FROM webhook_endpoints w WHERE w.throttled_at IS NOT NULL AND w.status = 'enabled' AND w.deleted_at IS NULL
         ) AS throttled
  FROM candidates c
), picked AS (
  SELECT delivery_id, delivery_created_at, prev_token, prev_leased_at FROM ranked
  WHERE endpoint_rank <= CASE WHEN throttled THEN 1 ELSE :per_endpoint END AND platform_rank <= :per_platform
  ORDER BY platform_rank, due_at, seq
  LIMIT :limit
), claimed AS (
  -- The array bounds the queue side of the join to the picked rows in any plan. On the key
  -- alone, with statistics from a VACUUM of a nearly empty queue, PostgreSQL scanned the whole
  -- queue as the outer side of a nested loop and re-ran \`picked\` for each row (record.ts has
  -- the story; test/integration/queue-plan.postgres.test.ts the state).
  UPDATE delivery_queue q
  SET due_at = :lease_until, lease_token = :token, leased_at = :now
  FROM picked
  WHERE q.delivery_id = ANY (ARRAY(SELECT delivery_id FROM picked)) AND q.delivery_id = picked.delivery_id
  RETURNING q.delivery_id AS id, q.delivery_created_at AS created_at, q.event_id, q.endpoint_id, q.platform_id,
            picked.prev_token, picked.prev_leased_at
), bumped AS (
  -- Takeovers only: the interrupted attempt counts in attempt_count, and an automatic one in
  -- the automatic budget too (a normal claim writes nothing outside the queue).
  UPDATE webhook_deliveries d
  SET attempt_count = d.attempt_count + 1,
      automatic_attempts = d.automatic_attempts + CASE WHEN c.prev_token LIKE 'replay:%' THEN 0 ELSE 1 END
  FROM claimed c
  WHERE c.prev_token IS NOT NULL AND d.id = c.id AND d.created_at = c.created_at
  RETURNING d.id, d.created_at, d.attempt_count, d.automatic_attempts, c.prev_token, c.prev_leased_at
), interrupted AS (
  ${interruptedAttemptsSql('bumped', ':now')}
)
-- Only what an attempt uses: every column is parsed (timestamps into Dates) and kept while the
-- row waits, once per delivery.
SELECT c.id, c.event_id, c.endpoint_id, c.platform_id,
       coalesce(b.attempt_count, d.attempt_count) AS attempt_count,
       coalesce(b.automatic_attempts, d.automatic_attempts) AS automatic_attempts,
       c.prev_token IS NOT NULL AS interrupted,
       CASE WHEN c.prev_token NOT LIKE 'replay:%' THEN coalesce(c.prev_leased_at, :now) END AS interrupted_automatic_at,
       ${SENDABLE_COLUMNS},
       w.status AS endpoint_status, w.deleted_at IS NOT NULL AS endpoint_deleted,
       w.throttled_at IS NOT NULL AS endpoint_throttled, w.max_requests_per_second AS endpoint_rate,
       CASE WHEN w.paused_until > :now THEN w.paused_until END AS endpoint_paused_until
FROM claimed c
JOIN webhook_deliveries d ON d.id = c.id AND d.created_at = c.created_at
LEFT JOIN bumped b ON b.id = c.id
${sendableJoins('c')}`,
);

export async function claimDue(
  database: Database,
  options: {
    now: Date;
    leaseUntil: Date;
    limit: number;
    perEndpoint: number;
    perPlatform: number;
    excludeEndpoints: string[];
    excludePlatforms: string[];
    token: string;
  },
): Promise<ClaimedDelivery[]> {
  return runAlone(database, CLAIM, {
    now: options.now,
    exclude_endpoints: options.excludeEndpoints,
    scan: options.limit * 4, // scan a little further than we take, so per-endpoint caps don't starve the batch
    per_endpoint: options.perEndpoint,
    limit: options.limit,
    lease_until: options.leaseUntil,
    token: options.token,
    exclude_platforms: options.excludePlatforms,
    per_platform: options.perPlatform,
  });
}

/** The claim's parameters (`CLAIM`). */
export interface ClaimParams {
  now: Date;
  /** Endpoints whose rows are not taken (their slots are full here). */
  exclude_endpoints: string[];
  /** Candidates read: a little more than `limit`, so per-endpoint caps don't starve the batch. */
  scan: number;
  per_endpoint: number;
  limit: number;
  lease_until: Date;
  token: string;
  /** Platforms whose rows are not taken (their share is full here). */
  exclude_platforms: string[];
  per_platform: number;
}

const RELEASE = statement<{ due_at: Date; ids: string[]; token: string }, never>(
  'release_claims',
  'UPDATE delivery_queue SET due_at = :due_at, lease_token = NULL, leased_at = NULL WHERE delivery_id = ANY(:ids::text[]) AND lease_token = :token',
);

/** Gives claimed rows back without attempting them: a draining worker hands unstarted rows back as due at `dueAt`. */
export async function releaseClaims(database: Database, options: { ids: string[]; token: string; dueAt: Date }): Promise<void> {
  if (options.ids.length === 0) return;
  await runAlone(database, RELEASE, { due_at: options.dueAt, ids: options.ids, token: options.token });
}

const CANCEL = statement<{ ids: string[]; token: string; now: Date }, never>(
  'cancel_claims',
  `WITH q AS (
     DELETE FROM delivery_queue WHERE delivery_id = ANY(:ids::text[]) AND lease_token = :token
     RETURNING delivery_id, delivery_created_at
   )
   UPDATE webhook_deliveries d SET state = 'cancelled', cancel_reason = 'endpoint_deleted', next_attempt_at = NULL, updated_at = :now
   FROM q WHERE d.id = q.delivery_id AND d.created_at = q.delivery_created_at AND d.state IN ('pending', 'failed_retrying')`,
);

/**
 * Ends claimed rows whose endpoint was deleted: `cancelled` (terminal) with the reason, no
 * schedule, out of the queue. Rows in flight when the endpoint was deleted reach this on their
 * next claim.
 */
export async function cancelClaims(database: Database, options: { ids: string[]; token: string; now: Date }): Promise<void> {
  if (options.ids.length === 0) return;
  await runAlone(database, CANCEL, options);
}

/**
 * Records the schedule's step for claimed rows that are not attempted now (schedule.ts
 * `beforeAutomaticAttempt`): `exhausted` leaves the queue; a retry still ahead goes back to the
 * queue, unleased, due then. No attempt is logged: nothing was sent. Rows whose lease the caller
 * no longer holds are left alone, as in record.ts.
 * Next attempt times are in ms since the epoch, NULL when finished.
 */
const RESCHEDULE = statement<
  { ids: string[]; states: DeliveryState[]; next_attempt_ms: (number | null)[]; token: string; now: Date },
  never
>(
  'reschedule_claims',
  `
WITH v AS (
  SELECT id, state, to_timestamp(next_attempt_ms / 1000) AS next_attempt_at
  FROM unnest(:ids::text[], :states::text[], :next_attempt_ms::float8[]) AS v(id, state, next_attempt_ms)
), held AS (
  SELECT v.id, v.state, v.next_attempt_at, q.delivery_created_at
  FROM v CROSS JOIN LATERAL (
    SELECT q.delivery_created_at FROM delivery_queue q
    WHERE q.delivery_id = v.id AND q.lease_token = :token
    LIMIT 1
    FOR UPDATE
  ) q
), finished AS (
  DELETE FROM delivery_queue q
  WHERE q.delivery_id = ANY (ARRAY(SELECT id FROM held WHERE next_attempt_at IS NULL))
), retried AS (
  UPDATE delivery_queue q
  SET due_at = h.next_attempt_at, lease_token = NULL, leased_at = NULL
  FROM held h
  WHERE q.delivery_id = ANY (ARRAY(SELECT id FROM held WHERE next_attempt_at IS NOT NULL)) AND q.delivery_id = h.id
)
UPDATE webhook_deliveries d
SET state = h.state, next_attempt_at = h.next_attempt_at, updated_at = :now
FROM held h
WHERE d.id = h.id AND d.created_at = h.delivery_created_at`,
);

export async function rescheduleClaims(
  database: Database,
  options: { steps: { id: string; state: DeliveryState; nextAttemptAt: Date | null }[]; token: string; now: Date },
): Promise<void> {
  if (options.steps.length === 0) return;
  const { steps } = options;
  await runAlone(database, RESCHEDULE, {
    ids: steps.map((s) => s.id),
    states: steps.map((s) => s.state),
    next_attempt_ms: steps.map((s) => (s.nextAttemptAt === null ? null : s.nextAttemptAt.getTime())),
    token: options.token,
    now: options.now,
  });
}

import type { Database } from '../db/client.ts';
import type { DeliveryState, EndpointStatus } from '../db/schema.ts';
import { THROTTLE_AFTER_TIMEOUTS } from './fairness.ts';

/** A claimed delivery with everything needed to attempt it, from one statement. */
export interface ClaimedDelivery {
  id: string;
  event_id: string;
  endpoint_id: string;
  platform_id: string;
  state: DeliveryState;
  attempt_count: number;
  automatic_attempts: number;
  next_attempt_at: Date | null;
  /** The delivery's (and its event's) creation time: the partition key (migration 0007). */
  created_at: Date;
  body: string;
  url: string;
  secret_ciphertext: string;
  endpoint_status: EndpointStatus;
  endpoint_deleted_at: Date | null;
  /** The endpoint is throttled to one attempt at a time (fairness.ts). */
  endpoint_throttled: boolean;
}

/**
 * Claims up to `limit` due deliveries for one worker, in one statement (see fairness.ts for
 * the sharing rules it applies).
 *
 * - `platforms` lists the Platforms that have any scheduled row, by a skip scan of the
 *   partial index on (platform_id, due_at): one index probe per Platform, however many rows
 *   each has. A single scan in due order would read through a noisy tenant's whole backlog of
 *   due rows (which it may not take: its share is full) before reaching anyone else's.
 * - `eligible` keeps those with a row due now that this worker may serve (not holding their
 *   share), oldest first, at most `limit` of them; each one's oldest row is one more probe.
 * - `candidates` takes, per eligible Platform, its `k` oldest due rows (k spreads the
 *   candidate budget over them, at least one endpoint's cap, at most the Platform's share),
 *   locking them with SKIP LOCKED so concurrent workers never block on, or take, the same rows.
 *   Endpoints this worker already holds at their cap are left out.
 * - `ranked` numbers each candidate within its endpoint and within its Platform, and reads the
 *   endpoint's throttle (a throttled endpoint gets one row per claim).
 * - `picked` keeps at most the endpoint's cap per endpoint and the Platform's share per
 *   Platform, ordered by the Platform rank first: round robin between Platforms, oldest first
 *   within each.
 * - `claimed` leases them: `due_at` moves to the lease expiry and `lease_token` is set. A
 *   worker that dies leaves rows that become due again when the lease runs out; a worker that
 *   records a result must still hold the token (see record.ts). Rows are matched on
 *   (id, created_at), the partition key, so each update probes only its row's week.
 * - The final SELECT joins the stored event body and the endpoint (URL, encrypted secret,
 *   status) so sending needs no further query. The event is joined on its partition key too
 *   (a delivery's `created_at` is its event's), so only the event's week is probed.
 */
const CLAIM_SQL = `
WITH RECURSIVE platforms AS (
  (SELECT platform_id FROM webhook_deliveries WHERE due_at IS NOT NULL ORDER BY platform_id LIMIT 1)
  UNION ALL
  SELECT (SELECT d.platform_id FROM webhook_deliveries d
          WHERE d.due_at IS NOT NULL AND d.platform_id > p.platform_id
          ORDER BY d.platform_id LIMIT 1)
  FROM platforms p WHERE p.platform_id IS NOT NULL
), eligible AS (
  SELECT p.platform_id, o.oldest
  FROM platforms p CROSS JOIN LATERAL (
    SELECT d.due_at AS oldest FROM webhook_deliveries d
    WHERE d.platform_id = p.platform_id AND d.due_at IS NOT NULL
    ORDER BY d.due_at LIMIT 1
  ) o
  WHERE p.platform_id IS NOT NULL AND NOT (p.platform_id = ANY($8::text[])) AND o.oldest <= $1
  ORDER BY o.oldest
  LIMIT $5
), budget AS (
  SELECT least($10::int, greatest($4::int, ceil($3::float8 / greatest(1, count(*)))::int)) AS k FROM eligible
), candidates AS (
  SELECT c.id, c.endpoint_id, c.platform_id, c.due_at, c.created_at
  FROM eligible e CROSS JOIN LATERAL (
    SELECT d.id, d.endpoint_id, d.platform_id, d.due_at, d.created_at
    FROM webhook_deliveries d
    WHERE d.platform_id = e.platform_id AND d.due_at <= $1 AND NOT (d.endpoint_id = ANY($2::text[]))
    ORDER BY d.due_at
    LIMIT (SELECT k FROM budget)
    FOR UPDATE SKIP LOCKED
  ) c
), ranked AS (
  SELECT c.id, c.due_at, c.created_at,
         row_number() OVER (PARTITION BY c.endpoint_id ORDER BY c.due_at) AS endpoint_rank,
         row_number() OVER (PARTITION BY c.platform_id ORDER BY c.due_at) AS platform_rank,
         w.consecutive_timeouts >= $9 AS throttled
  FROM candidates c JOIN webhook_endpoints w ON w.id = c.endpoint_id
), picked AS (
  SELECT id, created_at FROM ranked
  WHERE endpoint_rank <= CASE WHEN throttled THEN 1 ELSE $4 END AND platform_rank <= $10
  ORDER BY platform_rank, due_at
  LIMIT $5
), claimed AS (
  UPDATE webhook_deliveries d
  SET due_at = $6, lease_token = $7
  FROM picked
  WHERE d.id = picked.id AND d.created_at = picked.created_at
  RETURNING d.id, d.event_id, d.endpoint_id, d.platform_id, d.state, d.attempt_count, d.automatic_attempts, d.next_attempt_at, d.created_at
)
SELECT c.*, e.body, w.url, w.secret_ciphertext, w.status AS endpoint_status, w.deleted_at AS endpoint_deleted_at,
       w.consecutive_timeouts >= $9 AS endpoint_throttled
FROM claimed c
JOIN events e ON e.id = c.event_id AND e.created_at = c.created_at
JOIN webhook_endpoints w ON w.id = c.endpoint_id`;

export async function claimDue(
  database: Database,
  options: { now: Date; leaseUntil: Date; limit: number; perEndpoint: number; perPlatform: number; excludeEndpoints: string[]; excludePlatforms: string[]; token: string },
): Promise<ClaimedDelivery[]> {
  const rows = await database.query<ClaimedDelivery>(CLAIM_SQL, [
    options.now,
    options.excludeEndpoints,
    options.limit * 4, // scan a little further than we take, so per-endpoint caps don't starve the batch
    options.perEndpoint,
    options.limit,
    options.leaseUntil,
    options.token,
    options.excludePlatforms,
    THROTTLE_AFTER_TIMEOUTS,
    options.perPlatform,
  ], 'claim_due');
  return rows.map(normalise);
}

/** PGlite and node-postgres agree on types here except that counts may arrive as strings. */
function normalise(r: ClaimedDelivery): ClaimedDelivery {
  return {
    ...r,
    attempt_count: Number(r.attempt_count),
    automatic_attempts: Number(r.automatic_attempts),
    next_attempt_at: r.next_attempt_at ? new Date(r.next_attempt_at) : null,
    created_at: new Date(r.created_at),
    endpoint_deleted_at: r.endpoint_deleted_at ? new Date(r.endpoint_deleted_at) : null,
    endpoint_throttled: r.endpoint_throttled === true || (r.endpoint_throttled as unknown) === 't',
  };
}

/**
 * Gives claimed rows back without attempting them. `parkIds`: the endpoint is disabled or
 * deleted, so the rows wait with no due time until it is enabled again. `releaseIds`: a
 * draining worker hands unstarted rows back as due now.
 */
export async function releaseClaims(database: Database, options: { ids: string[]; token: string; dueAt: Date | null }): Promise<void> {
  if (options.ids.length === 0) return;
  await database.query(
    `UPDATE webhook_deliveries SET due_at = $1, lease_token = NULL WHERE id = ANY($2::text[]) AND lease_token = $3`,
    [options.dueAt, options.ids, options.token],
    'release_claims',
  );
}

import type { Database } from '../db/client.ts';
import type { DeliveryState, EndpointStatus } from '../db/schema.ts';

/** A claimed delivery with everything needed to attempt it, from one statement. */
export interface ClaimedDelivery {
  id: string;
  event_id: string;
  endpoint_id: string;
  state: DeliveryState;
  attempt_count: number;
  automatic_attempts: number;
  next_attempt_at: Date | null;
  body: string;
  url: string;
  secret_ciphertext: string;
  endpoint_status: EndpointStatus;
  endpoint_deleted_at: Date | null;
}

/**
 * Claims up to `limit` due deliveries for one worker, in one statement.
 *
 * - `candidates` takes due rows in due order from the partial index on `due_at`, locking them
 *   with SKIP LOCKED so concurrent workers never block on, or take, the same rows.
 * - `picked` keeps at most `perEndpoint` rows of any one endpoint, so a backlog for one slow
 *   or dead endpoint can't fill a batch (isolation); endpoints this worker already has at its
 *   cap are excluded up front.
 * - `claimed` leases them: `due_at` moves to the lease expiry and `lease_token` is set. A
 *   worker that dies leaves rows that become due again when the lease runs out; a worker that
 *   records a result must still hold the token (see record.ts).
 * - The final SELECT joins the stored event body and the endpoint (URL, encrypted secret,
 *   status) so sending needs no further query.
 */
const CLAIM_SQL = `
WITH candidates AS (
  SELECT id, endpoint_id, due_at
  FROM webhook_deliveries
  WHERE due_at <= $1 AND NOT (endpoint_id = ANY($2::text[]))
  ORDER BY due_at
  LIMIT $3
  FOR UPDATE SKIP LOCKED
), picked AS (
  SELECT id FROM (
    SELECT id, due_at, row_number() OVER (PARTITION BY endpoint_id ORDER BY due_at) AS rn
    FROM candidates
  ) ranked
  WHERE rn <= $4
  ORDER BY due_at
  LIMIT $5
), claimed AS (
  UPDATE webhook_deliveries d
  SET due_at = $6, lease_token = $7
  FROM picked
  WHERE d.id = picked.id
  RETURNING d.id, d.event_id, d.endpoint_id, d.state, d.attempt_count, d.automatic_attempts, d.next_attempt_at
)
SELECT c.*, e.body, w.url, w.secret_ciphertext, w.status AS endpoint_status, w.deleted_at AS endpoint_deleted_at
FROM claimed c
JOIN events e ON e.id = c.event_id
JOIN webhook_endpoints w ON w.id = c.endpoint_id`;

export async function claimDue(
  database: Database,
  options: { now: Date; leaseUntil: Date; limit: number; perEndpoint: number; excludeEndpoints: string[]; token: string },
): Promise<ClaimedDelivery[]> {
  const rows = await database.query<ClaimedDelivery>(CLAIM_SQL, [
    options.now,
    options.excludeEndpoints,
    options.limit * 4, // scan a little further than we take, so per-endpoint caps don't starve the batch
    options.perEndpoint,
    options.limit,
    options.leaseUntil,
    options.token,
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
    endpoint_deleted_at: r.endpoint_deleted_at ? new Date(r.endpoint_deleted_at) : null,
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

import type { Database } from '../db/client.ts';

/**
 * An endpoint's attempts since its run of failures began (`since`: its `failing_since`), through
 * its deliveries created within the retry schedule before it (older ones can only add manual
 * replays: undercounting them never acts early). `interrupted` attempts have no known outcome
 * and don't count. Auto-disable and the health sweep (health-sweep.ts) both judge by it.
 */
export async function failureRunCounts(
  database: Database,
  endpointId: string,
  since: Date,
  scheduleMs: number,
): Promise<{ failed: number; succeeded: number }> {
  const [count] = await database.query<{ failed: number; succeeded: number }>(
    `SELECT count(*) FILTER (WHERE NOT a.succeeded AND a.error_kind IS DISTINCT FROM 'interrupted')::int AS failed,
            count(*) FILTER (WHERE a.succeeded)::int AS succeeded
     FROM webhook_deliveries d JOIN delivery_attempts a ON a.delivery_id = d.id AND a.delivery_created_at = d.created_at
     WHERE d.endpoint_id = $1 AND d.created_at >= $2 AND a.started_at >= $3`,
    [endpointId, new Date(since.getTime() - scheduleMs), since],
    'failure_run_count',
  );
  return { failed: Number(count?.failed ?? 0), succeeded: Number(count?.succeeded ?? 0) };
}

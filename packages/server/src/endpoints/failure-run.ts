import type { Database } from '../db/client.ts';
import { runAlone, statement } from '../db/statement.ts';

const FAILURE_RUN = statement<{ endpoint_id: string; created_from: Date; since: Date }, { failed: number; succeeded: number }>(
  'failure_run_count',
  `SELECT count(*) FILTER (WHERE NOT a.succeeded AND a.error_kind IS DISTINCT FROM 'interrupted')::int AS failed,
          count(*) FILTER (WHERE a.succeeded)::int AS succeeded
   FROM webhook_deliveries d JOIN delivery_attempts a ON a.delivery_id = d.id AND a.delivery_created_at = d.created_at
   WHERE d.endpoint_id = :endpoint_id AND d.created_at >= :created_from AND a.started_at >= :since`,
);

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
  const [count] = await runAlone(database, FAILURE_RUN, {
    endpoint_id: endpointId,
    created_from: new Date(since.getTime() - scheduleMs),
    since,
  });
  return { failed: count?.failed ?? 0, succeeded: count?.succeeded ?? 0 };
}

import type { Database } from '../db/client.ts';
import type { Scope } from '../scope.ts';

/** Attempts of the last 24 hours for one endpoint, overall and per hour (oldest hour first). */
export interface EndpointStats {
  attempts: number;
  succeeded: number;
  /** succeeded / attempts, or null with no attempts. */
  success_rate: number | null;
  /** 24 buckets of one hour each, index 23 = the last hour. */
  hourly: Array<{ attempts: number; succeeded: number }>;
}

/**
 * Counts attempts (automatic and manual) by endpoint and hour over the last 24 h. Scoped by the
 * deliveries' Platform and environment like every other read. The join reaches attempts through
 * their delivery's index; a portal page asks for at most one page of endpoints at a time.
 */
const STATS_SQL = `
SELECT d.endpoint_id,
       LEAST(23, GREATEST(0, 23 - floor(extract(epoch FROM ($4::timestamptz - a.started_at)) / 3600)))::int AS bucket,
       count(*)::int AS attempts,
       (count(*) FILTER (WHERE a.succeeded))::int AS succeeded
FROM webhook_deliveries d
JOIN delivery_attempts a ON a.delivery_id = d.id AND a.delivery_created_at = d.created_at
WHERE d.platform_id = $1 AND d.environment = $2 AND d.endpoint_id = ANY($3::text[])
  AND a.started_at > $4::timestamptz - interval '24 hours'
  AND (d.last_attempt_at IS NULL OR d.last_attempt_at > $4::timestamptz - interval '24 hours')
GROUP BY 1, 2`;

export async function endpointStats(
  database: Database,
  scope: Scope,
  endpointIds: string[],
  now: Date,
): Promise<Map<string, EndpointStats>> {
  const out = new Map<string, EndpointStats>();
  for (const id of endpointIds)
    out.set(id, {
      attempts: 0,
      succeeded: 0,
      success_rate: null,
      hourly: Array.from({ length: 24 }, () => ({ attempts: 0, succeeded: 0 })),
    });
  if (endpointIds.length === 0) return out;
  const rows = await database.query<{ endpoint_id: string; bucket: number; attempts: number; succeeded: number }>(STATS_SQL, [
    scope.platformId,
    scope.environment,
    endpointIds,
    now,
  ]);
  for (const r of rows) {
    const s = out.get(r.endpoint_id)!;
    const b = s.hourly[Number(r.bucket)]!;
    b.attempts += Number(r.attempts);
    b.succeeded += Number(r.succeeded);
    s.attempts += Number(r.attempts);
    s.succeeded += Number(r.succeeded);
  }
  for (const s of out.values()) s.success_rate = s.attempts === 0 ? null : s.succeeded / s.attempts;
  return out;
}

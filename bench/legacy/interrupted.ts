/** main's statement before migration 0007 (the "before" side of bench/retention.ts); kept as it was there. */
/**
 * The log entry for an attempt whose holder stopped before recording it (spec 2.4: the log
 * shows every attempt that may have reached the receiver). Used where a lease is taken over,
 * in the claim statement (claim.ts) and in a manual replay's lease (service.ts), as a CTE over
 * `source`: rows with `id`, the new `attempt_count`, and the old lease's `prev_token` and
 * `prev_leased_at` (NULL `prev_token`: no takeover, nothing inserted).
 *
 * - No status code or body: nothing is known of the answer.
 * - `worker_id`: the worker id from the lease token (`w_…:<seq>`), or `replay` for a manual
 *   attempt whose API process stopped.
 * - `started_at`: when that lease was taken. The send began then or up to one attempt deadline
 *   later (a claimed row may wait for its endpoint's slot), so the time is an upper bound on
 *   how early it can have been sent. `duration_ms` 0: unknown.
 * - The id is derived from the delivery and the old token, so a takeover logs it once.
 */
export const INTERRUPTED_MESSAGE =
  'The worker holding this attempt stopped before recording its outcome (its lease ran out): the receiver may or may not have received it.';

export function interruptedAttemptsSql(source: string, nowParam: string): string {
  return `INSERT INTO delivery_attempts (id, delivery_id, attempt_number, trigger, succeeded, started_at, duration_ms,
                                 status_code, response_body, error_kind, error_message, worker_id)
  SELECT 'wha_' || md5(s.id || s.prev_token), s.id, s.attempt_count,
         CASE WHEN s.prev_token LIKE 'replay:%' THEN 'manual' ELSE 'automatic' END,
         false, coalesce(s.prev_leased_at, ${nowParam}), 0, NULL, NULL, 'interrupted',
         '${INTERRUPTED_MESSAGE}',
         split_part(s.prev_token, ':', 1)
  FROM ${source} s WHERE s.prev_token IS NOT NULL
  ON CONFLICT DO NOTHING
  RETURNING delivery_id`;
}

/** How long an `Idempotency-Key` response is kept and replayed (then purged by db/retention.ts). */
export const IDEMPOTENCY_WINDOW_MS = 24 * 3_600_000;

/**
 * A receiver's `Retry-After` on a 429 or 503 answer (RFC 9110 10.2.3), as the pause it asks for.
 *
 * Longest pause one answer can ask for. A receiver asking for a day would otherwise stop its
 * deliveries for a day while the schedule, which the pause never shortens, keeps its own pace;
 * an hour is Svix's and GitHub's order of magnitude for rate-limit resets, and a receiver still
 * overloaded after it answers again and pauses once more.
 */
export const RETRY_AFTER_MAX_MS = 3_600_000;

/** The statuses whose Retry-After pauses the endpoint: too many requests, and unavailable. */
export const PAUSING_STATUSES: ReadonlySet<number> = new Set([429, 503]);

const DELTA_SECONDS = /^\d{1,10}$/;
/** IMF-fixdate, the form senders must use: `Sun, 06 Nov 1994 08:49:37 GMT`. */
const IMF_FIXDATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/**
 * Milliseconds to pause from `nowMs`, at most RETRY_AFTER_MAX_MS; null for no pause: absent,
 * garbage (anything but whole seconds or an IMF-fixdate), zero, or a date not in the future.
 * The obsolete RFC 850 and asctime date forms are garbage here: no current server sends them.
 */
export function retryAfterMs(value: string | null | undefined, nowMs: number): number | null {
  if (!value) return null;
  const v = value.trim();
  let ms: number;
  if (DELTA_SECONDS.test(v)) ms = Number(v) * 1000;
  else if (IMF_FIXDATE.test(v)) {
    const at = Date.parse(v);
    if (Number.isNaN(at)) return null;
    ms = at - nowMs;
  } else return null;
  if (!(ms > 0)) return null;
  return Math.min(ms, RETRY_AFTER_MAX_MS);
}

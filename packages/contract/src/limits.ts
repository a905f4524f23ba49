/** The spec's numbers (spec 8), kept once. Every other package reads them from here. */

/** A receiver must answer with a 2xx within this many milliseconds (spec 3.2, 4.2, 8). */
export const ACK_DEADLINE_MS = 10_000;

/** Maximum |now - t| for a signature timestamp, in seconds (spec 5.1.6, 8). */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

/** Total delivery attempts: the initial one plus 7 retries (spec 8). */
export const MAX_ATTEMPTS = 8;

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/**
 * Delay before retry n+1 after failed attempt n (n = 1..7), in milliseconds (spec 8):
 * 1 min, 5 min, 30 min, 2 h, 12 h, 24 h, 24 h.
 */
export const RETRY_DELAYS_MS: readonly number[] = Object.freeze([
  1 * MINUTE,
  5 * MINUTE,
  30 * MINUTE,
  2 * HOUR,
  12 * HOUR,
  24 * HOUR,
  24 * HOUR,
]);

/** A receiver keeps seen event ids at least this long (spec 6.2.1, 8). */
export const DEDUP_RETENTION_DAYS = 30;
export const DEDUP_RETENTION_MS = DEDUP_RETENTION_DAYS * 24 * HOUR;

/** The version label carried by every event (spec 9). */
export const API_VERSION = 'v1';

/**
 * The largest event payhooks publishes: its envelope (spec 2.1) as sent, in UTF-8 bytes. The
 * contract leaves the maximum body size open; this is the bound a receiver can size its body
 * limit for, the same however the event was published (one request, a batch, in process).
 */
export const EVENT_MAX_BYTES = 256 * 1024;

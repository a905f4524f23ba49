/**
 * Why a delivery failed verification. Each one is answered with HTTP 400 and the event is not
 * processed (spec 5.1.7, section 7).
 *
 * - `missing_header`: `Service-Signature` or `Service-Event-Id` is absent or empty (spec 4.2).
 * - `malformed_header`: `Service-Signature` is not `t=<unix seconds>,v1=<64 lowercase hex>[,v1=…]`.
 * - `bad_signature`: no `v1` matches the HMAC of `<t>.<raw body>` under any configured secret.
 * - `timestamp_out_of_tolerance`: |now - t| is more than the tolerance (300 s, spec 5.1.6).
 * - `event_id_mismatch`: `Service-Event-Id` (not covered by the signature) differs from the signed
 *   body's `id`.
 * - `invalid_json`: the signed body is not UTF-8 JSON describing an event object.
 */
export type WebhookVerificationReason =
  | 'missing_header'
  | 'malformed_header'
  | 'bad_signature'
  | 'timestamp_out_of_tolerance'
  | 'event_id_mismatch'
  | 'invalid_json';

export const VERIFICATION_REASONS: readonly WebhookVerificationReason[] = Object.freeze([
  'missing_header',
  'malformed_header',
  'bad_signature',
  'timestamp_out_of_tolerance',
  'event_id_mismatch',
  'invalid_json',
]);

// A registered symbol, so `instanceof` holds across the ESM and CJS builds and the two entry points
// (each bundle has its own copy of the class).
const BRAND = Symbol.for('payhooks.receiver.WebhookVerificationError');

/** A delivery that must be rejected with HTTP 400. `reason` says why. */
export class WebhookVerificationError extends Error {
  readonly reason: WebhookVerificationReason;
  /** The HTTP status to answer with (spec 5.1.7). */
  readonly status = 400 as const;

  constructor(reason: WebhookVerificationReason, message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
    this.reason = reason;
    Object.defineProperty(this, BRAND, { value: true });
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }
}

export function isWebhookVerificationError(value: unknown): value is WebhookVerificationError {
  return value instanceof WebhookVerificationError;
}

/**
 * `creditOnce` found another caller crediting the same payment and it did not finish in time.
 * Nothing was credited by this call; retry later (the webhook queue does).
 */
export class CreditInProgressError extends Error {
  readonly paymentId: string;
  constructor(paymentId: string) {
    super(`payhooks: a credit for payment ${paymentId} is in progress elsewhere; nothing was credited by this call, retry later`);
    this.name = 'CreditInProgressError';
    this.paymentId = paymentId;
  }
}

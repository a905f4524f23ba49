/**
 * Verification with node:crypto (synchronous). Uses the contract's signature code, the very code
 * the sender signs with, so the two cannot drift apart.
 */
import { computeSignature, signaturesEqual, type WebhookEvent } from '@payhooks/contract';
import { WebhookVerificationError } from './errors.ts';
import {
  checkTimestamp,
  normaliseSecrets,
  normaliseTolerance,
  nowMs,
  parseVerifiedEvent,
  readSignedRequest,
  type Verifier,
  type VerifyWebhookOptions,
} from './verify-core.ts';
import type { HeadersInput } from './input.ts';

function verifyWith(secrets: readonly string[], tolerance: number, body: unknown, headers: HeadersInput, now: number): WebhookEvent {
  // Spec 5.1.6, in order: read the header and split out t and v1 ...
  const signed = readSignedRequest(body, headers);
  const { timestamp, signatures } = signed.header;
  // ... compute the expected value over the raw bytes, before any parsing (5.1.3, 5.1.4) ...
  let matched = false;
  for (const secret of secrets) {
    const expected = computeSignature(secret, timestamp, signed.bytes);
    for (const received of signatures) {
      // ... compare in constant time (5.1.5), every pair, so timing does not tell which matched.
      if (signaturesEqual(expected, received)) matched = true;
    }
  }
  if (!matched) {
    throw new WebhookVerificationError('bad_signature', 'no v1 signature matches the raw body under the configured secret(s)');
  }
  // ... and reject when |now - t| > tolerance, in either direction.
  checkTimestamp(timestamp, now, tolerance);
  return parseVerifiedEvent(signed.bytes, signed.eventIdHeader);
}

/**
 * Verifies a delivery (spec 5.1) and returns the parsed event. Throws a
 * {@link WebhookVerificationError} whose `reason` says why a delivery must be rejected with 400,
 * or a TypeError for a programming error (no secret, a body that was already parsed).
 */
export function verifyWebhook(options: VerifyWebhookOptions): WebhookEvent {
  const secrets = normaliseSecrets(options.secret);
  const tolerance = normaliseTolerance(options.toleranceSeconds);
  return verifyWith(secrets, tolerance, options.body, options.headers, nowMs(options.now));
}

export function nodeVerifier(secret: string | readonly string[], toleranceSeconds?: number): Verifier {
  const secrets = normaliseSecrets(secret);
  const tolerance = normaliseTolerance(toleranceSeconds);
  return async (request, now) => verifyWith(secrets, tolerance, request.body, request.headers, nowMs(now));
}

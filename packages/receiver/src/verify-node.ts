/**
 * Verification with node:crypto (synchronous). Uses the contract's signature code, the very code
 * the sender signs with, so the two cannot drift apart.
 */
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { computeSignature, signaturesEqual, type WebhookEvent } from '@payhooks/contract';
import { WebhookVerificationError } from './errors.ts';
import {
  NO_MATCH_MESSAGE,
  checkTimestamp,
  decodeAsymmetricSignature,
  normaliseCredentials,
  signedPayload,
  type Credentials,
  normaliseTolerance,
  nowMs,
  parseVerifiedEvent,
  readSignedRequest,
  type Verifier,
  type VerifyWebhookOptions,
} from './verify-core.ts';
import type { HeadersInput } from './input.ts';

interface NodeKeys {
  secrets: readonly string[];
  publicKeys: readonly KeyObject[];
}

function nodeKeys(credentials: Credentials): NodeKeys {
  const publicKeys = credentials.publicKeys.map((raw) =>
    createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(raw).toString('base64url') }, format: 'jwk' }),
  );
  return { secrets: credentials.secrets, publicKeys };
}

function verifyWith({ secrets, publicKeys }: NodeKeys, tolerance: number, body: unknown, headers: HeadersInput, now: number): WebhookEvent {
  // Spec 5.1.6, in order: read the header and split out t, v1 and v1a ...
  const signed = readSignedRequest(body, headers);
  const { timestamp, signatures, asymmetricSignatures } = signed.header;
  // ... compute the expected value over the raw bytes, before any parsing (5.1.3, 5.1.4) ...
  let matched = false;
  for (const secret of secrets) {
    const expected = computeSignature(secret, timestamp, signed.bytes);
    for (const received of signatures) {
      // ... compare in constant time (5.1.5), every pair, so timing does not tell which matched.
      if (signaturesEqual(expected, received)) matched = true;
    }
  }
  if (publicKeys.length > 0 && asymmetricSignatures.length > 0) {
    // ed25519: one valid signature of either kind is enough (as in Standard Webhooks).
    const payload = signedPayload(timestamp, signed.bytes);
    for (const key of publicKeys) {
      for (const received of asymmetricSignatures) {
        if (verify(null, payload, key, decodeAsymmetricSignature(received))) matched = true;
      }
    }
  }
  if (!matched) throw new WebhookVerificationError('bad_signature', NO_MATCH_MESSAGE);
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
  const keys = nodeKeys(normaliseCredentials(options.secret, options.publicKeys));
  const tolerance = normaliseTolerance(options.toleranceSeconds);
  return verifyWith(keys, tolerance, options.body, options.headers, nowMs(options.now));
}

export function nodeVerifier(
  secret: string | readonly string[] | undefined,
  publicKeys: string | readonly string[] | undefined,
  toleranceSeconds?: number,
): Verifier {
  const keys = nodeKeys(normaliseCredentials(secret, publicKeys));
  const tolerance = normaliseTolerance(toleranceSeconds);
  return async (request, now) => verifyWith(keys, tolerance, request.body, request.headers, nowMs(now));
}

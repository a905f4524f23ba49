import { createHmac, timingSafeEqual, type KeyObject } from 'node:crypto';
import { ASYMMETRIC_SIGNATURE_PATTERN, computeAsymmetricSignature, parsePublicKey, verifyAsymmetricSignature } from './asymmetric.ts';
import { SIGNATURE_TOLERANCE_SECONDS } from './limits.ts';
import { SIGNATURE_FORMATS, anchored } from './formats.ts';

/**
 * Signing of deliveries (spec 5.1). `v1` = hex(HMAC-SHA256(secret, `${t}.${rawBody}`)), keyed
 * with the full `whsec_…` secret string, computed over the raw bytes (5.1.3, 5.1.4).
 */
export function computeSignature(secret: string, timestamp: number, rawBody: string | Uint8Array): string {
  const hmac = createHmac('sha256', secret);
  hmac.update(`${timestamp}.`);
  hmac.update(rawBody);
  return hmac.digest('hex');
}

/** `t=<unix seconds>,v1=<lowercase hex>`, no spaces (spec 4.2). */
export function formatSignatureHeader(timestamp: number, signatures: string | readonly string[]): string {
  if (typeof signatures === 'string') return `t=${timestamp},v1=${signatures}`;
  let header = `t=${timestamp}`;
  for (const s of signatures) header += `,v1=${s}`;
  return header;
}

/** Signs a body at time `timestamp` and returns the `Service-Signature` header value. */
export function signPayload(secret: string, timestamp: number, rawBody: string | Uint8Array): string {
  return formatSignatureHeader(timestamp, computeSignature(secret, timestamp, rawBody));
}

/**
 * The header for several live secrets (rotation): one `v1=` per secret, in the order given
 * (the new secret first), so a receiver holding either verifies. With ed25519 private keys
 * (asymmetric signing on), one `v1a=` per key follows, likewise new first.
 */
export function signPayloadWithSecrets(
  secrets: readonly string[],
  timestamp: number,
  rawBody: string | Uint8Array,
  privateKeys?: readonly KeyObject[],
): string {
  // One secret but during a rotation's overlap: no array for it (a worker signs every attempt).
  const header =
    secrets.length === 1
      ? formatSignatureHeader(timestamp, computeSignature(secrets[0]!, timestamp, rawBody))
      : formatSignatureHeader(
          timestamp,
          secrets.map((s) => computeSignature(s, timestamp, rawBody)),
        );
  if (privateKeys === undefined || privateKeys.length === 0) return header;
  let withKeys = header;
  for (const key of privateKeys) withKeys += `,v1a=${computeAsymmetricSignature(key, timestamp, rawBody)}`;
  return withKeys;
}

export interface ParsedSignatureHeader {
  timestamp: number;
  /** The `v1` values: lowercase hex HMAC-SHA256. */
  signatures: string[];
  /** The `v1a` values: base64 ed25519 signatures (empty when the endpoint does not sign with a key). */
  asymmetricSignatures: string[];
}

const TIMESTAMP = anchored(SIGNATURE_FORMATS.timestamp);
const V1 = anchored(SIGNATURE_FORMATS.v1);
const SCHEME = anchored(SIGNATURE_FORMATS.scheme);

/**
 * Strict parse of `t=<int>,v1=<hex>[,v1=<hex>…][,v1a=<base64>…]`. Returns null when the header
 * is not of that exact shape: no spaces, one integer `t`, every `v1` lowercase 64-hex, every
 * `v1a` the padded base64 of 64 bytes, and at least one `v1` or `v1a`. Unknown schemes
 * (`v2=` …) are skipped so the format can grow additively.
 */
export function parseSignatureHeader(header: string): ParsedSignatureHeader | null {
  let timestamp: number | null = null;
  const signatures: string[] = [];
  const asymmetricSignatures: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq <= 0) return null;
    const key = part.slice(0, eq);
    const value = part.slice(eq + 1);
    if (key === 't') {
      if (timestamp !== null || !TIMESTAMP.test(value)) return null;
      timestamp = Number(value);
    } else if (key === 'v1') {
      if (!V1.test(value)) return null;
      signatures.push(value);
    } else if (key === 'v1a') {
      if (!ASYMMETRIC_SIGNATURE_PATTERN.test(value)) return null;
      asymmetricSignatures.push(value);
    } else if (!SCHEME.test(key)) {
      return null;
    }
  }
  if (timestamp === null || signatures.length + asymmetricSignatures.length === 0) return null;
  return { timestamp, signatures, asymmetricSignatures };
}

/** Constant-time comparison of two hex signatures (spec 5.1.5). */
export function signaturesEqual(expectedHex: string, receivedHex: string): boolean {
  const a = Buffer.from(expectedHex, 'utf8');
  const b = Buffer.from(receivedHex, 'utf8');
  // Lengths are public (always 64 for v1); timingSafeEqual needs equal lengths.
  return a.length === b.length && timingSafeEqual(a, b);
}

export type SignatureCheck =
  | { ok: true; timestamp: number }
  | { ok: false; reason: 'malformed_header' | 'bad_signature' | 'timestamp_out_of_tolerance' };

/**
 * Verification in the spec's order (5.1.6): parse the header, compute the expected value for
 * each secret, compare in constant time, then check |now - t| <= tolerance.
 *
 * With `publicKeys` (`whpk_…`), each `v1a` is verified against each key as well. One valid
 * signature of either kind suffices (as in Standard Webhooks): a receiver holding both a secret
 * and a public key accepts a delivery that only one of them verifies. Throws (a configuration
 * error, not a verification outcome) when neither secrets nor public keys are given, or a public
 * key is not a `whpk_` key.
 */
export function checkSignature(options: {
  header: string;
  rawBody: string | Uint8Array;
  secrets?: readonly string[];
  publicKeys?: readonly string[];
  nowSeconds: number;
  toleranceSeconds?: number;
}): SignatureCheck {
  const secrets = options.secrets ?? [];
  const publicKeys = (options.publicKeys ?? []).map(parsePublicKey);
  if (secrets.length === 0 && publicKeys.length === 0) throw new Error('checkSignature needs secrets or publicKeys');
  const parsed = parseSignatureHeader(options.header);
  if (!parsed) return { ok: false, reason: 'malformed_header' };
  let matched = false;
  for (const secret of secrets) {
    const expected = computeSignature(secret, parsed.timestamp, options.rawBody);
    for (const received of parsed.signatures) {
      // No early exit: every pair is compared so timing does not reveal which matched.
      if (signaturesEqual(expected, received)) matched = true;
    }
  }
  for (const key of publicKeys) {
    for (const received of parsed.asymmetricSignatures) {
      if (verifyAsymmetricSignature(key, parsed.timestamp, options.rawBody, received)) matched = true;
    }
  }
  if (!matched) return { ok: false, reason: 'bad_signature' };
  const tolerance = options.toleranceSeconds ?? SIGNATURE_TOLERANCE_SECONDS;
  if (Math.abs(options.nowSeconds - parsed.timestamp) > tolerance) {
    return { ok: false, reason: 'timestamp_out_of_tolerance' };
  }
  return { ok: true, timestamp: parsed.timestamp };
}

/**
 * Verification with WebCrypto (`crypto.subtle`) only, for edge runtimes (Cloudflare Workers, Vercel
 * Edge, Deno, Bun) and anything else without node:crypto. Asynchronous, as WebCrypto is.
 */
import type { WebhookEvent } from '@payhooks/contract';
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

const encoder = new TextEncoder();

/** The WebCrypto calls used, typed here so no DOM or Node typings are needed. */
type CryptoKey = object;
interface SubtleLike {
  importKey(
    format: 'raw',
    keyData: Uint8Array,
    algorithm: { name: 'HMAC'; hash: 'SHA-256' } | { name: 'Ed25519' },
    extractable: false,
    usages: ['verify'],
  ): Promise<CryptoKey>;
  verify(algorithm: 'HMAC' | { name: 'Ed25519' }, key: CryptoKey, signature: Uint8Array, data: Uint8Array): Promise<boolean>;
}

function subtle(): SubtleLike {
  const c = (globalThis as { crypto?: { subtle?: SubtleLike } }).crypto;
  if (!c?.subtle) throw new Error('payhooks: WebCrypto (globalThis.crypto.subtle) is not available in this runtime');
  return c.subtle;
}

function importKey(secret: string): Promise<CryptoKey> {
  return subtle().importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
}

interface WebKeys {
  secrets: readonly Promise<CryptoKey>[];
  publicKeys: readonly Promise<CryptoKey>[];
}

function importKeys(credentials: Credentials): WebKeys {
  return {
    secrets: credentials.secrets.map(importKey),
    publicKeys: credentials.publicKeys.map((raw) => subtle().importKey('raw', raw, { name: 'Ed25519' }, false, ['verify'])),
  };
}

/** The parser guarantees 64 lowercase hex characters. */
function hexToBytes(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

async function verifyWith(
  keys: WebKeys,
  tolerance: number,
  body: unknown,
  headers: Parameters<Verifier>[0]['headers'],
  now: number,
): Promise<WebhookEvent> {
  // Spec 5.1.6, in order: read the header and split out t, v1 and v1a ...
  const signed = readSignedRequest(body, headers);
  const { timestamp, signatures, asymmetricSignatures } = signed.header;
  // ... the signed payload is `<t>.` followed by the raw bytes, never re-serialised JSON (5.1.3, 5.1.4) ...
  const payload = signedPayload(timestamp, signed.bytes);
  // ... and compare: crypto.subtle.verify recomputes the HMAC and compares in constant time (5.1.5).
  // Every (secret, v1) pair is checked, so timing does not tell which one matched.
  const checks: Promise<boolean>[] = [];
  for (const key of keys.secrets) {
    for (const received of signatures) {
      checks.push(key.then((k) => subtle().verify('HMAC', k, hexToBytes(received), payload)));
    }
  }
  // ed25519: one valid signature of either kind is enough (as in Standard Webhooks).
  for (const key of keys.publicKeys) {
    for (const received of asymmetricSignatures) {
      checks.push(key.then((k) => subtle().verify({ name: 'Ed25519' }, k, decodeAsymmetricSignature(received), payload)));
    }
  }
  const results = await Promise.all(checks);
  if (!results.includes(true)) throw new WebhookVerificationError('bad_signature', NO_MATCH_MESSAGE);
  checkTimestamp(timestamp, now, tolerance);
  return parseVerifiedEvent(signed.bytes, signed.eventIdHeader);
}

/**
 * Verifies a delivery (spec 5.1) with WebCrypto and resolves to the parsed event; rejects with a
 * {@link WebhookVerificationError} (reason code) or a TypeError for a programming error.
 */
export async function verifyWebhookAsync(options: VerifyWebhookOptions): Promise<WebhookEvent> {
  const credentials = normaliseCredentials(options.secret, options.publicKeys);
  const tolerance = normaliseTolerance(options.toleranceSeconds);
  return verifyWith(importKeys(credentials), tolerance, options.body, options.headers, nowMs(options.now));
}

/** A verifier whose keys are imported once and reused for every delivery. */
export function webVerifier(
  secret: string | readonly string[] | undefined,
  publicKeys: string | readonly string[] | undefined,
  toleranceSeconds?: number,
): Verifier {
  const credentials = normaliseCredentials(secret, publicKeys);
  const tolerance = normaliseTolerance(toleranceSeconds);
  let keys: WebKeys | undefined;
  return (request, now) => {
    keys ??= importKeys(credentials);
    return verifyWith(keys, tolerance, request.body, request.headers, nowMs(now));
  };
}

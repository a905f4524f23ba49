/**
 * Verification with WebCrypto (`crypto.subtle`) only, for edge runtimes (Cloudflare Workers, Vercel
 * Edge, Deno, Bun) and anything else without node:crypto. Asynchronous, as WebCrypto is.
 */
import type { WebhookEvent } from '@payhooks/contract';
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

const encoder = new TextEncoder();

/** The two WebCrypto calls used, typed here so no DOM or Node typings are needed. */
type CryptoKey = object;
interface SubtleLike {
  importKey(
    format: 'raw',
    keyData: Uint8Array,
    algorithm: { name: 'HMAC'; hash: 'SHA-256' },
    extractable: false,
    usages: ['verify'],
  ): Promise<CryptoKey>;
  verify(algorithm: 'HMAC', key: CryptoKey, signature: Uint8Array, data: Uint8Array): Promise<boolean>;
}

function subtle(): SubtleLike {
  const c = (globalThis as { crypto?: { subtle?: SubtleLike } }).crypto;
  if (!c?.subtle) throw new Error('payhooks: WebCrypto (globalThis.crypto.subtle) is not available in this runtime');
  return c.subtle;
}

function importKey(secret: string): Promise<CryptoKey> {
  return subtle().importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
}

/** The parser guarantees 64 lowercase hex characters. */
function hexToBytes(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

async function verifyWith(
  keys: readonly Promise<CryptoKey>[],
  tolerance: number,
  body: unknown,
  headers: Parameters<Verifier>[0]['headers'],
  now: number,
): Promise<WebhookEvent> {
  // Spec 5.1.6, in order: read the header and split out t and v1 ...
  const signed = readSignedRequest(body, headers);
  const { timestamp, signatures } = signed.header;
  // ... the signed payload is `<t>.` followed by the raw bytes, never re-serialised JSON (5.1.3, 5.1.4) ...
  const prefix = encoder.encode(`${timestamp}.`);
  const payload = new Uint8Array(prefix.length + signed.bytes.length);
  payload.set(prefix, 0);
  payload.set(signed.bytes, prefix.length);
  // ... and compare: crypto.subtle.verify recomputes the HMAC and compares in constant time (5.1.5).
  // Every (secret, v1) pair is checked, so timing does not tell which one matched.
  const checks: Promise<boolean>[] = [];
  for (const key of keys) {
    for (const received of signatures) {
      checks.push(key.then((k) => subtle().verify('HMAC', k, hexToBytes(received), payload)));
    }
  }
  const results = await Promise.all(checks);
  if (!results.includes(true)) {
    throw new WebhookVerificationError('bad_signature', 'no v1 signature matches the raw body under the configured secret(s)');
  }
  checkTimestamp(timestamp, now, tolerance);
  return parseVerifiedEvent(signed.bytes, signed.eventIdHeader);
}

/**
 * Verifies a delivery (spec 5.1) with WebCrypto and resolves to the parsed event; rejects with a
 * {@link WebhookVerificationError} (reason code) or a TypeError for a programming error.
 */
export async function verifyWebhookAsync(options: VerifyWebhookOptions): Promise<WebhookEvent> {
  const secrets = normaliseSecrets(options.secret);
  const tolerance = normaliseTolerance(options.toleranceSeconds);
  return verifyWith(secrets.map(importKey), tolerance, options.body, options.headers, nowMs(options.now));
}

/** A verifier whose HMAC keys are imported once and reused for every delivery. */
export function webVerifier(secret: string | readonly string[], toleranceSeconds?: number): Verifier {
  const secrets = normaliseSecrets(secret);
  const tolerance = normaliseTolerance(toleranceSeconds);
  let keys: Promise<CryptoKey>[] | undefined;
  return (request, now) => {
    keys ??= secrets.map(importKey);
    return verifyWith(keys, tolerance, request.body, request.headers, nowMs(now));
  };
}

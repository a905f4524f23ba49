/**
 * The crypto-free steps of verification (spec 5.1), shared by the node:crypto path and the
 * WebCrypto path. Runtime-agnostic: nothing here imports a Node built-in.
 */
import {
  EVENT_ID_HEADER,
  PUBLIC_KEY_PREFIX,
  SECRET_PREFIX,
  SIGNATURE_HEADER,
  SIGNATURE_FORMATS,
  SIGNATURE_TOLERANCE_SECONDS,
  anchored,
  parseSignatureHeader,
  type ParsedSignatureHeader,
  type WebhookEvent,
} from '@payhooks/contract';
import { WebhookVerificationError } from './errors.ts';
import { readHeader, rawBodyBytes, type HeadersInput, type RawBody } from './input.ts';

export interface VerifyWebhookOptions {
  /** The raw request body, exactly as received: never a parsed object (spec 5.1.4). */
  body: RawBody;
  /** The request headers (`Service-Signature`, `Service-Event-Id`), in any common shape. */
  headers: HeadersInput;
  /**
   * The endpoint's `whsec_` signing secret (spec 5.1.1), or several during a secret rotation: a
   * delivery is accepted when any `v1` in the header matches under any of them.
   */
  secret?: string | readonly string[];
  /**
   * The endpoint's ed25519 public key(s), `whpk_…` (several during a key rotation): each `v1a`
   * entry of the header is verified against each key. Give these instead of `secret` to verify
   * without holding anything that could sign, or beside it: one valid signature of either kind
   * is enough.
   */
  publicKeys?: string | readonly string[];
  /** Maximum |now - t| in seconds. Default 300 (spec 5.1.6, 8). */
  toleranceSeconds?: number;
  /** The current time (a Date or epoch milliseconds), for tests. Default: the system clock. */
  now?: Date | number;
}

/** A verifier bound to its secrets, used by the handler on every delivery; `now` in epoch ms. */
export type Verifier = (request: { body: RawBody; headers: HeadersInput }, now: number) => Promise<WebhookEvent>;

/** What a verifier checks signatures with: HMAC secrets and raw 32-byte ed25519 public keys. */
export interface Credentials {
  secrets: string[];
  publicKeys: Uint8Array[];
}

const PUBLIC_KEY_BODY = anchored(SIGNATURE_FORMATS.publicKey);

/** The 32 raw bytes of a `whpk_` key, decoded without node:crypto (the WebCrypto path shares it). */
function decodePublicKey(value: unknown): Uint8Array {
  // Canonical base64 of 32 bytes: the last character before "=" carries 4 data bits and 2 zero bits.
  if (typeof value !== 'string' || !value.startsWith(PUBLIC_KEY_PREFIX) || !PUBLIC_KEY_BODY.test(value.slice(PUBLIC_KEY_PREFIX.length))) {
    throw new TypeError(
      'payhooks: each of `publicKeys` must be one of the endpoint\'s public keys: "whpk_" followed by the base64 of its 32 bytes',
    );
  }
  return Uint8Array.from(atob(value.slice(PUBLIC_KEY_PREFIX.length)), (c) => c.charCodeAt(0));
}

/** Checks the options a merchant wrote once, at configuration time. Throws a TypeError. */
export function normaliseCredentials(secret: string | readonly string[] | undefined, publicKeys?: string | readonly string[]): Credentials {
  const keys =
    publicKeys === undefined ? [] : typeof publicKeys === 'string' ? [publicKeys] : Array.isArray(publicKeys) ? [...publicKeys] : null;
  if (keys === null) throw new TypeError('payhooks: `publicKeys` must be a list of whpk_ public keys');
  const decoded = keys.map(decodePublicKey);
  const secrets = secret === undefined && decoded.length > 0 ? [] : normaliseSecrets(secret, decoded.length > 0);
  return { secrets, publicKeys: decoded };
}

export function normaliseSecrets(secret: string | readonly string[] | undefined, haveKeys = false): string[] {
  const list = typeof secret === 'string' ? [secret] : Array.isArray(secret) ? [...secret] : [];
  if (list.length === 0 && !haveKeys) {
    throw new TypeError("payhooks: `secret` is required: the endpoint's whsec_ signing secret (or `publicKeys`, its whpk_ public keys)");
  }
  for (const s of list) {
    if (typeof s !== 'string' || !s.startsWith(SECRET_PREFIX) || s.length <= SECRET_PREFIX.length) {
      throw new TypeError(
        'payhooks: `secret` must be the endpoint\'s signing secret, which starts with "whsec_" (spec 5.1.1); ' +
          'it is used whole, prefix included, as the HMAC key',
      );
    }
  }
  return list;
}

/** The `v1a` value as bytes (the parser guarantees padded base64 of 64 bytes). */
export function decodeAsymmetricSignature(value: string): Uint8Array {
  return Uint8Array.from(atob(value), (c) => c.charCodeAt(0));
}

/** `<t>.` followed by the raw bytes: what both `v1` and `v1a` sign (5.1.3, 5.1.4). */
export function signedPayload(timestamp: number, bytes: Uint8Array): Uint8Array {
  const prefix = new TextEncoder().encode(`${timestamp}.`);
  const payload = new Uint8Array(prefix.length + bytes.length);
  payload.set(prefix, 0);
  payload.set(bytes, prefix.length);
  return payload;
}

export const NO_MATCH_MESSAGE = 'no signature in the header verifies the raw body under the configured secret(s) or public key(s)';

export function normaliseTolerance(toleranceSeconds: number | undefined): number {
  const tolerance = toleranceSeconds ?? SIGNATURE_TOLERANCE_SECONDS;
  if (typeof tolerance !== 'number' || !Number.isFinite(tolerance) || tolerance < 0) {
    throw new TypeError('payhooks: `toleranceSeconds` must be a non-negative number of seconds');
  }
  return tolerance;
}

/** The current time in epoch milliseconds: the tolerance is checked to the millisecond. */
export function nowMs(now: Date | number | undefined): number {
  return now === undefined ? Date.now() : typeof now === 'number' ? now : now.getTime();
}

/** What the signature check needs, extracted before any parsing of the body. */
export interface SignedRequest {
  header: ParsedSignatureHeader;
  eventIdHeader: string;
  bytes: Uint8Array;
}

/** Step 1 of 5.1.6: read both headers and split out `t`, the `v1` and the `v1a` values. */
export function readSignedRequest(body: unknown, headers: HeadersInput): SignedRequest {
  const bytes = rawBodyBytes(body);
  if (headers === null || typeof headers !== 'object') {
    throw new TypeError('payhooks: `headers` is required (the request headers)');
  }
  const signature = readHeader(headers, SIGNATURE_HEADER);
  if (signature.kind === 'absent') {
    throw new WebhookVerificationError('missing_header', `missing ${SIGNATURE_HEADER} header`);
  }
  if (signature.kind === 'multiple') {
    throw new WebhookVerificationError('malformed_header', `${SIGNATURE_HEADER} header sent more than once`);
  }
  const eventId = readHeader(headers, EVENT_ID_HEADER);
  if (eventId.kind === 'absent') {
    throw new WebhookVerificationError('missing_header', `missing ${EVENT_ID_HEADER} header`);
  }
  if (eventId.kind === 'multiple') {
    throw new WebhookVerificationError('malformed_header', `${EVENT_ID_HEADER} header sent more than once`);
  }
  const parsed = parseSignatureHeader(signature.value);
  if (!parsed) {
    throw new WebhookVerificationError(
      'malformed_header',
      `${SIGNATURE_HEADER} must be t=<unix seconds>,v1=<64 lowercase hex>[,v1=...][,v1a=<base64 of 64 bytes>...] without spaces`,
    );
  }
  return { header: parsed, eventIdHeader: eventId.value, bytes };
}

/**
 * The last step of 5.1.6: the signed timestamp must be within the tolerance, in either direction.
 * Compared in milliseconds (`now` is epoch ms), so 300.9 s is outside a 300 s tolerance:
 * rounding the clock down to whole seconds would stretch the window by up to a second.
 */
export function checkTimestamp(timestamp: number, now: number, toleranceSeconds: number): void {
  const offsetMs = now - timestamp * 1000;
  if (Math.abs(offsetMs) > toleranceSeconds * 1000) {
    throw new WebhookVerificationError(
      'timestamp_out_of_tolerance',
      `signature timestamp ${timestamp} is ${(offsetMs / 1000).toFixed(3)} s from now; the tolerance is ${toleranceSeconds} s`,
    );
  }
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * After the signature matched: parse the (now trusted) bytes and bind the unsigned
 * `Service-Event-Id` header to the signed body's `id`.
 */
export function parseVerifiedEvent(bytes: Uint8Array, eventIdHeader: string): WebhookEvent {
  let event: unknown;
  try {
    event = JSON.parse(decoder.decode(bytes));
  } catch {
    throw new WebhookVerificationError('invalid_json', 'the signed body is not UTF-8 JSON');
  }
  if (
    event === null ||
    typeof event !== 'object' ||
    Array.isArray(event) ||
    typeof (event as { id?: unknown }).id !== 'string' ||
    typeof (event as { type?: unknown }).type !== 'string'
  ) {
    throw new WebhookVerificationError('invalid_json', 'the signed body is not an event object with a string id and type');
  }
  if ((event as { id: string }).id !== eventIdHeader) {
    throw new WebhookVerificationError('event_id_mismatch', `${EVENT_ID_HEADER} does not match the id of the signed body`);
  }
  return event as WebhookEvent;
}

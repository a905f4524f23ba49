import { createHmac, sign, type KeyObject } from 'node:crypto';
import { SECRET_PREFIX } from './ids.ts';

/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com, "Signature scheme"), sent in
 * `webhook-signature` beside the contract's own `Service-Signature` when an endpoint asks for
 * them. A `v1` entry is base64(HMAC-SHA256(key, `${webhook-id}.${webhook-timestamp}.${body}`)),
 * keyed with the bytes the Standard Webhooks libraries get from the endpoint's `whsec_` secret:
 * what follows the prefix, base64-decoded (`standardWebhooksKey`). So a merchant hands the same
 * secret to either library; the contract's HMAC keys the whole string instead (signature.ts).
 */

/** Padded standard base64 (RFC 4648 section 4), whole groups only. */
const STANDARD_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * The Standard Webhooks key of a `whsec_` secret: what follows the prefix, base64-decoded; null
 * when the libraries would not all decode it to the same bytes. That takes canonical, padded,
 * standard-alphabet base64: the JavaScript library (@stablelib/base64) throws on `-` and `_`,
 * Python's and Go's refuse missing padding, and decoders differ on non-zero trailing bits.
 * Secrets payhooks makes now are 44 characters of A–Z a–z 0–9 (33 bytes, no padding needed),
 * canonical in every alphabet; the base64url secrets it made before (43 characters, most with
 * a `-` or `_`) are not, and can't be given to a Standard Webhooks library: an endpoint with
 * such a secret is rotated before it turns the headers on (docs/decisions/standard-webhooks-headers.md).
 */
export function standardWebhooksKey(secret: string): Buffer | null {
  if (!secret.startsWith(SECRET_PREFIX)) return null;
  const encoded = secret.slice(SECRET_PREFIX.length);
  if (encoded === '' || !STANDARD_BASE64.test(encoded)) return null;
  const key = Buffer.from(encoded, 'base64');
  // Non-zero bits after the last byte: some decoders refuse the string, others drop the bits.
  return key.toString('base64') === encoded ? key : null;
}

/** One `v1` signature: base64(HMAC-SHA256(key, `${msgId}.${timestamp}.${rawBody}`)). */
export function computeStandardWebhooksSignature(
  key: Uint8Array | KeyObject,
  msgId: string,
  timestamp: number,
  rawBody: string | Uint8Array,
): string {
  const hmac = createHmac('sha256', key);
  hmac.update(`${msgId}.${timestamp}.`);
  hmac.update(rawBody);
  return hmac.digest('base64');
}

/** One `v1a` signature: base64(ed25519(privateKey, `${msgId}.${timestamp}.${rawBody}`)). */
export function computeStandardWebhooksAsymmetricSignature(
  privateKey: KeyObject,
  msgId: string,
  timestamp: number,
  rawBody: string | Uint8Array,
): string {
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : rawBody;
  return sign(null, Buffer.concat([Buffer.from(`${msgId}.${timestamp}.`, 'utf8'), body]), privateKey).toString('base64');
}

/** Who signs a request's `webhook-signature`, one entry each, in this order. */
export interface StandardWebhooksSigners {
  /** The live secrets' keys (`standardWebhooksKey`), the new one first during a rotation. */
  v1: readonly (Uint8Array | KeyObject)[];
  /**
   * The endpoint's live ed25519 private keys when asymmetric signing is on, the new one first:
   * Standard Webhooks' asymmetric scheme, verified with the `whpk_` public key alone.
   */
  v1a?: readonly KeyObject[] | undefined;
}

/**
 * The `webhook-signature` value: space-separated `<version>,<base64>` entries, one per signer
 * (two `v1` during a secret rotation's overlap, like `Service-Signature`'s two `v1=`; then one
 * `v1a` per private key); a receiver accepts the request if any entry it knows matches.
 */
export function signStandardWebhooks(
  signers: StandardWebhooksSigners,
  msgId: string,
  timestamp: number,
  rawBody: string | Uint8Array,
): string {
  const { v1, v1a } = signers;
  // One key and no asymmetric signing but during an overlap: no joining (a worker signs every attempt).
  if (v1.length === 1 && (v1a === undefined || v1a.length === 0))
    return `v1,${computeStandardWebhooksSignature(v1[0]!, msgId, timestamp, rawBody)}`;
  let header = '';
  for (const key of v1) header += `${header === '' ? '' : ' '}v1,${computeStandardWebhooksSignature(key, msgId, timestamp, rawBody)}`;
  if (v1a)
    for (const key of v1a)
      header += `${header === '' ? '' : ' '}v1a,${computeStandardWebhooksAsymmetricSignature(key, msgId, timestamp, rawBody)}`;
  return header;
}

import { createHash, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { SIGNATURE_FORMATS, anchored } from './formats.ts';

/**
 * Asymmetric signatures: an ed25519 signature over the same `${t}.${rawBody}` bytes the HMAC
 * signs, carried as extra `v1a=<base64>` entries of `Service-Signature`. A receiver verifies
 * them with a public key alone, so it never holds anything that could sign. Receivers that
 * only know `v1` skip the entries (unknown schemes are skipped by the header grammar).
 */
export const ASYMMETRIC_SCHEME = 'v1a';

/**
 * The prefix of a public key as handed to receivers: `whpk_` + base64 of the 32 raw key bytes,
 * the form the Standard Webhooks libraries use for asymmetric keys.
 */
export const PUBLIC_KEY_PREFIX = 'whpk_';

/** base64 (standard alphabet, padded) ed25519 signature over `${timestamp}.${rawBody}`. */
export function computeAsymmetricSignature(privateKey: KeyObject, timestamp: number, rawBody: string | Uint8Array): string {
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : rawBody;
  const prefix = Buffer.from(`${timestamp}.`, 'utf8');
  return sign(null, Buffer.concat([prefix, body]), privateKey).toString('base64');
}

/** The exact text of a `v1a` value (formats.ts): the same check in every receiver library. */
export const ASYMMETRIC_SIGNATURE_PATTERN = anchored(SIGNATURE_FORMATS.v1a);

/** Whether `signatureBase64` is an ed25519 signature of `${timestamp}.${rawBody}` under `publicKey`. */
export function verifyAsymmetricSignature(
  publicKey: KeyObject,
  timestamp: number,
  rawBody: string | Uint8Array,
  signatureBase64: string,
): boolean {
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : rawBody;
  const prefix = Buffer.from(`${timestamp}.`, 'utf8');
  return verify(null, Buffer.concat([prefix, body]), publicKey, Buffer.from(signatureBase64, 'base64'));
}

/** The raw 32 bytes of an ed25519 public key. */
function rawPublicKey(publicKey: KeyObject): Buffer {
  const jwk = publicKey.export({ format: 'jwk' });
  if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') throw new Error('not an ed25519 public key');
  return Buffer.from(jwk.x, 'base64url');
}

/** `whpk_<base64>`: the public key as a receiver library takes it. */
export function formatPublicKey(publicKey: KeyObject): string {
  return `${PUBLIC_KEY_PREFIX}${rawPublicKey(publicKey).toString('base64')}`;
}

/** The KeyObject for a `whpk_…` string; throws when it is not one (wrong prefix or not 32 bytes). */
export function parsePublicKey(value: string): KeyObject {
  if (!value.startsWith(PUBLIC_KEY_PREFIX)) throw new Error(`a public key starts with ${PUBLIC_KEY_PREFIX}`);
  const body = value.slice(PUBLIC_KEY_PREFIX.length);
  if (!/^[A-Za-z0-9+/]{43}=$/.test(body)) throw new Error('a public key is the base64 of 32 bytes');
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(body, 'base64').toString('base64url') }, format: 'jwk' });
}

export interface Ed25519Jwk {
  kty: 'OKP';
  crv: 'Ed25519';
  /** base64url of the 32 raw key bytes. */
  x: string;
  /** The key's RFC 7638 thumbprint: stable, and derived from the key alone. */
  kid: string;
  use: 'sig';
  alg: 'EdDSA';
}

/** RFC 7638: base64url(SHA-256 of the required members in lexicographic order, no spaces). */
export function jwkThumbprint(x: string): string {
  return createHash('sha256').update(`{"crv":"Ed25519","kty":"OKP","x":"${x}"}`).digest('base64url');
}

/** The public key as a JWK (for the endpoint's API object and the Platform's JWKS document). */
export function publicKeyJwk(publicKey: KeyObject): Ed25519Jwk {
  const x = rawPublicKey(publicKey).toString('base64url');
  return { kty: 'OKP', crv: 'Ed25519', x, kid: jwkThumbprint(x), use: 'sig', alg: 'EdDSA' };
}

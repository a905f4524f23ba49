import { createPrivateKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { PUBLIC_KEY_PREFIX, jwkThumbprint, type Ed25519Jwk } from '@payhooks/contract';
import type { SecretBox } from './encryption.ts';

/**
 * An endpoint's ed25519 key pair as stored: the private key sealed (never shown), the public key
 * in clear as the base64url of its 32 bytes (a JWK's `x`), from which every public form follows.
 */
export interface SealedKeyPair {
  ciphertext: string;
  publicKey: string;
}

/**
 * Associated data of a sealed private key: the endpoint id, plus a purpose so that neither the
 * endpoint's sealed signing secret nor its broker credentials, copied into this column, open as a key.
 */
export const signingKeyAad = (endpointId: string): string => `${endpointId}:signing_key`;

/** A fresh key pair for `endpointId`, its private key sealed at once (PKCS#8 DER, base64, never PEM). */
export function generateSigningKeyPair(secrets: SecretBox, endpointId: string): SealedKeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const der = privateKey.export({ format: 'der', type: 'pkcs8' });
  const x = publicKey.export({ format: 'jwk' }).x;
  if (typeof x !== 'string') throw new Error('ed25519 public key without x');
  return { ciphertext: secrets.encrypt(der.toString('base64'), signingKeyAad(endpointId)), publicKey: x };
}

/** The private key from its sealed form (opened with `SecretBox.decrypt`). */
export function privateKeyFrom(opened: string): KeyObject {
  return createPrivateKey({ key: Buffer.from(opened, 'base64'), format: 'der', type: 'pkcs8' });
}

/** The public key as a JWK, built from `x` without parsing a key (the same JWK `publicKeyJwk` makes). */
export function jwkOf(x: string): Ed25519Jwk {
  return { kty: 'OKP', crv: 'Ed25519', x, kid: jwkThumbprint(x), use: 'sig', alg: 'EdDSA' };
}

/** `whpk_<base64>`: the form the receiver libraries take (`formatPublicKey`). */
export const whpkOf = (x: string): string => `${PUBLIC_KEY_PREFIX}${Buffer.from(x, 'base64url').toString('base64')}`;

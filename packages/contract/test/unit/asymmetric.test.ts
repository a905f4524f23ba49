import { createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  computeAsymmetricSignature,
  formatPublicKey,
  jwkThumbprint,
  parsePublicKey,
  parseSignatureHeader,
  publicKeyJwk,
  signPayloadWithSecrets,
} from '../../src/index.ts';

const T = 1767225600;
const BODY = '{"id":"evt_1","type":"payment.succeeded"}';

describe('ed25519 signatures over the bytes the HMAC signs', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');

  it('signs "t.rawBody" and verifies with the public key alone', () => {
    const sig = computeAsymmetricSignature(privateKey, T, BODY);
    expect(Buffer.from(sig, 'base64')).toHaveLength(64);
    expect(verify(null, Buffer.from(`${T}.${BODY}`), publicKey, Buffer.from(sig, 'base64'))).toBe(true);
    expect(verify(null, Buffer.from(`${T}.${BODY} `), publicKey, Buffer.from(sig, 'base64'))).toBe(false);
    // Bytes, not a string: the same signature for the same bytes.
    expect(computeAsymmetricSignature(privateKey, T, Buffer.from(BODY))).toBe(sig);
  });

  it('adds one v1a entry per key after the v1 entries, which v1-only parsers skip', () => {
    const second = generateKeyPairSync('ed25519').privateKey;
    const header = signPayloadWithSecrets(['whsec_a', 'whsec_b'], T, BODY, [privateKey, second]);
    const parts = header.split(',');
    expect(parts[0]).toBe(`t=${T}`);
    expect(parts.slice(1, 3).every((p) => /^v1=[0-9a-f]{64}$/.test(p))).toBe(true);
    expect(parts.slice(3).map((p) => p.slice(0, 4))).toEqual(['v1a=', 'v1a=']);
    expect(parseSignatureHeader(header)?.signatures).toHaveLength(2);
    expect(signPayloadWithSecrets(['whsec_a'], T, BODY, [])).toBe(signPayloadWithSecrets(['whsec_a'], T, BODY));
  });

  it('hands the public key out as whpk_<base64> and as a JWK with its RFC 7638 thumbprint', () => {
    const whpk = formatPublicKey(publicKey);
    expect(whpk).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
    expect(parsePublicKey(whpk).equals(publicKey)).toBe(true);
    const jwk = publicKeyJwk(publicKey);
    expect(jwk).toMatchObject({ kty: 'OKP', crv: 'Ed25519', use: 'sig', alg: 'EdDSA' });
    expect(createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x }, format: 'jwk' }).equals(publicKey)).toBe(true);
    expect(jwk.kid).toBe(jwkThumbprint(jwk.x));
    expect(() => parsePublicKey('whsec_abc')).toThrow(/whpk_/);
    expect(() => parsePublicKey('whpk_AAAA')).toThrow(/32 bytes/);
  });

  it('computes the RFC 8037 example thumbprint', () => {
    // RFC 8037 appendix A.3: the thumbprint of its example Ed25519 key.
    expect(jwkThumbprint('11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo')).toBe('kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k');
  });
});

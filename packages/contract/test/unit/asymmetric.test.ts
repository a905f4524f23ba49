import { createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  checkSignature,
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

  it('parses v1a entries strictly: padded standard base64 of exactly 64 bytes, else the header is malformed', () => {
    const sig = computeAsymmetricSignature(privateKey, T, BODY);
    const v1 = signPayloadWithSecrets(['whsec_a'], T, BODY);
    expect(parseSignatureHeader(`${v1},v1a=${sig}`)?.asymmetricSignatures).toEqual([sig]);
    expect(parseSignatureHeader(`t=${T},v1a=${sig}`)).toEqual({ timestamp: T, signatures: [], asymmetricSignatures: [sig] });
    const raw = Buffer.from(sig, 'base64');
    for (const bad of [
      raw.subarray(0, 63).toString('base64'),
      Buffer.concat([raw, raw.subarray(0, 1)]).toString('base64'),
      sig.slice(0, -2),
      raw.toString('base64url'),
      `${sig.slice(0, 85)}B==`, // non-zero trailing bits: a second spelling of other bytes
      `${sig.slice(0, 4)} ${sig.slice(5)}`,
      '',
    ]) {
      expect(parseSignatureHeader(`${v1},v1a=${bad}`), bad).toBeNull();
    }
  });

  it('checkSignature verifies v1a with public keys; any one valid signature suffices', () => {
    const other = generateKeyPairSync('ed25519');
    const header = signPayloadWithSecrets(['whsec_a'], T, BODY, [privateKey]);
    const pk = formatPublicKey(publicKey);
    const check = (o: { secrets?: string[]; publicKeys?: string[]; header?: string; body?: string; now?: number }) => {
      const r = checkSignature({
        header: o.header ?? header,
        rawBody: o.body ?? BODY,
        secrets: o.secrets,
        publicKeys: o.publicKeys,
        nowSeconds: o.now ?? T,
      });
      return r.ok ? 'ok' : r.reason;
    };
    expect(check({ publicKeys: [pk] })).toBe('ok');
    expect(check({ publicKeys: [formatPublicKey(other.publicKey)] })).toBe('bad_signature');
    expect(check({ publicKeys: [pk], body: `${BODY} ` })).toBe('bad_signature');
    expect(check({ publicKeys: [pk], now: T + 301 })).toBe('timestamp_out_of_tolerance');
    expect(check({ publicKeys: [pk], header: signPayloadWithSecrets(['whsec_a'], T, BODY) })).toBe('bad_signature');
    expect(check({ secrets: ['whsec_b'], publicKeys: [pk] })).toBe('ok');
    expect(check({ secrets: ['whsec_a'], publicKeys: [formatPublicKey(other.publicKey)] })).toBe('ok');
    expect(check({ secrets: ['whsec_a'] })).toBe('ok');
    expect(() => check({ publicKeys: ['whpk_AAAA'] })).toThrow(/32 bytes/);
  });
});

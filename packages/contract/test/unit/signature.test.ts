import { webcrypto } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  SIGNATURE_TOLERANCE_SECONDS,
  checkSignature,
  computeSignature,
  formatSignatureHeader,
  parseSignatureHeader,
  signPayload,
  signaturesEqual,
} from '../../src/index.ts';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const BODY = '{"id":"evt_test","object":"event"}';
const T = 1_700_000_000;
/** `printf '%s' '1700000000.{"id":"evt_test","object":"event"}' | openssl dgst -sha256 -hmac "$SECRET"` */
const OPENSSL_V1 = '7be803ae18005f34eacc587b10bb162f9e85225eb83b690b8f1fc0f58fbb0321';

/** An HMAC computed by a different implementation (WebCrypto), not the one under test. */
async function webCryptoHmacHex(secret: string, message: Uint8Array): Promise<string> {
  const key = await webcrypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return Buffer.from(await webcrypto.subtle.sign('HMAC', key, message)).toString('hex');
}

const concat = (...parts: Uint8Array[]) => new Uint8Array(Buffer.concat(parts));

describe('computeSignature (spec 5.1)', () => {
  it('spec 5.1.3: v1 = hex HMAC-SHA256 over "<t>.<raw body>" keyed with the whsec_ secret (openssl vector)', () => {
    expect(computeSignature(SECRET, T, BODY)).toBe(OPENSSL_V1);
  });

  it('spec 5.1.3: matches an independent HMAC implementation for many bodies and times', async () => {
    const bodies = ['', '{}', BODY, '{"a":"ü€😀"}', 'x'.repeat(10_000), '{"amount":"10.00"}\n'];
    for (const body of bodies) {
      for (const t of [0, 1, T, 9_999_999_999]) {
        const expected = await webCryptoHmacHex(SECRET, new TextEncoder().encode(`${t}.${body}`));
        expect(computeSignature(SECRET, t, body)).toBe(expected);
      }
    }
  });

  it('spec 5.1.4: signs the raw bytes, including bytes that are not valid UTF-8', async () => {
    const raw = new Uint8Array([0x7b, 0xff, 0xfe, 0x00, 0x7d]);
    const expected = await webCryptoHmacHex(SECRET, concat(new TextEncoder().encode(`${T}.`), raw));
    expect(computeSignature(SECRET, T, raw)).toBe(expected);
    // Re-encoding the bytes as a string would change them, and the signature with them.
    expect(computeSignature(SECRET, T, Buffer.from(raw).toString('utf8'))).not.toBe(expected);
  });

  it('spec 5.1.4: whitespace and key order are part of the signed bytes', () => {
    const a = computeSignature(SECRET, T, '{"a":1,"b":2}');
    expect(computeSignature(SECRET, T, '{"b":2,"a":1}')).not.toBe(a);
    expect(computeSignature(SECRET, T, '{"a": 1,"b":2}')).not.toBe(a);
  });

  it('spec 5.1.1: the whole whsec_ string is the key, prefix included', async () => {
    const withoutPrefix = await webCryptoHmacHex(SECRET.slice('whsec_'.length), new TextEncoder().encode(`${T}.${BODY}`));
    expect(computeSignature(SECRET, T, BODY)).not.toBe(withoutPrefix);
  });
});

describe('Service-Signature header format (spec 4.2)', () => {
  it('spec 4.2: formats t=<unix seconds>,v1=<hex> with no spaces', () => {
    expect(signPayload(SECRET, T, BODY)).toBe(`t=${T},v1=${OPENSSL_V1}`);
    expect(formatSignatureHeader(T, ['a'.repeat(64), 'b'.repeat(64)])).toBe(`t=${T},v1=${'a'.repeat(64)},v1=${'b'.repeat(64)}`);
  });

  it('spec 5.1.6: parse round-trips the formatted header', () => {
    expect(parseSignatureHeader(signPayload(SECRET, T, BODY))).toEqual({
      timestamp: T,
      signatures: [OPENSSL_V1],
      asymmetricSignatures: [],
    });
  });
});

describe('parseSignatureHeader strictness (spec 5.1.6)', () => {
  const hex = OPENSSL_V1;
  const other = 'c'.repeat(64);

  it('spec 5.1.6: several v1 values are all kept, in order', () => {
    expect(parseSignatureHeader(`t=${T},v1=${hex},v1=${other}`)).toEqual({
      timestamp: T,
      signatures: [hex, other],
      asymmetricSignatures: [],
    });
    expect(parseSignatureHeader(`v1=${hex},t=${T}`)).toEqual({ timestamp: T, signatures: [hex], asymmetricSignatures: [] });
  });

  it('spec 5.1.6: unknown future schemes are skipped, but not at the cost of v1', () => {
    expect(parseSignatureHeader(`t=${T},v2=abc,v1=${hex}`)).toEqual({ timestamp: T, signatures: [hex], asymmetricSignatures: [] });
    expect(parseSignatureHeader(`t=${T},v2=${hex}`)).toBeNull();
  });

  it('spec 5.1.6: a future scheme name is lower-case letters and digits, starting with a letter; anything else is a malformed header', () => {
    for (const key of ['v22', 'sha512', 'x'])
      expect(parseSignatureHeader(`t=${T},v1=${hex},${key}=abc`), key).toEqual({
        timestamp: T,
        signatures: [hex],
        asymmetricSignatures: [],
      });
    for (const key of ['V2', '2v', 'v-2', 'v_2', 'v2 ', ' v2']) expect(parseSignatureHeader(`t=${T},v1=${hex},${key}=abc`), key).toBeNull();
  });

  it('spec 5.1.6: a part without "=" makes the header malformed, wherever it is', () => {
    for (const part of ['garbage', 'v1', 't', 'abc2']) {
      expect(parseSignatureHeader(`t=${T},v1=${hex},${part}`), part).toBeNull();
      expect(parseSignatureHeader(`${part},t=${T},v1=${hex}`), part).toBeNull();
    }
  });

  it.each([
    ['empty header', ''],
    ['missing t', `v1=${hex}`],
    ['missing v1', `t=${T}`],
    ['space after the comma', `t=${T}, v1=${hex}`],
    ['space before the comma', `t=${T} ,v1=${hex}`],
    ['space around =', `t = ${T},v1=${hex}`],
    ['leading space', ` t=${T},v1=${hex}`],
    ['trailing space', `t=${T},v1=${hex} `],
    ['uppercase hex', `t=${T},v1=${hex.toUpperCase()}`],
    ['one uppercase hex digit', `t=${T},v1=${hex.slice(0, 63)}F`],
    ['short hex', `t=${T},v1=${hex.slice(0, 63)}`],
    ['long hex', `t=${T},v1=${hex}0`],
    ['non-hex characters', `t=${T},v1=${'g'.repeat(64)}`],
    ['two t values', `t=${T},t=${T + 1},v1=${hex}`],
    ['non-integer t', `t=${T}.5,v1=${hex}`],
    ['negative t', `t=-${T},v1=${hex}`],
    ['t in hex', `t=0x1,v1=${hex}`],
    ['empty t', `t=,v1=${hex}`],
    ['uppercase key', `T=${T},v1=${hex}`],
    ['uppercase scheme', `t=${T},V1=${hex}`],
    ['semicolon separator', `t=${T};v1=${hex}`],
    ['trailing comma', `t=${T},v1=${hex},`],
    ['empty element', `t=${T},,v1=${hex}`],
    ['element without =', `t=${T},v1`],
    ['empty key', `t=${T},=${hex}`],
  ])('spec 5.1.6: rejects %s', (_name, header) => {
    expect(parseSignatureHeader(header)).toBeNull();
  });
});

describe('signaturesEqual (spec 5.1.5)', () => {
  it('spec 5.1.5: equal only for identical hex strings, different lengths included', () => {
    expect(signaturesEqual(OPENSSL_V1, OPENSSL_V1)).toBe(true);
    expect(signaturesEqual(OPENSSL_V1, `${OPENSSL_V1.slice(0, 63)}0`)).toBe(false);
    expect(signaturesEqual(OPENSSL_V1, OPENSSL_V1.slice(0, 62))).toBe(false);
    expect(signaturesEqual(OPENSSL_V1, '')).toBe(false);
  });
});

describe('checkSignature (spec 5.1.6, 8)', () => {
  const header = signPayload(SECRET, T, BODY);
  const check = (overrides: Partial<Parameters<typeof checkSignature>[0]> = {}) =>
    checkSignature({ header, rawBody: BODY, secrets: [SECRET], nowSeconds: T, ...overrides });

  it('spec 8: the tolerance is 300 seconds', () => {
    expect(SIGNATURE_TOLERANCE_SECONDS).toBe(300);
  });

  it('spec 5.1.6: accepts a correct signature at t', () => {
    expect(check()).toEqual({ ok: true, timestamp: T });
  });

  it('spec 5.1.6: 300 s in the past and in the future are accepted, 301 s are rejected', () => {
    expect(check({ nowSeconds: T + 300 })).toEqual({ ok: true, timestamp: T });
    expect(check({ nowSeconds: T - 300 })).toEqual({ ok: true, timestamp: T });
    expect(check({ nowSeconds: T + 301 })).toEqual({ ok: false, reason: 'timestamp_out_of_tolerance' });
    expect(check({ nowSeconds: T - 301 })).toEqual({ ok: false, reason: 'timestamp_out_of_tolerance' });
  });

  it('spec 5.1.6: a custom tolerance is honoured at its edge', () => {
    expect(check({ nowSeconds: T + 10, toleranceSeconds: 10 }).ok).toBe(true);
    expect(check({ nowSeconds: T + 11, toleranceSeconds: 10 }).ok).toBe(false);
  });

  it('spec 5.1.6: a changed body, secret or timestamp is a bad signature', () => {
    expect(check({ rawBody: `${BODY} ` })).toEqual({ ok: false, reason: 'bad_signature' });
    expect(check({ secrets: [`${SECRET}x`] })).toEqual({ ok: false, reason: 'bad_signature' });
    // Moving t forward without re-signing (a replay made to look fresh) breaks the HMAC.
    expect(check({ header: `t=${T + 1000},v1=${OPENSSL_V1}`, nowSeconds: T + 1000 })).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it('spec 5.1.6: a bad signature outside the window is reported as a bad signature (compare first)', () => {
    expect(check({ rawBody: 'tampered', nowSeconds: T + 10_000 })).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it('spec 5.1.6: a malformed header is rejected before any comparison', () => {
    expect(check({ header: header.replace(',', ', ') })).toEqual({ ok: false, reason: 'malformed_header' });
    expect(check({ header: header.toUpperCase() })).toEqual({ ok: false, reason: 'malformed_header' });
  });

  it('spec 5.1.6: any one of several v1 values may match (secret rotation)', () => {
    const twoSigs = formatSignatureHeader(T, ['0'.repeat(64), OPENSSL_V1]);
    expect(check({ header: twoSigs }).ok).toBe(true);
    expect(check({ header: formatSignatureHeader(T, ['0'.repeat(64), '1'.repeat(64)]) }).ok).toBe(false);
  });

  it('spec 5.1.6: any one of several secrets may match (receiver rotation)', () => {
    expect(check({ secrets: ['whsec_old', SECRET] }).ok).toBe(true);
    // Nothing to verify with is the caller's mistake, not a delivery's.
    expect(() => check({ secrets: [] })).toThrow(/secrets or publicKeys/);
  });

  it('spec 5.1.4: verifies raw bytes given as a Uint8Array', () => {
    expect(check({ rawBody: new TextEncoder().encode(BODY) }).ok).toBe(true);
  });
});

import { describe, expect, it } from 'vitest';
import { WebhookVerificationError } from '../src/errors.ts';
import {
  checkTimestamp,
  normaliseCredentials,
  normaliseSecrets,
  normaliseTolerance,
  nowMs,
  parseVerifiedEvent,
  readSignedRequest,
} from '../src/verify-core.ts';

/**
 * The verification steps one by one (spec 5.1.1, 5.1.6, 5.1.7): what each refuses and the message
 * a merchant reads, so a wrong configuration or a bad request says exactly what is wrong.
 */
const HEX = 'a'.repeat(64);
const encoder = new TextEncoder();

function refusal(f: () => unknown): { reason: string; message: string } {
  try {
    f();
  } catch (error) {
    expect(error).toBeInstanceOf(WebhookVerificationError);
    return { reason: (error as WebhookVerificationError).reason, message: (error as Error).message };
  }
  throw new Error('accepted');
}

describe('normaliseSecrets (spec 5.1.1)', () => {
  it('takes one secret or several, whole', () => {
    expect(normaliseSecrets('whsec_a')).toEqual(['whsec_a']);
    expect(normaliseSecrets(['whsec_a', 'whsec_b'])).toEqual(['whsec_a', 'whsec_b']);
  });

  it('no secret at all is a TypeError saying it is required', () => {
    for (const none of [[], undefined, null, 42]) {
      expect(() => normaliseSecrets(none as never)).toThrow(
        new TypeError("payhooks: `secret` is required: the endpoint's whsec_ signing secret (or `publicKeys`, its whpk_ public keys)"),
      );
    }
  });

  it.each([['whsec_'], ['sk_test_abc'], ['WHSEC_abc'], ['']])(
    '%j is not a signing secret: a TypeError saying what one looks like',
    (bad) => {
      const message =
        'payhooks: `secret` must be the endpoint\'s signing secret, which starts with "whsec_" (spec 5.1.1); it is used whole, prefix included, as the HMAC key';
      expect(() => normaliseSecrets(bad as never)).toThrow(new TypeError(message));
      expect(() => normaliseSecrets(['whsec_ok', bad as never])).toThrow(new TypeError(message));
    },
  );

  it('a list holding a non-string is refused the same way', () => {
    expect(() => normaliseSecrets(['whsec_ok', 7 as never])).toThrow(/must be the endpoint's signing secret/);
  });

  it('the shortest secret with something after the prefix is accepted', () => {
    expect(normaliseSecrets('whsec_x')).toEqual(['whsec_x']);
  });
});

describe('normaliseCredentials: secrets and ed25519 public keys', () => {
  const KEY = `whpk_${Buffer.alloc(32, 9).toString('base64')}`;

  it('public keys alone are enough; their raw 32 bytes are kept', () => {
    const c = normaliseCredentials(undefined, [KEY]);
    expect(c.secrets).toEqual([]);
    expect(c.publicKeys.map((k) => Buffer.from(k).toString('hex'))).toEqual(['09'.repeat(32)]);
    expect(normaliseCredentials([], KEY).publicKeys).toHaveLength(1);
    expect(normaliseCredentials('whsec_a', [KEY]).secrets).toEqual(['whsec_a']);
  });

  it.each([
    ['a secret', 'whsec_abc'],
    ['31 bytes', `whpk_${Buffer.alloc(31, 9).toString('base64')}`],
    ['33 bytes', `whpk_${Buffer.alloc(33, 9).toString('base64')}`],
    ['unpadded', KEY.slice(0, -1)],
    ['url-safe base64', `whpk_${Buffer.alloc(32, 0xfb).toString('base64url')}=`],
    ['non-zero trailing bits', `${KEY.slice(0, -2)}B=`],
    ['not a string', 7],
  ])('%s is not a public key: a TypeError that does not echo it', (_name, bad) => {
    expect(() => normaliseCredentials(undefined, [bad as string])).toThrow(/`publicKeys` must be one of the endpoint's public keys/);
  });

  it('a public key with an invalid secret beside it is still a secret error', () => {
    expect(() => normaliseCredentials('sk_abc', [KEY])).toThrow(/must be the endpoint's signing secret/);
  });
});

describe('normaliseTolerance', () => {
  it('defaults to 300 s and accepts 0 and fractions', () => {
    expect(normaliseTolerance(undefined)).toBe(300);
    expect(normaliseTolerance(0)).toBe(0);
    expect(normaliseTolerance(0.5)).toBe(0.5);
  });

  it.each([[-1], [-0.001], [Number.NaN], [Number.POSITIVE_INFINITY], ['300'], [false]])('%j is refused with a TypeError', (bad) => {
    expect(() => normaliseTolerance(bad as never)).toThrow(
      new TypeError('payhooks: `toleranceSeconds` must be a non-negative number of seconds'),
    );
  });
});

describe('nowMs', () => {
  it('takes epoch milliseconds, a Date, or the clock', () => {
    expect(nowMs(1_700_000_000_123)).toBe(1_700_000_000_123);
    expect(nowMs(new Date(1_700_000_000_456))).toBe(1_700_000_000_456);
    const before = Date.now();
    const now = nowMs(undefined);
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
  });
});

describe('readSignedRequest (spec 5.1.6, step 1)', () => {
  const good = { 'service-signature': `t=1700000000,v1=${HEX}`, 'service-event-id': 'evt_1' };

  it('reads t, the v1 values and the event id', () => {
    expect(readSignedRequest('{}', good)).toEqual({
      header: { timestamp: 1_700_000_000, signatures: [HEX], asymmetricSignatures: [] },
      eventIdHeader: 'evt_1',
      bytes: encoder.encode('{}'),
    });
  });

  it.each([[null], [undefined], ['headers'], [42]])('headers %j: a TypeError saying they are required', (headers) => {
    expect(() => readSignedRequest('{}', headers as never)).toThrow(new TypeError('payhooks: `headers` is required (the request headers)'));
  });

  it.each([
    [{ 'service-event-id': 'evt_1' }, 'missing_header', 'missing Service-Signature header'],
    [{ 'service-signature': good['service-signature'] }, 'missing_header', 'missing Service-Event-Id header'],
    [
      { ...good, 'service-signature': [good['service-signature'], good['service-signature']] },
      'malformed_header',
      'Service-Signature header sent more than once',
    ],
    [{ ...good, 'service-event-id': ['evt_1', 'evt_2'] }, 'malformed_header', 'Service-Event-Id header sent more than once'],
    [
      { ...good, 'service-signature': `t=1700000000, v1=${HEX}` },
      'malformed_header',
      'Service-Signature must be t=<unix seconds>,v1=<64 lowercase hex>[,v1=...][,v1a=<base64 of 64 bytes>...] without spaces',
    ],
  ])('%j: %s', (headers, reason, message) => {
    expect(refusal(() => readSignedRequest('{}', headers as never))).toEqual({ reason, message });
  });
});

describe('checkTimestamp (spec 5.1.6, tolerance)', () => {
  it('says how far off the timestamp is, in seconds, and the tolerance', () => {
    expect(refusal(() => checkTimestamp(1_700_000_000, 1_700_000_301_500, 300))).toEqual({
      reason: 'timestamp_out_of_tolerance',
      message: 'signature timestamp 1700000000 is 301.500 s from now; the tolerance is 300 s',
    });
    expect(refusal(() => checkTimestamp(1_700_000_400, 1_700_000_000_000, 300)).message).toBe(
      'signature timestamp 1700000400 is -400.000 s from now; the tolerance is 300 s',
    );
    expect(() => checkTimestamp(1_700_000_000, 1_700_000_300_000, 300)).not.toThrow();
  });
});

describe('parseVerifiedEvent (after the signature matched)', () => {
  it("returns the event when its id is the header's", () => {
    expect(parseVerifiedEvent(encoder.encode('{"id":"evt_1","type":"payment.succeeded"}'), 'evt_1')).toEqual({
      id: 'evt_1',
      type: 'payment.succeeded',
    });
  });

  it.each([
    ['not json', 'invalid_json', 'the signed body is not UTF-8 JSON'],
    ['null', 'invalid_json', 'the signed body is not an event object with a string id and type'],
    ['"evt_1"', 'invalid_json', 'the signed body is not an event object with a string id and type'],
    ['7', 'invalid_json', 'the signed body is not an event object with a string id and type'],
    ['["evt_1"]', 'invalid_json', 'the signed body is not an event object with a string id and type'],
    ['{"id":"evt_1"}', 'invalid_json', 'the signed body is not an event object with a string id and type'],
    ['{"type":"payment.succeeded"}', 'invalid_json', 'the signed body is not an event object with a string id and type'],
    ['{"id":1,"type":"payment.succeeded"}', 'invalid_json', 'the signed body is not an event object with a string id and type'],
    ['{"id":"evt_1","type":7}', 'invalid_json', 'the signed body is not an event object with a string id and type'],
    ['{"id":"evt_2","type":"payment.succeeded"}', 'event_id_mismatch', 'Service-Event-Id does not match the id of the signed body'],
  ])('%s: %s', (body, reason, message) => {
    expect(refusal(() => parseVerifiedEvent(encoder.encode(body), 'evt_1'))).toEqual({ reason, message });
  });

  it('bytes that are not UTF-8 are refused as invalid_json', () => {
    expect(refusal(() => parseVerifiedEvent(new Uint8Array([0x7b, 0xff, 0x7d]), 'evt_1')).reason).toBe('invalid_json');
  });
});

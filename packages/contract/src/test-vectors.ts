import { createHmac, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { computeAsymmetricSignature, formatPublicKey } from './asymmetric.ts';
import { EVENT_TYPES } from './catalog.ts';
import { EVENT_ID_HEADER, SIGNATURE_HEADER } from './headers.ts';
import { SIGNATURE_TOLERANCE_SECONDS } from './limits.ts';
import { computeSignature, formatSignatureHeader, signPayload } from './signature.ts';

/**
 * The signed test vectors every receiver library runs (Node, Python, PHP, Go, Ruby, Java): one
 * list of deliveries, each with the secrets the receiver holds, the time it checks at, and the
 * outcome spec 5.1 demands. Built from this package's own signing code, so a change of the
 * scheme changes the file and every language's tests fail at once until they follow.
 *
 * Deterministic: fixed secrets and times, so the committed JSON is exactly what `buildTestVectors()`
 * returns (a unit test holds them equal; `npm run vectors -w packages/contract` rewrites it).
 */
export type VectorReason =
  | 'missing_header'
  | 'malformed_header'
  | 'bad_signature'
  | 'timestamp_out_of_tolerance'
  | 'event_id_mismatch'
  | 'invalid_json'
  /**
   * Not a verification outcome: the receiver refuses its own configuration (a public key that is
   * not `whpk_` + base64 of 32 bytes) before it looks at any delivery; each library raises the
   * error it raises for a bad secret.
   */
  | 'configuration_error';

export interface SignatureVector {
  /** A stable, unique name: tests report it. */
  name: string;
  description: string;
  /** The secrets the receiver is configured with (several during a rotation). */
  secrets: string[];
  /**
   * The ed25519 public keys (`whpk_…`) the receiver is configured with, to verify `v1a` entries;
   * empty for a receiver that verifies with secrets only. A receiver may hold both: one valid
   * signature of either kind is enough.
   */
  public_keys: string[];
  /** The request headers; a header left out is absent from the request. */
  headers: Record<string, string>;
  /** The raw body bytes, base64: the only exact form (it may be non-ASCII or invalid UTF-8). */
  body_base64: string;
  /** The receiver's clock in Unix milliseconds: the tolerance is checked to the millisecond. */
  now_ms: number;
  /** The tolerance in seconds the receiver uses (the default, 300, unless a case says otherwise). */
  tolerance_seconds: number;
  expected: { ok: true; event_id: string; event_type: string } | { ok: false; reason: VectorReason };
}

export interface SignatureVectors {
  description: string;
  version: 1;
  signature_header: string;
  event_id_header: string;
  default_tolerance_seconds: number;
  /** The event-type catalog, for libraries whose `types` option refuses a misspelt type. */
  event_types: string[];
  vectors: SignatureVector[];
}

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const NEW_SECRET = 'whsec_5n0tH3rS3cr3tF0rR0tat10nQ9x2Lk7v';
const WRONG_SECRET = 'whsec_wr0ngwr0ngwr0ngwr0ngwr0ngwr0ng1';
/**
 * ed25519 keys from fixed 32-byte seeds (RFC 8410 PKCS#8: this DER prefix + the seed), so the
 * signatures, being deterministic, are the same on every run.
 */
function keyFromSeed(fill: number): { privateKey: KeyObject; publicKey: string } {
  const der = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), Buffer.alloc(32, fill)]);
  const privateKey = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
  return { privateKey, publicKey: formatPublicKey(createPublicKey(privateKey)) };
}
const KEY = keyFromSeed(0x11);
const NEW_KEY = keyFromSeed(0x22);
const WRONG_KEY = keyFromSeed(0x33);
const T = 1_767_225_600; // 2026-01-01T00:00:00Z
const EVENT_ID = 'evt_2uXoQ1vGfmTnLb4Hc8sZp7';

function eventBody(options: { id?: string; type?: string; metadata?: Record<string, unknown>; pretty?: boolean } = {}): string {
  const event = {
    id: options.id ?? EVENT_ID,
    object: 'event',
    type: options.type ?? 'payment.succeeded',
    api_version: 'v1',
    environment: 'test',
    merchant_id: 'mch_7Hq2LmXv',
    created_at: '2026-01-01T00:00:00Z',
    data: {
      object: {
        id: 'pay_4Jd8PzRt2Wm',
        object: 'payment',
        status: 'succeeded',
        amount: '25.50',
        asset_code: 'USDC.ETH',
        metadata: options.metadata ?? { account: 'acct_1' },
      },
    },
  };
  return options.pretty ? JSON.stringify(event, null, 2) : JSON.stringify(event);
}

const b64 = (bytes: string | Uint8Array) => Buffer.from(bytes).toString('base64');

export function buildTestVectors(): SignatureVectors {
  const body = eventBody();
  const vectors: SignatureVector[] = [];
  const ok = (id = EVENT_ID, type = 'payment.succeeded') => ({ ok: true as const, event_id: id, event_type: type });
  const fail = (reason: VectorReason) => ({ ok: false as const, reason });
  const add = (
    name: string,
    description: string,
    v: {
      secrets?: string[];
      publicKeys?: string[];
      headers?: Record<string, string | undefined>;
      body?: string | Uint8Array;
      nowMs?: number;
      tolerance?: number;
      expected: SignatureVector['expected'];
    },
  ) => {
    const rawBody = v.body ?? body;
    const headers: Record<string, string> = {};
    const given = v.headers ?? {};
    const signature = SIGNATURE_HEADER in given ? given[SIGNATURE_HEADER] : signPayload(SECRET, T, rawBody);
    const eventId = EVENT_ID_HEADER in given ? given[EVENT_ID_HEADER] : EVENT_ID;
    headers['Content-Type'] = 'application/json';
    if (eventId !== undefined) headers[EVENT_ID_HEADER] = eventId;
    if (signature !== undefined) headers[SIGNATURE_HEADER] = signature;
    vectors.push({
      name,
      description,
      secrets: v.secrets ?? [SECRET],
      public_keys: v.publicKeys ?? [],
      headers,
      body_base64: b64(rawBody),
      now_ms: v.nowMs ?? T * 1000 + 1_500,
      tolerance_seconds: v.tolerance ?? SIGNATURE_TOLERANCE_SECONDS,
      expected: v.expected,
    });
  };
  const sig = (secret: string, t: number, raw: string | Uint8Array) => computeSignature(secret, t, raw);
  const header = (t: number, ...v1: string[]) => formatSignatureHeader(t, v1);

  // Accepted deliveries.
  add('valid', 'A delivery exactly as payhooks sends it, checked 1.5 s after it was signed.', { expected: ok() });
  const nonAscii = eventBody({ metadata: { account: 'acct_ü', note: 'café ✓ 日本 💳', quote: '"\\/' } });
  add('valid_non_ascii_body', 'A body with multi-byte UTF-8: the HMAC covers the bytes, not characters.', {
    body: nonAscii,
    headers: { [SIGNATURE_HEADER]: signPayload(SECRET, T, nonAscii) },
    expected: ok(),
  });
  const pretty = eventBody({ pretty: true });
  add(
    'valid_whitespace_preserved',
    'A body with newlines and indentation, signed as sent: verify the raw bytes, never re-serialised JSON.',
    {
      body: pretty,
      headers: { [SIGNATURE_HEADER]: signPayload(SECRET, T, pretty) },
      expected: ok(),
    },
  );
  add(
    'valid_rotation_two_v1_new_first',
    'During a rotation payhooks sends one v1 per live secret, the new one first; a receiver still on the old secret accepts.',
    {
      headers: { [SIGNATURE_HEADER]: header(T, sig(NEW_SECRET, T, body), sig(SECRET, T, body)) },
      expected: ok(),
    },
  );
  add(
    'valid_rotation_receiver_holds_both',
    'The receiver holds the new and the old secret; the delivery is signed with the old one only.',
    {
      secrets: [NEW_SECRET, SECRET],
      expected: ok(),
    },
  );
  add('valid_second_v1_matches', 'Every v1 in the header is compared: the first does not match, the second does.', {
    headers: { [SIGNATURE_HEADER]: header(T, sig(WRONG_SECRET, T, body), sig(SECRET, T, body)) },
    expected: ok(),
  });
  add('valid_unknown_scheme_ignored', 'A scheme the receiver does not know (v2=) is skipped: the format grows additively.', {
    headers: { [SIGNATURE_HEADER]: `t=${T},v2=${'ab'.repeat(32)},v1=${sig(SECRET, T, body)}` },
    expected: ok(),
  });
  add('valid_unknown_event_type', 'A type outside the catalog still verifies (the receiver acknowledges and ignores it).', {
    body: eventBody({ type: 'payment.refunded_in_the_future' }),
    headers: { [SIGNATURE_HEADER]: signPayload(SECRET, T, eventBody({ type: 'payment.refunded_in_the_future' })) },
    expected: ok(EVENT_ID, 'payment.refunded_in_the_future'),
  });
  add('valid_at_tolerance_past', 'Checked exactly 300 s after t: inside the tolerance.', {
    nowMs: (T + 300) * 1000,
    expected: ok(),
  });
  add('valid_at_tolerance_future', 'Checked exactly 300 s before t (a receiver clock behind): inside the tolerance.', {
    nowMs: (T - 300) * 1000,
    expected: ok(),
  });
  add('valid_custom_tolerance', 'A receiver configured with a 600 s tolerance accepts a delivery 450 s old.', {
    nowMs: (T + 450) * 1000,
    tolerance: 600,
    expected: ok(),
  });

  // Time.
  add('stale_by_one_ms', 'Checked 300.001 s after t: outside the tolerance (compare in milliseconds, not rounded seconds).', {
    nowMs: (T + 300) * 1000 + 1,
    expected: fail('timestamp_out_of_tolerance'),
  });
  add('stale', 'Checked an hour after t: a replayed capture.', { nowMs: (T + 3600) * 1000, expected: fail('timestamp_out_of_tolerance') });
  add('future', 'Signed 301 s in the future: outside the tolerance in the other direction.', {
    nowMs: (T - 301) * 1000,
    expected: fail('timestamp_out_of_tolerance'),
  });
  add(
    'stale_and_bad_signature',
    'Both stale and mis-signed: the signature is compared first (spec order), so the reason is bad_signature.',
    {
      secrets: [WRONG_SECRET],
      nowMs: (T + 3600) * 1000,
      expected: fail('bad_signature'),
    },
  );

  // Signatures that do not match.
  const tampered = body.replace('"25.50"', '"95.50"');
  add('tampered_body', 'One character of the body changed after signing.', {
    body: tampered,
    headers: { [SIGNATURE_HEADER]: signPayload(SECRET, T, body) },
    expected: fail('bad_signature'),
  });
  add('tampered_timestamp', 'The t in the header changed after signing (v1 covers t).', {
    headers: { [SIGNATURE_HEADER]: header(T + 1, sig(SECRET, T, body)) },
    nowMs: (T + 1) * 1000,
    expected: fail('bad_signature'),
  });
  add('wrong_secret', "Signed with another endpoint's secret.", { secrets: [WRONG_SECRET], expected: fail('bad_signature') });
  add('secret_without_prefix_as_key', 'Signed with the secret minus its whsec_ prefix: the full whsec_ string is the HMAC key.', {
    headers: { [SIGNATURE_HEADER]: header(T, sig(SECRET.slice('whsec_'.length), T, body)) },
    expected: fail('bad_signature'),
  });
  add('reserialised_json', 'Signed over a re-serialised body (indented) while the compact bytes are sent.', {
    headers: { [SIGNATURE_HEADER]: header(T, sig(SECRET, T, pretty)) },
    expected: fail('bad_signature'),
  });
  add('signature_without_timestamp_prefix', 'v1 computed over the body alone, without "<t>.".', {
    headers: { [SIGNATURE_HEADER]: header(T, computeSignatureRaw(SECRET, body)) },
    expected: fail('bad_signature'),
  });

  // Headers.
  add('missing_signature_header', 'No Service-Signature header.', {
    headers: { [SIGNATURE_HEADER]: undefined },
    expected: fail('missing_header'),
  });
  add('empty_signature_header', 'An empty Service-Signature header counts as absent.', {
    headers: { [SIGNATURE_HEADER]: '' },
    expected: fail('missing_header'),
  });
  add('missing_event_id_header', 'No Service-Event-Id header.', {
    headers: { [EVENT_ID_HEADER]: undefined },
    expected: fail('missing_header'),
  });
  const good = sig(SECRET, T, body);
  const malformed: Array<[string, string, string]> = [
    ['malformed_spaces', 'Spaces after the commas.', `t=${T}, v1=${good}`],
    ['malformed_no_timestamp', 'No t=.', `v1=${good}`],
    ['malformed_no_v1', 'No v1=.', `t=${T}`],
    ['malformed_two_timestamps', 't= twice.', `t=${T},t=${T},v1=${good}`],
    ['malformed_timestamp_not_integer', 't is not an integer.', `t=${T}.5,v1=${good}`],
    ['malformed_timestamp_negative', 't is negative.', `t=-${T},v1=${good}`],
    ['malformed_v1_uppercase_hex', 'v1 in upper-case hex.', `t=${T},v1=${good.toUpperCase()}`],
    ['malformed_v1_short', 'v1 is not 64 hex digits.', `t=${T},v1=${good.slice(0, 63)}`],
    ['malformed_v1_not_hex', 'v1 holds a non-hex character.', `t=${T},v1=${good.slice(0, 63)}g`],
    ['malformed_no_equals', 'A part without "=".', `t=${T},v1${good}`],
    ['malformed_garbage', 'Not the format at all.', 'sha256=deadbeef'],
  ];
  for (const [name, description, value] of malformed) {
    add(name, description, { headers: { [SIGNATURE_HEADER]: value }, expected: fail('malformed_header') });
  }

  // ed25519 (v1a): verified with a public key alone; one valid signature of either kind suffices.
  const v1a = (key: { privateKey: KeyObject }, t: number, raw: string | Uint8Array) =>
    `v1a=${computeAsymmetricSignature(key.privateKey, t, raw)}`;
  const signedBoth = `${signPayload(SECRET, T, body)},${v1a(KEY, T, body)}`;
  add('v1a_valid_public_key_only', 'A delivery signed with the secret and the key; the receiver holds only the public key.', {
    secrets: [],
    publicKeys: [KEY.publicKey],
    headers: { [SIGNATURE_HEADER]: signedBoth },
    expected: ok(),
  });
  add('v1a_valid_header_without_v1', 'A header with a v1a entry and no v1: a well-formed header, verified by the public key.', {
    secrets: [],
    publicKeys: [KEY.publicKey],
    headers: { [SIGNATURE_HEADER]: `t=${T},${v1a(KEY, T, body)}` },
    expected: ok(),
  });
  const rotating = `${signPayload(SECRET, T, body)},${v1a(NEW_KEY, T, body)},${v1a(KEY, T, body)}`;
  add(
    'v1a_rotation_receiver_holds_old_key',
    'During a key rotation both keys sign, the new one first; a receiver holding the old key accepts.',
    {
      secrets: [],
      publicKeys: [KEY.publicKey],
      headers: { [SIGNATURE_HEADER]: rotating },
      expected: ok(),
    },
  );
  add('v1a_rotation_receiver_holds_new_key', 'During a key rotation both keys sign; a receiver already on the new key accepts.', {
    secrets: [],
    publicKeys: [NEW_KEY.publicKey],
    headers: { [SIGNATURE_HEADER]: rotating },
    expected: ok(),
  });
  add(
    'v1a_rotation_receiver_holds_both_keys',
    'The receiver holds the new and the old public key; the delivery is signed with the old key only.',
    {
      secrets: [],
      publicKeys: [NEW_KEY.publicKey, KEY.publicKey],
      headers: { [SIGNATURE_HEADER]: signedBoth },
      expected: ok(),
    },
  );
  add('v1a_ignored_by_secret_receiver', 'A header with v1 and v1a; the receiver holds only the secret: the HMAC verifies as before.', {
    headers: { [SIGNATURE_HEADER]: signedBoth },
    expected: ok(),
  });
  add(
    'v1a_receiver_holds_both_v1_wrong',
    'The receiver holds a secret and a public key; only the v1a verifies: one valid signature suffices.',
    {
      secrets: [WRONG_SECRET],
      publicKeys: [KEY.publicKey],
      headers: { [SIGNATURE_HEADER]: signedBoth },
      expected: ok(),
    },
  );
  add(
    'v1a_receiver_holds_both_v1a_wrong',
    'The receiver holds a secret and a public key; only the v1 verifies: one valid signature suffices.',
    {
      secrets: [SECRET],
      publicKeys: [WRONG_KEY.publicKey],
      headers: { [SIGNATURE_HEADER]: signedBoth },
      expected: ok(),
    },
  );
  add('v1a_tampered_body', 'One character of the body changed after signing: the ed25519 signature fails.', {
    secrets: [],
    publicKeys: [KEY.publicKey],
    body: tampered,
    headers: { [SIGNATURE_HEADER]: signedBoth },
    expected: fail('bad_signature'),
  });
  add('v1a_tampered_timestamp', 'The t in the header changed after signing (v1a covers t).', {
    secrets: [],
    publicKeys: [KEY.publicKey],
    headers: { [SIGNATURE_HEADER]: `t=${T + 1},${v1a(KEY, T, body)}` },
    nowMs: (T + 1) * 1000,
    expected: fail('bad_signature'),
  });
  add(
    'v1a_non_canonical_s',
    'The signature with S + L in place of S (the same point, S not reduced): a forgery by malleability, refused.',
    {
      secrets: [],
      publicKeys: [KEY.publicKey],
      headers: { [SIGNATURE_HEADER]: `t=${T},v1a=${malleate(computeAsymmetricSignature(KEY.privateKey, T, body))}` },
      expected: fail('bad_signature'),
    },
  );
  add('v1a_wrong_key', "Signed with another endpoint's key.", {
    secrets: [],
    publicKeys: [WRONG_KEY.publicKey],
    headers: { [SIGNATURE_HEADER]: signedBoth },
    expected: fail('bad_signature'),
  });
  add('v1a_absent_public_key_receiver', 'A header with v1 only; the receiver holds only a public key: nothing it can verify.', {
    secrets: [],
    publicKeys: [KEY.publicKey],
    expected: fail('bad_signature'),
  });
  add('v1a_stale', 'A valid v1a checked an hour after t: outside the tolerance.', {
    secrets: [],
    publicKeys: [KEY.publicKey],
    headers: { [SIGNATURE_HEADER]: signedBoth },
    nowMs: (T + 3600) * 1000,
    expected: fail('timestamp_out_of_tolerance'),
  });
  const goodV1a = computeAsymmetricSignature(KEY.privateKey, T, body);
  const malformedV1a: Array<[string, string, string]> = [
    ['malformed_v1a_bad_base64', 'v1a holds a character outside base64.', `${goodV1a.slice(0, 10)}!${goodV1a.slice(11)}`],
    ['malformed_v1a_63_bytes', 'v1a is the base64 of 63 bytes, not 64.', Buffer.from(goodV1a, 'base64').subarray(0, 63).toString('base64')],
    [
      'malformed_v1a_65_bytes',
      'v1a is the base64 of 65 bytes, not 64.',
      Buffer.concat([Buffer.from(goodV1a, 'base64'), Buffer.from([0])]).toString('base64'),
    ],
    ['malformed_v1a_unpadded', 'v1a without its "==" padding.', goodV1a.slice(0, -2)],
    ['malformed_v1a_base64url', 'v1a in the URL-safe alphabet.', Buffer.from(goodV1a, 'base64').toString('base64url')],
    ['malformed_v1a_empty', 'An empty v1a.', ''],
  ];
  for (const [name, description, value] of malformedV1a) {
    add(name, `${description} A malformed header whatever the receiver holds.`, {
      publicKeys: [KEY.publicKey],
      headers: { [SIGNATURE_HEADER]: `${signPayload(SECRET, T, body)},v1a=${value}` },
      expected: fail('malformed_header'),
    });
  }
  const badKeys: Array<[string, string, string]> = [
    ['public_key_not_32_bytes', 'A public key that is the base64 of 31 bytes.', `whpk_${Buffer.alloc(31, 7).toString('base64')}`],
    ['public_key_wrong_prefix', 'A signing secret passed as a public key.', SECRET],
    ['public_key_not_base64', 'A public key whose body is not base64.', `whpk_${'*'.repeat(43)}=`],
  ];
  for (const [name, description, key] of badKeys) {
    add(name, `${description} The receiver refuses its configuration.`, {
      secrets: [],
      publicKeys: [key],
      headers: { [SIGNATURE_HEADER]: signedBoth },
      expected: fail('configuration_error'),
    });
  }

  // The body after the signature matched.
  add('event_id_mismatch', "Service-Event-Id (not signed) differs from the signed body's id.", {
    headers: { [EVENT_ID_HEADER]: 'evt_somethingElse' },
    expected: fail('event_id_mismatch'),
  });
  const notJson = 'this is not json';
  add('signed_body_not_json', 'Correctly signed, but the body is not JSON.', {
    body: notJson,
    headers: { [SIGNATURE_HEADER]: signPayload(SECRET, T, notJson) },
    expected: fail('invalid_json'),
  });
  const badUtf8 = Buffer.concat([Buffer.from('{"id":"'), Buffer.from([0xc3, 0x28]), Buffer.from('","type":"payment.succeeded"}')]);
  add('signed_body_invalid_utf8', 'Correctly signed, but the body is not valid UTF-8.', {
    body: badUtf8,
    headers: { [SIGNATURE_HEADER]: signPayload(SECRET, T, badUtf8) },
    expected: fail('invalid_json'),
  });
  const array = '[1,2,3]';
  add('signed_body_not_an_event', 'Correctly signed JSON that is not an event object (no string id and type).', {
    body: array,
    headers: { [SIGNATURE_HEADER]: signPayload(SECRET, T, array) },
    expected: fail('invalid_json'),
  });

  return {
    description:
      'Signed deliveries and the outcome a payhooks receiver must reach for each: verify the raw body bytes with HMAC-SHA256 keyed by ' +
      'the whole whsec_ secret over "<t>.<body>", compare every v1 in constant time against every configured secret, then require ' +
      '|now - t| <= tolerance (in milliseconds). With public keys (whpk_ + base64 of the 32 raw bytes), also verify every v1a ' +
      '(base64 ed25519 signature of "<t>.<body>") against every key; one valid signature of either kind suffices. Made by @payhooks/contract (buildTestVectors); do not edit by hand.',
    version: 1,
    signature_header: SIGNATURE_HEADER,
    event_id_header: EVENT_ID_HEADER,
    default_tolerance_seconds: SIGNATURE_TOLERANCE_SECONDS,
    event_types: [...EVENT_TYPES],
    vectors,
  };
}

/** HMAC over the body alone: only to build the "no `<t>.` prefix" mistake. */
function computeSignatureRaw(secret: string, rawBody: string): string {
  return createHmac('sha256', secret).update(rawBody).digest('hex');
}

/** The group order of ed25519 (RFC 8032). */
const ED25519_ORDER = (1n << 252n) + 27742317777372353535851937790883648493n;

/** A signature with S + L in place of S (little-endian), which strict verifiers refuse. */
function malleate(signatureBase64: string): string {
  const sig = Buffer.from(signatureBase64, 'base64');
  let s = 0n;
  for (let i = 63; i >= 32; i--) s = (s << 8n) | BigInt(sig[i]!);
  let n = s + ED25519_ORDER;
  for (let i = 32; i < 64; i++) {
    sig[i] = Number(n & 255n);
    n >>= 8n;
  }
  return sig.toString('base64');
}

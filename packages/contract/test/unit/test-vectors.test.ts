import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildTestVectors, checkSignature, type SignatureVectors } from '../../src/index.ts';

const committed = JSON.parse(
  readFileSync(new URL('../../test-vectors/webhook-signatures.json', import.meta.url), 'utf8'),
) as SignatureVectors;

describe('shared signature test vectors (every receiver library runs them)', () => {
  it('the committed file is exactly what buildTestVectors() makes (npm run vectors -w packages/contract rewrites it)', () => {
    expect(committed).toEqual(buildTestVectors());
  });

  it('names are unique and every reason of a receiver appears', () => {
    const names = committed.vectors.map((v) => v.name);
    expect(new Set(names).size).toBe(names.length);
    const reasons = new Set(committed.vectors.map((v) => (v.expected.ok ? 'ok' : v.expected.reason)));
    expect([...reasons].sort()).toEqual(
      [
        'bad_signature',
        'configuration_error',
        'event_id_mismatch',
        'invalid_json',
        'malformed_header',
        'missing_header',
        'ok',
        'timestamp_out_of_tolerance',
      ].sort(),
    );
  });

  // The contract's own check covers the signature steps (5.1.2-5.1.6); the header presence and body
  // steps are the receiver's (the receiver SDK runs the whole file).
  const signatureLevel = committed.vectors.filter(
    (v) => v.expected.ok || ['bad_signature', 'timestamp_out_of_tolerance', 'malformed_header'].includes(v.expected.reason),
  );
  it.each(signatureLevel)('spec 5.1.6: $name agrees with checkSignature', (v) => {
    const result = checkSignature({
      header: v.headers['Service-Signature'] ?? '',
      rawBody: Buffer.from(v.body_base64, 'base64'),
      secrets: v.secrets,
      publicKeys: v.public_keys,
      // checkSignature compares whole seconds; the millisecond boundary cases are the receiver's.
      nowSeconds: Math.floor(v.now_ms / 1000),
      toleranceSeconds: v.tolerance_seconds,
    });
    if (v.name === 'stale_by_one_ms') return expect(result.ok).toBe(true); // 300.001 s floors to 300 s
    expect(result.ok ? 'ok' : result.reason).toBe(v.expected.ok ? 'ok' : v.expected.reason);
  });

  const configuration = committed.vectors.filter((v) => !v.expected.ok && v.expected.reason === 'configuration_error');
  it.each(configuration)('$name: checkSignature refuses the public key without echoing it', (v) => {
    const run = () =>
      checkSignature({
        header: v.headers['Service-Signature'] ?? '',
        rawBody: Buffer.from(v.body_base64, 'base64'),
        secrets: v.secrets,
        publicKeys: v.public_keys,
        nowSeconds: Math.floor(v.now_ms / 1000),
      });
    expect(run).toThrow(/public key/);
    try {
      run();
    } catch (error) {
      expect(String(error)).not.toContain(v.public_keys[0]!.slice(5));
    }
  });

  it('every v1a vector verifies with ed25519 keys made from fixed seeds (the file is deterministic)', () => {
    expect(buildTestVectors()).toEqual(buildTestVectors());
    expect(committed.vectors.filter((v) => v.public_keys.length > 0).length).toBeGreaterThanOrEqual(15);
  });
});

import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { SignatureVectors } from '@payhooks/contract';

/**
 * The node:crypto-only ed25519 snippet of docs/webhooks.md, extracted and run as it is, agrees with
 * the shared vectors for a receiver holding only a public key: it accepts what they accept and
 * refuses the tampered, wrong-key, stale and malformed deliveries.
 */
const DOC = readFileSync(new URL('../../../docs/webhooks.md', import.meta.url), 'utf8');
const { vectors } = JSON.parse(
  readFileSync(new URL('../../contract/test-vectors/webhook-signatures.json', import.meta.url), 'utf8'),
) as SignatureVectors;

function snippet(): string {
  const section = DOC.slice(DOC.indexOf('### Verifying with a public key (ed25519)'));
  const m = /With `node:crypto` alone[^\n]*\n\n```js\n([\s\S]*?)```/.exec(section);
  if (!m) throw new Error('no node:crypto block under "Verifying with a public key (ed25519)" in docs/webhooks.md');
  return m[1]!;
}

const keyOnly = vectors.filter(
  (v) =>
    v.secrets.length === 0 &&
    v.public_keys.length === 1 &&
    (v.expected.ok || ['bad_signature', 'timestamp_out_of_tolerance', 'malformed_header'].includes(v.expected.reason)),
);

describe('docs/webhooks.md: ed25519 with node:crypto alone', () => {
  it('covers the public-key vectors', () => {
    expect(keyOnly.length).toBeGreaterThanOrEqual(8);
  });

  it.each(keyOnly)('spec 5.1.6: $name', async (v) => {
    const file = join(mkdtempSync(join(tmpdir(), 'payhooks-doc-ed25519-')), 'verify.mjs');
    writeFileSync(file, snippet());
    const { verifyEd25519 } = (await import(pathToFileURL(file).href)) as {
      verifyEd25519: (body: Buffer, header: string, publicKey: string, nowMs: number) => boolean;
    };
    const ok = verifyEd25519(Buffer.from(v.body_base64, 'base64'), v.headers['Service-Signature']!, v.public_keys[0]!, v.now_ms);
    expect(ok, v.description).toBe(v.expected.ok);
  });
});

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { SignatureVectors } from '@payhooks/contract';
import { WebhookVerificationError, verifyWebhook, verifyWebhookAsync } from '../src/index.ts';

const file = new URL('../../contract/test-vectors/webhook-signatures.json', import.meta.url);
const { vectors } = JSON.parse(readFileSync(file, 'utf8')) as SignatureVectors;

async function outcome(run: () => unknown): Promise<unknown> {
  try {
    const event = (await run()) as { id: string; type: string };
    return { ok: true, event_id: event.id, event_type: event.type };
  } catch (error) {
    // A public key that is not one is the merchant's configuration mistake, refused before any delivery.
    if (error instanceof TypeError && /publicKeys/.test(error.message)) return { ok: false, reason: 'configuration_error' };
    if (!(error instanceof WebhookVerificationError)) throw error;
    expect(error.status).toBe(400); // spec 5.1.7
    return { ok: false, reason: error.reason };
  }
}

describe('spec 5.1: the shared signature test vectors', () => {
  it.each(vectors)('$name: $description', async (v) => {
    const options = {
      body: Buffer.from(v.body_base64, 'base64'),
      headers: v.headers,
      secret: v.secrets,
      publicKeys: v.public_keys,
      now: v.now_ms,
      toleranceSeconds: v.tolerance_seconds,
    };
    expect(await outcome(() => verifyWebhook(options))).toEqual(v.expected);
    expect(await outcome(() => verifyWebhookAsync(options))).toEqual(v.expected);
  });
});

describe('ed25519 public keys in the handler (createWebhookHandler with publicKeys only)', () => {
  it('a handler with only publicKeys accepts the signed delivery and refuses a tampered one', async () => {
    const { createWebhookHandler, memoryStore } = await import('../src/index.ts');
    const byName = new Map(vectors.map((v) => [v.name, v]));
    const seen: string[] = [];
    for (const [name, status] of [
      ['v1a_valid_public_key_only', 200],
      ['v1a_tampered_body', 400],
    ] as const) {
      const v = byName.get(name)!;
      const handler = createWebhookHandler({
        publicKeys: v.public_keys,
        store: memoryStore(),
        onEvent: (event) => {
          seen.push(event.id);
        },
        onRejected: () => {},
        now: () => v.now_ms,
      });
      const response = await handler.handle({ body: Buffer.from(v.body_base64, 'base64'), headers: v.headers });
      expect(response.status, name).toBe(status);
      await handler.close();
    }
  });
});

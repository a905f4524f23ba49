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
      now: v.now_ms,
      toleranceSeconds: v.tolerance_seconds,
    };
    expect(await outcome(() => verifyWebhook(options))).toEqual(v.expected);
    expect(await outcome(() => verifyWebhookAsync(options))).toEqual(v.expected);
  });
});

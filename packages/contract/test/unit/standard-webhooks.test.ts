import { createSecretKey, generateKeyPairSync, randomBytes, verify } from 'node:crypto';
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { signStandardWebhooks, standardWebhooksKey } from '../../src/index.ts';

/**
 * signStandardWebhooks against the official `standardwebhooks` package (the Standard Webhooks
 * project's JavaScript library): the package signs and verifies, we only sign. The server's
 * integration test (standard-webhooks.test.ts) does the same with real deliveries.
 */

const alnum = fc.string({
  unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'),
  minLength: 44,
  maxLength: 44,
});

describe('standardWebhooksKey', () => {
  it("decodes what follows whsec_ as the library does, for the secrets payhooks makes (44 alphanumerics) and Svix's (base64 of 24 bytes)", () => {
    fc.assert(
      fc.property(alnum, (encoded) => {
        const secret = `whsec_${encoded}`;
        const key = standardWebhooksKey(secret)!;
        expect(key).toHaveLength(33);
        expect(Buffer.from((new Webhook(secret) as unknown as { key: Uint8Array }).key)).toEqual(key);
      }),
    );
    const svix = `whsec_${randomBytes(24).toString('base64')}`;
    expect(standardWebhooksKey(svix)).toEqual(Buffer.from(svix.slice(6), 'base64'));
    // Padded standard base64 of any length is accepted.
    for (const n of [1, 2, 16, 32, 64]) {
      const s = `whsec_${randomBytes(n).toString('base64')}`;
      expect(standardWebhooksKey(s)).toEqual(Buffer.from(s.slice(6), 'base64'));
    }
  });

  it.each([
    ['base64url alphabet (-)', 'whsec_ab-d'],
    ['base64url alphabet (_)', 'whsec_ab_d'],
    ['missing padding (43 characters, the base64url secrets payhooks made before)', `whsec_${'A'.repeat(43)}`],
    ['non-zero trailing bits', 'whsec_AB=='],
    ['padding inside', 'whsec_AB==AAAA'],
    ['empty after the prefix', 'whsec_'],
    ['no prefix', 'c2VjcmV0'],
    ['a space', 'whsec_ABCD EFGH'],
  ])('refuses %s: libraries would not all agree on the key', (_why, secret) => {
    expect(standardWebhooksKey(secret)).toBeNull();
  });

  it('the old base64url secrets: the library throws on most (- or _) and the others lack padding', () => {
    let threw = 0;
    for (let i = 0; i < 200; i++) {
      const old = `whsec_${randomBytes(32).toString('base64url')}`;
      expect(standardWebhooksKey(old)).toBeNull();
      try {
        new Webhook(old);
      } catch {
        threw++;
      }
    }
    expect(threw).toBeGreaterThan(100);
  });
});

describe('signStandardWebhooks', () => {
  it("one secret: v1,<base64>, equal to the library's own signature, and verified by it", () => {
    fc.assert(
      fc.property(
        alnum,
        fc.string(),
        fc.integer({ min: 0, max: 2 ** 40 }),
        fc.string({ minLength: 1, maxLength: 40 }),
        (enc, body, t, id) => {
          const secret = `whsec_${enc}`;
          const key = standardWebhooksKey(secret)!;
          const header = signStandardWebhooks({ v1: [key] }, id, t, Buffer.from(body, 'utf8'));
          expect(header).toBe(new Webhook(secret).sign(id, new Date(t * 1000), body));
          // A KeyObject signs the same (the worker keeps one per secret).
          expect(signStandardWebhooks({ v1: [createSecretKey(key)] }, id, t, body)).toBe(header);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("two secrets (a rotation's overlap): two space-separated entries, new first; the library verifies with either secret and not a third", () => {
    const [newer, older, other] = [0, 1, 2].map(() => `whsec_${randomBytes(33).toString('base64')}`) as [string, string, string];
    const body = '{"id":"evt_1","type":"payment.succeeded","note":"Zoë ✓"}';
    const t = Math.floor(Date.now() / 1000);
    const header = signStandardWebhooks({ v1: [standardWebhooksKey(newer)!, standardWebhooksKey(older)!] }, 'evt_1', t, body);
    const entries = header.split(' ');
    expect(entries).toHaveLength(2);
    expect(entries[0]).toBe(new Webhook(newer).sign('evt_1', new Date(t * 1000), body));
    expect(entries[1]).toBe(new Webhook(older).sign('evt_1', new Date(t * 1000), body));
    const headers = { 'webhook-id': 'evt_1', 'webhook-timestamp': String(t), 'webhook-signature': header };
    expect(new Webhook(newer).verify(body, headers)).toMatchObject({ id: 'evt_1' });
    expect(new Webhook(older).verify(body, headers)).toMatchObject({ id: 'evt_1' });
    expect(() => new Webhook(other).verify(body, headers)).toThrow(/No matching signature/);
  });
  it('v1a entries (ed25519 over `id.timestamp.body`) follow the v1 entries, one per private key; the library still verifies v1', () => {
    const secret = `whsec_${randomBytes(33).toString('base64')}`;
    const [a, b] = [generateKeyPairSync('ed25519'), generateKeyPairSync('ed25519')];
    const body = '{"id":"evt_1"}';
    const t = Math.floor(Date.now() / 1000);
    const header = signStandardWebhooks({ v1: [standardWebhooksKey(secret)!], v1a: [a.privateKey, b.privateKey] }, 'evt_1', t, body);
    const entries = header.split(' ');
    expect(entries.map((e) => e.split(',')[0])).toEqual(['v1', 'v1a', 'v1a']);
    const content = Buffer.from(`evt_1.${t}.${body}`);
    expect(verify(null, content, a.publicKey, Buffer.from(entries[1]!.slice(4), 'base64'))).toBe(true);
    expect(verify(null, content, b.publicKey, Buffer.from(entries[2]!.slice(4), 'base64'))).toBe(true);
    expect(verify(null, content, a.publicKey, Buffer.from(entries[2]!.slice(4), 'base64'))).toBe(false);
    const headers = { 'webhook-id': 'evt_1', 'webhook-timestamp': String(t), 'webhook-signature': header };
    expect(new Webhook(secret).verify(body, headers)).toMatchObject({ id: 'evt_1' });
    expect(signStandardWebhooks({ v1: [standardWebhooksKey(secret)!], v1a: [] }, 'evt_1', t, body)).toBe(entries[0]);
  });
});

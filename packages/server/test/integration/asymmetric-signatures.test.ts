import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIGNATURE_HEADER, parsePublicKey } from '@payhooks/contract';
import { verifyWebhook } from '../../../receiver/src/index.ts';
import { ManualClock, startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type Received, type TestReceiver } from '../helpers/receiver.ts';
import { publish } from '../helpers/publish.ts';
import { portalSignIn } from '../helpers/portal.ts';
import { until } from '../helpers/wait.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';
import { signingKeyAad } from '../../src/security/signing-key-pairs.ts';

const clock = new ManualClock(Date.UTC(2026, 10, 28, 12, 0, 0));
let svc: TestService;
let worker: DeliveryWorker;
let receiver: TestReceiver;

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true, allowHttpUrls: true }, { clock });
  worker = svc.ctx.createWorker();
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

const at = (path: string) => receiver.url.replace('/webhooks', path);
const hits = (path: string) => receiver.requests.filter((r) => r.path === path);

async function endpoint(p: CreatedPlatform, path: string, extra: Record<string, unknown> = {}) {
  const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url: at(path), enabled_events: ['*'], ...extra });
  expect(r.status).toBe(201);
  return r.body;
}

async function sendOne(p: CreatedPlatform, path: string): Promise<Received> {
  const before = hits(path).length;
  await publish(svc.ctx, p.merchant_id);
  await worker.drain();
  expect(hits(path)).toHaveLength(before + 1);
  return hits(path).at(-1)!;
}

/** The `v1a=` values of a request's Service-Signature, in order, and its `t`. */
function v1aOf(req: Received): { t: string; signatures: string[] } {
  const parts = String(req.headers[SIGNATURE_HEADER.toLowerCase()]).split(',');
  return {
    t: parts.find((x) => x.startsWith('t='))!.slice(2),
    signatures: parts.filter((x) => x.startsWith('v1a=')).map((x) => x.slice(4)),
  };
}

/** A receiver's check with node:crypto alone: the signature over `${t}.${raw body}` and a public key. */
const verifiesWith = (req: Received, signature: string, key: KeyObject) =>
  verify(null, Buffer.concat([Buffer.from(`${v1aOf(req).t}.`), req.raw]), key, Buffer.from(signature, 'base64'));

const hmacVerifies = (req: Received, secret: string) => {
  try {
    verifyWebhook({ secret, body: req.raw, headers: req.headers as Record<string, string>, now: clock.now() });
    return true;
  } catch {
    return false;
  }
};

const jwks = (platformId: string, headers: Record<string, string> = {}) =>
  svc.api(undefined, 'GET', `/platforms/${platformId}/jwks.json`, undefined, headers);

describe('asymmetric signatures (ed25519)', () => {
  it('spec 5.1: an endpoint created with asymmetric_signature gets a v1a= that verifies with node:crypto and the public key from the API object or the JWKS alone; v1 verifies unchanged; an endpoint without the flag gets no v1a', async () => {
    const p = await svc.platform();
    const ep = await endpoint(p, '/ed-create', { asymmetric_signature: true });
    expect(ep.asymmetric_signature).toBe(true);
    expect(ep.public_keys).toHaveLength(1);
    const [key] = ep.public_keys;
    expect(key).toMatchObject({ object: 'public_key', expires_at: null, created_at: '2026-11-28T12:00:00Z' });
    expect(key.public_key).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
    expect(key.jwk).toEqual({ kty: 'OKP', crv: 'Ed25519', x: expect.any(String), kid: key.kid, use: 'sig', alg: 'EdDSA' });

    const req = await sendOne(p, '/ed-create');
    const { signatures } = v1aOf(req);
    expect(signatures).toHaveLength(1);
    expect(verifiesWith(req, signatures[0]!, parsePublicKey(key.public_key))).toBe(true);
    const fromJwks = (await jwks(p.platform_id)).body.keys.find((k: { kid: string }) => k.kid === key.kid);
    expect(verifiesWith(req, signatures[0]!, createPublicKey({ key: fromJwks, format: 'jwk' }))).toBe(true);
    // A changed body no longer verifies.
    expect(verifiesWith({ ...req, raw: Buffer.concat([req.raw, Buffer.from(' ')]) }, signatures[0]!, parsePublicKey(key.public_key))).toBe(
      false,
    );
    expect(hmacVerifies(req, ep.secret)).toBe(true);

    const plain = await endpoint(p, '/ed-plain');
    expect(plain.asymmetric_signature).toBe(false);
    expect(plain.public_keys).toEqual([]);
    const plainReq = await sendOne(p, '/ed-plain');
    expect(String(plainReq.headers['service-signature'])).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(hmacVerifies(plainReq, plain.secret)).toBe(true);
  });

  it('turned on by an update (a key pair made then), off again (no v1a=, out of the API object and the JWKS), and on again with the same key', async () => {
    const p = await svc.platform();
    const ep = await endpoint(p, '/ed-update');
    const on = await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${ep.id}`, { asymmetric_signature: true });
    expect(on.status).toBe(200);
    const [key] = on.body.public_keys;
    expect(
      verifiesWith(await sendOne(p, '/ed-update'), v1aOf(hits('/ed-update').at(-1)!).signatures[0]!, parsePublicKey(key.public_key)),
    ).toBe(true);
    expect((await jwks(p.platform_id)).body.keys.map((k: { kid: string }) => k.kid)).toEqual([key.kid]);

    const off = await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${ep.id}`, { asymmetric_signature: false });
    expect(off.body).toMatchObject({ asymmetric_signature: false, public_keys: [] });
    expect(v1aOf(await sendOne(p, '/ed-update')).signatures).toEqual([]);
    expect((await jwks(p.platform_id)).body.keys).toEqual([]);

    const again = await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${ep.id}`, { asymmetric_signature: true });
    expect(again.body.public_keys.map((k: { kid: string }) => k.kid)).toEqual([key.kid]);
  });

  it('the Platform default (portal settings) applies to endpoints created afterwards only; an explicit false wins', async () => {
    const p = await svc.platform();
    const existing = await endpoint(p, '/ed-default-old');
    const admin = await portalSignIn(svc.url, p.portal.email, p.portal.password);
    const set = await admin.call('PUT', '/settings', { asymmetric_signature_default: true });
    expect(set.status).toBe(200);
    expect(set.body.asymmetric_signature_default).toBe(true);
    expect((await admin.call('PUT', '/settings', { asymmetric_signature_default: 'yes' })).status).toBe(400);

    const created = await endpoint(p, '/ed-default-new');
    expect(created.asymmetric_signature).toBe(true);
    expect(created.public_keys).toHaveLength(1);
    expect(v1aOf(await sendOne(p, '/ed-default-new')).signatures).toHaveLength(1);
    expect((await endpoint(p, '/ed-default-off', { asymmetric_signature: false })).asymmetric_signature).toBe(false);
    const old = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${existing.id}`);
    expect(old.body).toMatchObject({ asymmetric_signature: false, public_keys: [] });
    // Another Platform's default is its own.
    expect((await endpoint(await svc.platform(), '/ed-default-other')).asymmetric_signature).toBe(false);
  });

  it('rotation: during the overlap both keys sign (two v1a=, new first) and both are listed; after it only the new key signs and is listed', async () => {
    const p = await svc.platform();
    const ep = await endpoint(p, '/ed-rotate', { asymmetric_signature: true });
    const oldKey = parsePublicKey(ep.public_keys[0].public_key);
    const rotated = await svc.api(p.keys.sandbox, 'POST', `/api/v1/webhook_endpoints/${ep.id}/rotate_signing_key`, {
      expire_previous_in: 3600,
    });
    expect(rotated.status).toBe(200);
    expect(rotated.body).not.toHaveProperty('secret');
    const [fresh, previous] = rotated.body.public_keys;
    expect(previous).toMatchObject({ kid: ep.public_keys[0].kid, expires_at: '2026-11-28T13:00:00Z' });
    expect(fresh.expires_at).toBeNull();
    const newKey = parsePublicKey(fresh.public_key);
    expect((await jwks(p.platform_id)).body.keys.map((k: { kid: string }) => k.kid)).toEqual([fresh.kid, previous.kid]);

    clock.advance(59 * 60_000);
    const during = await sendOne(p, '/ed-rotate');
    const both = v1aOf(during).signatures;
    expect(both).toHaveLength(2);
    expect(verifiesWith(during, both[0]!, newKey)).toBe(true);
    expect(verifiesWith(during, both[1]!, oldKey)).toBe(true);
    expect(verifiesWith(during, both[0]!, oldKey)).toBe(false);
    expect(hmacVerifies(during, ep.secret)).toBe(true);

    clock.advance(2 * 60_000);
    const after = await sendOne(p, '/ed-rotate');
    const one = v1aOf(after).signatures;
    expect(one).toHaveLength(1);
    expect(verifiesWith(after, one[0]!, newKey)).toBe(true);
    expect(
      (await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${ep.id}`)).body.public_keys.map((k: { kid: string }) => k.kid),
    ).toEqual([fresh.kid]);
    expect((await jwks(p.platform_id)).body.keys.map((k: { kid: string }) => k.kid)).toEqual([fresh.kid]);

    // A manual attempt (the portal's resend) is signed with the live key too.
    const admin = await portalSignIn(svc.url, p.portal.email, p.portal.password);
    const deliveries = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?endpoint_id=${ep.id}&limit=1`);
    expect((await admin.call('POST', `/deliveries/${deliveries.body.data[0].id}/resend`)).status).toBe(200);
    const replayed = await until(() => hits('/ed-rotate').length === 3 && hits('/ed-rotate')[2]);
    expect(verifiesWith(replayed, v1aOf(replayed).signatures[0]!, newKey)).toBe(true);

    const plain = await endpoint(p, '/ed-rotate-plain');
    const refused = await svc.api(p.keys.sandbox, 'POST', `/api/v1/webhook_endpoints/${plain.id}/rotate_signing_key`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('asymmetric_signature_off');
  });

  it('the private key is stored encrypted (bound to the endpoint) and never returned', async () => {
    const p = await svc.platform();
    const ep = await endpoint(p, '/ed-stored', { asymmetric_signature: true });
    const [row] = await svc.testDb.database.query<Record<string, string>>(
      `SELECT signing_key_ciphertext, signing_public_key FROM webhook_endpoints WHERE id = $1`,
      [ep.id],
    );
    const sealed = row!.signing_key_ciphertext!;
    expect(sealed).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
    const pkcs8 = svc.ctx.secrets.decrypt(sealed, signingKeyAad(ep.id));
    const seed = Buffer.from(pkcs8, 'base64').subarray(-32);
    const rowText = JSON.stringify(row);
    for (const form of [pkcs8, seed.toString('base64'), seed.toString('base64url'), seed.toString('hex'), 'PRIVATE KEY'])
      expect(rowText).not.toContain(form);
    // Sealed for this endpoint only: opened as another row's (or as its signing secret), it fails.
    expect(() => svc.ctx.secrets.decrypt(sealed, ep.id)).toThrow();
    const everything = JSON.stringify([
      (await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${ep.id}`)).body,
      (await svc.api(p.keys.sandbox, 'GET', '/api/v1/webhook_endpoints')).body,
      (await jwks(p.platform_id)).body,
    ]);
    expect(everything).not.toContain(seed.toString('base64url'));
    expect(everything).not.toContain('"d"');
  });

  it("the JWKS document: public, one Platform's keys only, cache headers and ETag; an unknown or malformed Platform is a 404 with a code", async () => {
    const a = await svc.platform();
    const b = await svc.platform();
    const epA = await endpoint(a, '/ed-jwks-a', { asymmetric_signature: true });
    const epB = await endpoint(b, '/ed-jwks-b', { asymmetric_signature: true });
    const liveA = await svc.api(a.keys.live, 'POST', '/api/v1/webhook_endpoints', {
      url: 'https://example.com/hooks',
      enabled_events: ['*'],
      asymmetric_signature: true,
    });
    expect(liveA.status).toBe(201);
    const deleted = await endpoint(a, '/ed-jwks-deleted', { asymmetric_signature: true });
    await svc.api(a.keys.sandbox, 'DELETE', `/api/v1/webhook_endpoints/${deleted.id}`);

    const docA = await jwks(a.platform_id);
    expect(docA.status).toBe(200);
    expect(docA.headers.get('cache-control')).toMatch(/^public, max-age=\d+$/);
    expect(docA.body.keys.map((k: { kid: string }) => k.kid).sort()).toEqual(
      [epA.public_keys[0].kid, liveA.body.public_keys[0].kid].sort(),
    );
    expect(Object.keys(docA.body)).toEqual(['keys']);
    for (const k of docA.body.keys) expect(Object.keys(k).sort()).toEqual(['alg', 'crv', 'kid', 'kty', 'use', 'x']);
    expect(JSON.stringify(docA.body)).not.toContain(epB.public_keys[0].kid);
    expect((await jwks(b.platform_id)).body.keys.map((k: { kid: string }) => k.kid)).toEqual([epB.public_keys[0].kid]);

    const etag = docA.headers.get('etag')!;
    expect((await jwks(a.platform_id, { 'if-none-match': etag })).status).toBe(304);

    for (const id of ['plt_doesnotexist', 'not-a-platform']) {
      const missing = await jwks(id);
      expect(missing.status).toBe(404);
      expect(missing.body.error.code).toBe('resource_missing');
    }
  });

  it('bad input is a 400 with a code naming the field: a non-boolean flag, an out-of-range overlap', async () => {
    const p = await svc.platform();
    for (const value of ['yes', 1, null]) {
      const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
        url: at('/ed-bad'),
        enabled_events: ['*'],
        asymmetric_signature: value,
      });
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('parameter_invalid');
      expect(r.body.error.param).toBe('asymmetric_signature');
    }
    const ep = await endpoint(p, '/ed-bad', { asymmetric_signature: true });
    const patch = await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${ep.id}`, { asymmetric_signature: 'true' });
    expect(patch.status).toBe(400);
    expect(patch.body.error.param).toBe('asymmetric_signature');
    const rotate = await svc.api(p.keys.sandbox, 'POST', `/api/v1/webhook_endpoints/${ep.id}/rotate_signing_key`, {
      expire_previous_in: -1,
    });
    expect(rotate.status).toBe(400);
    expect(rotate.body.error).toMatchObject({ code: 'parameter_invalid', param: 'expire_previous_in' });
    const unknown = await svc.api(p.keys.sandbox, 'POST', `/api/v1/webhook_endpoints/${ep.id}/rotate_signing_key`, { private_key: 'x' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.code).toBe('parameter_unknown');
  });
});

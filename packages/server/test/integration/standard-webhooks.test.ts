import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { verify } from 'node:crypto';
import { SIGNATURE_HEADER, parsePublicKey, parseSignatureHeader } from '@payhooks/contract';
import { verifyWebhook } from '../../../receiver/src/index.ts';
import { ManualClock, startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type Behaviour, type Received, type TestReceiver } from '../helpers/receiver.ts';
import { publish } from '../helpers/publish.ts';
import { portalSignIn } from '../helpers/portal.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';

/**
 * An endpoint with `standard_webhooks: true` also gets webhook-id,
 * webhook-timestamp and webhook-signature, verified here by the Standard Webhooks project's own
 * JavaScript library (`standardwebhooks`, pinned in package.json) on real deliveries received by
 * a real HTTP server, given the endpoint's whsec_ secret exactly as the API showed it.
 *
 * The library checks webhook-timestamp against the real time (5 minutes either way), so the
 * service's clock starts now and moves by a few minutes at most.
 */

const clock = new ManualClock(Date.now());
let svc: TestService;
let worker: DeliveryWorker;
let receiver: TestReceiver;
/** Answer per path; anything else gets 200. */
const answers = new Map<string, (req: Received, index: number) => Behaviour>();

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true, allowHttpUrls: true, retryScheduleMs: Array(7).fill(60_000) }, { clock });
  worker = svc.ctx.createWorker();
  receiver = await startReceiver((req, i) => answers.get(req.path)?.(req, i) ?? { status: 200, body: 'ok' });
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

const at = (path: string) => receiver.url.replace('/webhooks', path);
const hits = (path: string) => receiver.requests.filter((r) => r.path === path);

async function endpoint(p: CreatedPlatform, path: string, extra: Record<string, unknown> = {}): Promise<{ id: string; secret: string }> {
  const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url: at(path), enabled_events: ['*'], ...extra });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
}

async function sendOne(p: CreatedPlatform, path: string): Promise<Received> {
  const before = hits(path).length;
  await publish(svc.ctx, p.merchant_id);
  await worker.drain();
  expect(hits(path)).toHaveLength(before + 1);
  return hits(path).at(-1)!;
}

/** What `standardwebhooks` makes of the request given `secret`: the parsed event, or its error's message. */
function libraryVerdict(req: Received, secret: string): string {
  try {
    const event = new Webhook(secret).verify(req.raw.toString('utf8'), req.headers as Record<string, string>) as { id: string };
    return `verified ${event.id}`;
  } catch (err) {
    return (err as Error).message;
  }
}

const webhookHeaders = (req: Received) => Object.keys(req.headers).filter((h) => h.startsWith('webhook-'));

async function attemptsOf(p: CreatedPlatform, endpointId: string) {
  const r = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?endpoint_id=${endpointId}&limit=100`);
  expect(r.status).toBe(200);
  return (r.body.data as Array<{ attempts: Array<{ request_headers: Record<string, string> | null; started_at: string }> }>)
    .flatMap((d) => d.attempts)
    .sort((a, b) => a.started_at.localeCompare(b.started_at));
}

describe('standard_webhooks: true', () => {
  it('a real delivery verifies with the standardwebhooks library given the whsec_ secret as shown; the contract headers are unchanged', async () => {
    const p = await svc.platform();
    const ep = await endpoint(p, '/sw-basic', { standard_webhooks: true });
    expect(ep.secret).toMatch(/^whsec_[A-Za-z0-9]{44}$/);
    const req = await sendOne(p, '/sw-basic');
    const event = JSON.parse(req.raw.toString('utf8')) as { id: string };

    expect(libraryVerdict(req, ep.secret)).toBe(`verified ${event.id}`);
    expect(req.headers['webhook-id']).toBe(event.id);
    expect(req.headers['service-event-id']).toBe(event.id);
    const contract = parseSignatureHeader(String(req.headers['service-signature']))!;
    expect(req.headers['webhook-timestamp']).toBe(String(contract.timestamp));
    expect(String(req.headers['webhook-signature'])).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    // The contract's signature is there as before, and verifies with the receiver SDK.
    expect(() =>
      verifyWebhook({ secret: ep.secret, body: req.raw, headers: req.headers as Record<string, string>, now: clock.now() }),
    ).not.toThrow();

    // A wrong secret, a tampered body and a changed webhook-id are refused by the library.
    expect(libraryVerdict(req, `whsec_${'A'.repeat(44)}`)).toBe('No matching signature found');
    expect(libraryVerdict({ ...req, raw: Buffer.from(req.raw.toString('utf8').replace('"', ' "')) }, ep.secret)).toBe(
      'No matching signature found',
    );
    expect(libraryVerdict({ ...req, headers: { ...req.headers, 'webhook-id': 'evt_other' } }, ep.secret)).toBe(
      'No matching signature found',
    );

    // The endpoint says so, and the delivery log shows the headers as sent.
    const got = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${ep.id}`);
    expect(got.body.standard_webhooks).toBe(true);
    const [attempt] = await attemptsOf(p, ep.id);
    expect(attempt!.request_headers).toMatchObject({
      'Service-Event-Id': event.id,
      [SIGNATURE_HEADER]: req.headers['service-signature'],
      'webhook-id': event.id,
      'webhook-timestamp': req.headers['webhook-timestamp'],
      'webhook-signature': req.headers['webhook-signature'],
    });
  });

  it('with asymmetric_signature too, webhook-signature adds a v1a entry (ed25519 over id.timestamp.body) that verifies with the whpk_ public key alone; the library still verifies the v1 entry', async () => {
    const p = await svc.platform();
    const ep = (await endpoint(p, '/sw-v1a', { standard_webhooks: true, asymmetric_signature: true })) as {
      id: string;
      secret: string;
      public_keys: Array<{ public_key: string }>;
    };
    expect(ep.public_keys).toHaveLength(1);
    const req = await sendOne(p, '/sw-v1a');
    const entries = String(req.headers['webhook-signature']).split(' ');
    expect(entries.map((e) => e.slice(0, e.indexOf(',')))).toEqual(['v1', 'v1a']);
    const signed = Buffer.concat([Buffer.from(`${req.headers['webhook-id']}.${req.headers['webhook-timestamp']}.`), req.raw]);
    const v1a = Buffer.from(entries[1]!.slice('v1a,'.length), 'base64');
    const publicKey = parsePublicKey(ep.public_keys[0]!.public_key);
    expect(verify(null, signed, publicKey, v1a)).toBe(true);
    // Not the contract's content ("t.body"): the Standard Webhooks one, with the message id.
    expect(verify(null, Buffer.concat([Buffer.from(`${req.headers['webhook-timestamp']}.`), req.raw]), publicKey, v1a)).toBe(false);
    expect(libraryVerdict(req, ep.secret)).toMatch(/^verified evt_/);
  });

  it('an endpoint without the flag gets no webhook-* header, and its log shows none', async () => {
    const p = await svc.platform();
    const ep = await endpoint(p, '/sw-off');
    expect((await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${ep.id}`)).body.standard_webhooks).toBe(false);
    const req = await sendOne(p, '/sw-off');
    expect(webhookHeaders(req)).toEqual([]);
    expect(req.headers['service-signature']).toBeDefined();
    expect(libraryVerdict(req, ep.secret)).toBe('Missing required headers');
    const [attempt] = await attemptsOf(p, ep.id);
    expect(Object.keys(attempt!.request_headers!).filter((h) => h.startsWith('webhook-'))).toEqual([]);
  });

  it('turned on and off by update: only the attempts made while it is on carry the headers', async () => {
    const p = await svc.platform();
    const ep = await endpoint(p, '/sw-toggle');
    expect(webhookHeaders(await sendOne(p, '/sw-toggle'))).toEqual([]);

    const on = await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${ep.id}`, { standard_webhooks: true });
    expect(on.status).toBe(200);
    expect(on.body.standard_webhooks).toBe(true);
    const req = await sendOne(p, '/sw-toggle');
    expect(webhookHeaders(req).sort()).toEqual(['webhook-id', 'webhook-signature', 'webhook-timestamp']);
    expect(libraryVerdict(req, ep.secret)).toMatch(/^verified evt_/);

    const off = await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${ep.id}`, { standard_webhooks: false });
    expect(off.body.standard_webhooks).toBe(false);
    expect(webhookHeaders(await sendOne(p, '/sw-toggle'))).toEqual([]);
  });

  it('a retry keeps webhook-id (the event id) with a fresh webhook-timestamp, and each attempt verifies', async () => {
    const p = await svc.platform();
    const ep = await endpoint(p, '/sw-retry', { standard_webhooks: true });
    // The first request fails; the retry succeeds.
    answers.set('/sw-retry', () => (hits('/sw-retry').length === 1 ? { status: 503 } : { status: 200 }));
    const first = await sendOne(p, '/sw-retry');
    clock.advance(61_000);
    await worker.drain();
    const second = hits('/sw-retry').at(-1)!;
    expect(second).not.toBe(first);
    expect(second.headers['webhook-id']).toBe(first.headers['webhook-id']);
    expect(Number(second.headers['webhook-timestamp']) - Number(first.headers['webhook-timestamp'])).toBeGreaterThanOrEqual(61);
    expect(second.headers['webhook-signature']).not.toBe(first.headers['webhook-signature']);
    for (const req of [first, second]) expect(libraryVerdict(req, ep.secret)).toBe(`verified ${first.headers['webhook-id']}`);
  });

  it('during a rotation both secrets sign (one v1 entry each, new first): the library verifies with the old secret and with the new one; after it, only the new one', async () => {
    const p = await svc.platform();
    const ep = await endpoint(p, '/sw-rotate', { standard_webhooks: true });
    const oldSecret = ep.secret;
    const before = await sendOne(p, '/sw-rotate');
    expect(String(before.headers['webhook-signature']).split(' ')).toHaveLength(1);

    const rotated = await svc.api(p.keys.sandbox, 'POST', `/api/v1/webhook_endpoints/${ep.id}/rotate_secret`, { expire_previous_in: 120 });
    expect(rotated.status).toBe(200);
    const newSecret: string = rotated.body.secret;
    expect(newSecret).not.toBe(oldSecret);

    const during = await sendOne(p, '/sw-rotate');
    const entries = String(during.headers['webhook-signature']).split(' ');
    expect(entries).toHaveLength(2);
    const id = String(during.headers['webhook-id']);
    expect(libraryVerdict(during, oldSecret)).toBe(`verified ${id}`);
    expect(libraryVerdict(during, newSecret)).toBe(`verified ${id}`);
    expect(libraryVerdict(during, `whsec_${'B'.repeat(44)}`)).toBe('No matching signature found');
    // New first: the first entry alone verifies with the new secret and not with the old.
    const firstOnly = { ...during, headers: { ...during.headers, 'webhook-signature': entries[0] } };
    expect(libraryVerdict(firstOnly, newSecret)).toBe(`verified ${id}`);
    expect(libraryVerdict(firstOnly, oldSecret)).toBe('No matching signature found');
    // Service-Signature carries both too, as it always did during an overlap.
    expect(parseSignatureHeader(String(during.headers['service-signature']))!.signatures).toHaveLength(2);

    // Past the overlap: one entry, the new secret's.
    clock.advance(121_000);
    const after = await sendOne(p, '/sw-rotate');
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(libraryVerdict(after, newSecret)).toMatch(/^verified /);
    expect(libraryVerdict(after, oldSecret)).toBe('No matching signature found');
  });

  it("a manual replay (the portal's Replay) carries the headers too, made at its own time", async () => {
    const p = await svc.platform();
    const ep = await endpoint(p, '/sw-replay', { standard_webhooks: true });
    answers.set('/sw-replay', () => ({ status: 500 }));
    const failed = await sendOne(p, '/sw-replay');
    answers.set('/sw-replay', () => ({ status: 200 }));
    const [delivery] = (await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?endpoint_id=${ep.id}`)).body.data;
    clock.advance(5_000);
    const portal = await portalSignIn(svc.url, p.portal.email, p.portal.password);
    const replayed = await portal.call('POST', `/deliveries/${delivery.id}/replay`);
    expect(replayed.status, JSON.stringify(replayed.body)).toBe(200);
    const req = hits('/sw-replay').at(-1)!;
    expect(req).not.toBe(failed);
    expect(req.headers['webhook-id']).toBe(failed.headers['webhook-id']);
    expect(libraryVerdict(req, ep.secret)).toBe(`verified ${req.headers['webhook-id']}`);
    expect(replayed.body.attempts.at(-1).request_headers['webhook-signature']).toBe(req.headers['webhook-signature']);
  });

  it("the portal's create and edit set it like the API", async () => {
    const p = await svc.platform();
    const portal = await portalSignIn(svc.url, p.portal.email, p.portal.password);
    const created = await portal.call('POST', '/endpoints', { url: at('/sw-portal'), enabled_events: ['*'], standard_webhooks: true });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.standard_webhooks).toBe(true);
    expect(libraryVerdict(await sendOne(p, '/sw-portal'), created.body.secret)).toMatch(/^verified /);
    const off = await portal.call('PATCH', `/endpoints/${created.body.id}`, { standard_webhooks: false });
    expect(off.body.standard_webhooks).toBe(false);
  });
});

describe('a secret made before Standard Webhooks support (base64url, 43 characters)', () => {
  it('turning the headers on is refused with 409 until the secret is rolled; during that overlap only the new secret has a v1 entry', async () => {
    const p = await svc.platform();
    const ep = await endpoint(p, '/sw-legacy');
    // An endpoint as the previous release made it: its secret is whsec_ + base64url of 32 bytes,
    // here one with a '-', which the library refuses to decode.
    const legacy = `whsec_${'ab-'.repeat(14)}c`;
    expect(() => new Webhook(legacy)).toThrow();
    await svc.ctx.database.query('UPDATE webhook_endpoints SET secret_ciphertext = $1 WHERE id = $2', [
      svc.ctx.secrets.encrypt(legacy, ep.id),
      ep.id,
    ]);

    const refused = await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${ep.id}`, { standard_webhooks: true });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'secret_not_standard_webhooks_compatible', param: 'standard_webhooks' });
    expect(refused.body.error.message).toMatch(/Roll the secret/);
    expect((await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${ep.id}`)).body.standard_webhooks).toBe(false);

    const rolled = await svc.api(p.keys.sandbox, 'POST', `/api/v1/webhook_endpoints/${ep.id}/rotate_secret`, { expire_previous_in: 3600 });
    const on = await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${ep.id}`, { standard_webhooks: true });
    expect(on.status).toBe(200);
    const req = await sendOne(p, '/sw-legacy');
    // Service-Signature: both secrets, as in any overlap; webhook-signature: only the new one's.
    expect(parseSignatureHeader(String(req.headers['service-signature']))!.signatures).toHaveLength(2);
    expect(String(req.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(libraryVerdict(req, rolled.body.secret)).toMatch(/^verified /);
    expect(() =>
      verifyWebhook({ secret: legacy, body: req.raw, headers: req.headers as Record<string, string>, now: clock.now() }),
    ).not.toThrow();
  });
});

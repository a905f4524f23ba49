import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.ts';
import { createApiKey, type CreatedPlatform } from '../../src/tenancy/platforms.ts';

/**
 * Spec 2.3, 4.1 rule 1, 5.2: a key manages only its own Platform's endpoints, and (our
 * design, docs/decisions/api-conventions.md) only those of its own environment. Anything else must look exactly
 * like an id that does not exist: same status, same body apart from the echoed id.
 */

let svc: TestService;
let a: CreatedPlatform;
let b: CreatedPlatform;
/** Platform A's endpoints, one per environment, and Platform B's sandbox one. */
let aSandbox: any;
let aLive: any;
let bSandbox: any;

const NONEXISTENT = 'we_000000000000000000000000';
const LIVE_EVENTS = ['payment.succeeded', 'payment.failed', 'payment.expired', 'checkout_session.completed'];

const path = (id: string) => `/api/v1/webhook_endpoints/${id}`;

async function create(key: string, url: string, extra: Record<string, unknown> = {}) {
  const r = await svc.api(key, 'POST', '/api/v1/webhook_endpoints', { url, enabled_events: LIVE_EVENTS, ...extra });
  expect(r.status).toBe(201);
  return r.body;
}

/** The error body with the echoed id replaced, so two ids' answers can be compared whole. */
function shape(res: { status: number; body: any; headers: Headers }, id: string) {
  return {
    status: res.status,
    contentType: res.headers.get('content-type'),
    body: JSON.parse(JSON.stringify(res.body).replaceAll(id, '<id>')),
  };
}

/** The three single-endpoint verbs, answered for `id` with `key`. */
async function allVerbs(key: string, id: string) {
  return {
    GET: await svc.api(key, 'GET', path(id)),
    PATCH: await svc.api(key, 'PATCH', path(id), { description: 'hijacked', url: 'https://attacker.example.net/h' }),
    DELETE: await svc.api(key, 'DELETE', path(id)),
  };
}

async function expectIndistinguishableFromMissing(key: string, id: string) {
  const foreign = await allVerbs(key, id);
  const missing = await allVerbs(key, NONEXISTENT);
  for (const verb of ['GET', 'PATCH', 'DELETE'] as const) {
    expect(foreign[verb].status, verb).toBe(404);
    expect(foreign[verb].body.error, verb).toMatchObject({ type: 'invalid_request_error', code: 'resource_missing', param: 'id' });
    expect(shape(foreign[verb], id), verb).toEqual(shape(missing[verb], NONEXISTENT));
  }
}

beforeAll(async () => {
  svc = await startService();
  a = await svc.platform('A');
  b = await svc.platform('B');
  aSandbox = await create(a.keys.sandbox, 'https://a-sandbox.example.com/h', { description: 'A sandbox', metadata: { owner: 'a' } });
  aLive = await create(a.keys.live, 'https://a-live.example.com/h', { description: 'A live' });
  bSandbox = await create(b.keys.sandbox, 'https://b-sandbox.example.com/h');
});
afterAll(async () => svc?.close());

describe('tenancy: a key sees only its own Platform and environment', () => {
  it("spec 4.1 rule 1: another Platform's endpoint is 404 for GET, PATCH and DELETE, exactly like a nonexistent id", async () => {
    await expectIndistinguishableFromMissing(b.keys.sandbox, aSandbox.id);
    await expectIndistinguishableFromMissing(b.keys.live, aLive.id);
    await expectIndistinguishableFromMissing(a.keys.sandbox, bSandbox.id);
  });

  it("spec 4.1 rule 1: another Platform's key in the other environment gets 404 too", async () => {
    await expectIndistinguishableFromMissing(b.keys.live, aSandbox.id);
    await expectIndistinguishableFromMissing(b.keys.sandbox, aLive.id);
  });

  it("spec 5.2: a sandbox key can't reach the same Platform's live endpoints, nor a live key the sandbox ones", async () => {
    await expectIndistinguishableFromMissing(a.keys.sandbox, aLive.id);
    await expectIndistinguishableFromMissing(a.keys.live, aSandbox.id);
  });

  it('spec 4.1 rule 1: the refused PATCH and DELETE changed nothing', async () => {
    const s = await svc.api(a.keys.sandbox, 'GET', path(aSandbox.id));
    expect(s.status).toBe(200);
    expect(s.body).toMatchObject({
      url: 'https://a-sandbox.example.com/h',
      description: 'A sandbox',
      metadata: { owner: 'a' },
      status: 'enabled',
    });
    const { secret: _s, ...asCreated } = aSandbox;
    expect(s.body).toEqual(asCreated);
    const l = await svc.api(a.keys.live, 'GET', path(aLive.id));
    expect(l.status).toBe(200);
    expect(l.body).toMatchObject({ url: 'https://a-live.example.com/h', description: 'A live' });
    const o = await svc.api(b.keys.sandbox, 'GET', path(bSandbox.id));
    expect(o.status).toBe(200);
  });

  it("spec 4.1 List: a key lists only its own Platform's endpoints of its own environment", async () => {
    const ids = async (key: string) =>
      (await svc.api(key, 'GET', '/api/v1/webhook_endpoints?limit=100')).body.data.map((e: { id: string }) => e.id);
    expect(await ids(a.keys.sandbox)).toEqual([aSandbox.id]);
    expect(await ids(a.keys.live)).toEqual([aLive.id]);
    expect(await ids(b.keys.sandbox)).toEqual([bSandbox.id]);
    expect(await ids(b.keys.live)).toEqual([]);
  });

  it("spec 4.1 rule 1: starting_after with another Platform's or environment's id is the same 400 as an unknown id", async () => {
    const missing = await svc.api(a.keys.sandbox, 'GET', `/api/v1/webhook_endpoints?starting_after=${NONEXISTENT}`);
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({ code: 'resource_missing', param: 'starting_after' });
    for (const id of [bSandbox.id, aLive.id]) {
      const foreign = await svc.api(a.keys.sandbox, 'GET', `/api/v1/webhook_endpoints?starting_after=${id}`);
      expect(shape(foreign, id)).toEqual(shape(missing, NONEXISTENT));
    }
  });

  it("spec 5.2: a key is bound to its Platform: a second key of the Platform manages the first key's endpoints", async () => {
    const second = await createApiKey(svc.ctx.database.db, a.platform_id, 'sandbox');
    const got = await svc.api(second.key, 'GET', path(aSandbox.id));
    expect(got.status).toBe(200);
    expect(got.body.id).toBe(aSandbox.id);
    const made = await create(second.key, 'https://a-sandbox-2.example.com/h');
    const seenByFirst = await svc.api(a.keys.sandbox, 'GET', path(made.id));
    expect(seenByFirst.status).toBe(200);
    const deleted = await svc.api(a.keys.sandbox, 'DELETE', path(made.id));
    expect(deleted.status).toBe(200);
    expect((await svc.api(second.key, 'GET', path(made.id))).status).toBe(404);
    // ...and a second live key still sees no sandbox endpoint.
    const live2 = await createApiKey(svc.ctx.database.db, a.platform_id, 'live');
    expect((await svc.api(live2.key, 'GET', path(aSandbox.id))).status).toBe(404);
  });

  it('spec 4.1 rule 1: ids that are not endpoint ids at all answer the same 404', async () => {
    const missing = await svc.api(a.keys.sandbox, 'GET', path(NONEXISTENT));
    for (const id of [
      'x',
      'we_',
      `we_${'a'.repeat(40)}`,
      `we_${'a'.repeat(61)}`,
      'plt_000000000000000000000000',
      a.platform_id,
      "we_1'%20OR%20'1'='1",
      '%00',
      'we_%00abc',
      '%E2%82%AC',
    ]) {
      const r = await svc.api(a.keys.sandbox, 'GET', path(id));
      expect(r.status, id).toBe(404);
      expect(r.body.error, id).toMatchObject({ type: 'invalid_request_error', code: 'resource_missing', param: 'id' });
      expect(Object.keys(r.body.error).sort(), id).toEqual(Object.keys(missing.body.error).sort());
    }
  });

  it('spec 4.1 rule 1: an endpoint created with the same URL by two Platforms stays two separate endpoints', async () => {
    const url = 'https://shared.example.com/h';
    const one = await create(a.keys.sandbox, url);
    const two = await create(b.keys.sandbox, url);
    expect(one.id).not.toBe(two.id);
    expect(one.secret).not.toBe(two.secret);
    await svc.api(b.keys.sandbox, 'DELETE', path(two.id));
    expect((await svc.api(a.keys.sandbox, 'GET', path(one.id))).status).toBe(200);
    await svc.api(a.keys.sandbox, 'DELETE', path(one.id));
  });
});

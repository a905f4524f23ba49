import { setTimeout as sleep } from 'node:timers/promises';
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.ts';
import { startVariant, type VariantService } from '../helpers/variant.ts';
import { apiKeys } from '../../src/db/schema.ts';
import { createApiKey, revokeApiKey, type CreatedPlatform } from '../../src/tenancy/platforms.ts';

/**
 * Spec 5.2: a key is bound to a Platform. How it is presented is ours: `Authorization: Bearer
 * sk_live_…|sk_test_…`. Missing, malformed, unknown and revoked keys are 401s in the error
 * shape; a key over its rate is a 429 with Retry-After.
 */

let svc: TestService;
let p: CreatedPlatform;
let endpointId: string;

const COLLECTION = '/api/v1/webhook_endpoints';
const OK = { url: 'https://merchant.example.com/hooks', enabled_events: ['*'] };

beforeAll(async () => {
  svc = await startService();
  p = await svc.platform();
  endpointId = (await svc.api(p.keys.sandbox, 'POST', COLLECTION, OK)).body.id;
});
afterAll(async () => svc?.close());

/** Every management route, with a valid body where one is needed. */
const routes = () =>
  [
    ['GET', COLLECTION, undefined],
    ['POST', COLLECTION, OK],
    ['GET', `${COLLECTION}/${endpointId}`, undefined],
    ['PATCH', `${COLLECTION}/${endpointId}`, { description: 'x' }],
    ['DELETE', `${COLLECTION}/${endpointId}`, undefined],
  ] as const;

async function rawCall(authorization: string | undefined, method: string, path: string, body?: unknown) {
  return svc.api(undefined, method, path, body, authorization === undefined ? {} : { authorization });
}

function expect401(res: { status: number; body: any; headers: Headers }, code: string) {
  expect(res.status, JSON.stringify(res.body)).toBe(401);
  expect(res.body).toEqual({ error: { type: 'authentication_error', code, message: expect.any(String) } });
  expect(res.headers.get('www-authenticate')).toMatch(/^Bearer /);
}

describe('authentication (spec 5.2)', () => {
  it('spec 5.2: no API key is 401 missing_api_key on every route', async () => {
    for (const [method, path, body] of routes()) expect401(await rawCall(undefined, method, path, body), 'missing_api_key');
    // Nothing happened: the endpoint is still there, unchanged.
    const still = await svc.api(p.keys.sandbox, 'GET', `${COLLECTION}/${endpointId}`);
    expect(still.status).toBe(200);
    expect(still.body.description).toBeNull();
  });

  it.each([
    ['Basic dXNlcjpwYXNz', 'another scheme'],
    ['Bearer', 'no key'],
    ['Bearer ', 'an empty key'],
    ['Bearer sk_test_a sk_test_b', 'two keys'],
    ['sk_test_abc', 'no scheme'],
    ['Token sk_test_abc', 'a wrong scheme'],
  ])('spec 5.2: Authorization %j (%s) is 401 malformed_authorization', async (header) => {
    for (const [method, path, body] of routes()) expect401(await rawCall(header, method, path, body), 'malformed_authorization');
  });

  it('spec 5.2: a key that is not ours is 401 invalid_api_key on every route', async () => {
    const truncated = p.keys.sandbox.slice(0, -1);
    const changed = p.keys.sandbox.slice(0, -1) + (p.keys.sandbox.endsWith('a') ? 'b' : 'a');
    const keys = [
      'pk_test_abc',
      'whsec_abc',
      'sk_test_',
      `sk_test_${'x'.repeat(32)}`,
      `sk_live_${'x'.repeat(32)}`,
      truncated,
      changed,
      `${p.keys.sandbox}x`,
      p.keys.sandbox.toUpperCase(),
    ];
    for (const key of keys) {
      for (const [method, path, body] of routes()) expect401(await rawCall(`Bearer ${key}`, method, path, body), 'invalid_api_key');
    }
  });

  it('spec 5.2: the 401 does not echo the full key back', async () => {
    const unknown = `sk_test_${'Q'.repeat(32)}`;
    const res = await rawCall(`Bearer ${unknown}`, 'GET', COLLECTION);
    expect(JSON.stringify(res.body)).not.toContain(unknown);
  });

  it('the Bearer scheme is case-insensitive (RFC 9110)', async () => {
    expect((await rawCall(`bearer ${p.keys.sandbox}`, 'GET', COLLECTION)).status).toBe(200);
    expect((await rawCall(`BEARER ${p.keys.sandbox}`, 'GET', COLLECTION)).status).toBe(200);
  });

  it('spec 5.2: the key is checked before the body: bad input without a key is 401, not 400/413/415', async () => {
    const cases: [string, Record<string, string>][] = [
      ['{not json', { 'content-type': 'application/json' }],
      [JSON.stringify({ ...OK, description: 'x'.repeat(200_000) }), { 'content-type': 'application/json' }],
      [JSON.stringify(OK), { 'content-type': 'text/plain' }],
      [JSON.stringify({ url: 5 }), { 'content-type': 'application/json' }],
    ];
    for (const [raw, headers] of cases) expect401(await svc.api(undefined, 'POST', COLLECTION, raw, headers), 'missing_api_key');
  });

  it("spec 4.1 rule 1: without a valid key, existing and nonexistent ids can't be told apart", async () => {
    const a = await rawCall(undefined, 'GET', `${COLLECTION}/${endpointId}`);
    const b = await rawCall(undefined, 'GET', `${COLLECTION}/we_000000000000000000000000`);
    expect(a.status).toBe(401);
    expect(b.body).toEqual(a.body);
  });

  it('public routes need no key', async () => {
    expect((await svc.api(undefined, 'GET', '/healthz')).status).toBe(200);
    expect((await svc.api(undefined, 'GET', '/readyz')).status).toBe(200);
    expect((await svc.api(undefined, 'GET', '/api/v1/openapi.json')).status).toBe(200);
  });

  it('API keys are stored only as hashes', async () => {
    const rows = await svc.ctx.database.db.select().from(apiKeys).where(eq(apiKeys.platformId, p.platform_id));
    const dump = JSON.stringify(rows);
    expect(rows.length).toBeGreaterThanOrEqual(2);
    for (const key of [p.keys.sandbox, p.keys.live]) {
      expect(dump).not.toContain(key);
      expect(dump).not.toContain(key.slice(12));
    }
  });
});

describe('revoked keys (spec 5.2)', () => {
  it("spec 5.2: a revoked key is 401 api_key_revoked at once; the Platform's other keys keep working", async () => {
    const doomed = await createApiKey(svc.ctx.database.db, p.platform_id, 'sandbox');
    expect((await svc.api(doomed.key, 'GET', COLLECTION)).status).toBe(200);
    const result = await revokeApiKey(svc.ctx.database.db, doomed.id, new Date());
    expect(result).toEqual({ revoked: { id: doomed.id, prefix: doomed.prefix } });
    for (const [method, path, body] of routes()) expect401(await svc.api(doomed.key, method, path, body), 'api_key_revoked');
    expect((await svc.api(p.keys.sandbox, 'GET', `${COLLECTION}/${endpointId}`)).status).toBe(200);
  });

  it('a key can be revoked by its id, its full value or its 12-character prefix', async () => {
    const db = svc.ctx.database.db;
    const byId = await createApiKey(db, p.platform_id, 'live');
    const byKey = await createApiKey(db, p.platform_id, 'live');
    const byPrefix = await createApiKey(db, p.platform_id, 'sandbox');
    expect(byPrefix.prefix).toBe(byPrefix.key.slice(0, 12));
    expect('revoked' in (await revokeApiKey(db, byId.id, new Date()))).toBe(true);
    expect('revoked' in (await revokeApiKey(db, byKey.key, new Date()))).toBe(true);
    expect('revoked' in (await revokeApiKey(db, byPrefix.prefix, new Date()))).toBe(true);
    for (const k of [byId, byKey, byPrefix]) expect401(await svc.api(k.key, 'GET', COLLECTION), 'api_key_revoked');
  });

  it('revoking a revoked key again keeps the first revocation time', async () => {
    const db = svc.ctx.database.db;
    const k = await createApiKey(db, p.platform_id, 'sandbox');
    const first = new Date('2026-02-01T00:00:00Z');
    await revokeApiKey(db, k.id, first);
    expect('revoked' in (await revokeApiKey(db, k.id, new Date('2026-03-01T00:00:00Z')))).toBe(true);
    const [row] = await db.select().from(apiKeys).where(eq(apiKeys.id, k.id));
    expect(row!.revokedAt!.toISOString()).toBe(first.toISOString());
    expect401(await svc.api(k.key, 'GET', COLLECTION), 'api_key_revoked');
  });

  it('a prefix matching several keys revokes none; an unknown one reports not_found', async () => {
    const db = svc.ctx.database.db;
    const one = await createApiKey(db, p.platform_id, 'sandbox');
    const two = await createApiKey(db, p.platform_id, 'sandbox');
    await db.execute(sql`UPDATE api_keys SET prefix = ${one.prefix} WHERE id = ${two.id}`);
    expect(await revokeApiKey(db, one.prefix, new Date())).toEqual({ error: 'ambiguous', matches: 2 });
    expect((await svc.api(one.key, 'GET', COLLECTION)).status).toBe(200);
    expect((await svc.api(two.key, 'GET', COLLECTION)).status).toBe(200);
    expect(await revokeApiKey(db, 'sk_test_none', new Date())).toEqual({ error: 'not_found', matches: 0 });
    expect(await revokeApiKey(db, 'key_000000000000000000000000', new Date())).toEqual({ error: 'not_found', matches: 0 });
  });
});

const INTERNAL_TOKEN = `itok_${'k'.repeat(40)}`;

describe('rate limit', () => {
  let limited: VariantService;
  beforeAll(async () => {
    limited = await startVariant(svc, { rateLimitPerSecond: 1, rateLimitBurst: 2, internalToken: INTERNAL_TOKEN });
  });
  afterAll(async () => limited?.close());

  it('a key over its rate gets 429 rate_limited with Retry-After; honouring it gets through', async () => {
    const key = (await createApiKey(svc.ctx.database.db, p.platform_id, 'sandbox')).key;
    expect((await limited.api(key, 'GET', COLLECTION)).status).toBe(200);
    expect((await limited.api(key, 'GET', COLLECTION)).status).toBe(200);
    const refused = await limited.api(key, 'GET', COLLECTION);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ error: { type: 'rate_limit_error', code: 'rate_limited', message: expect.any(String) } });
    const retryAfter = refused.headers.get('retry-after');
    expect(retryAfter).toMatch(/^[1-9]\d*$/);
    expect(Number(retryAfter)).toBeLessThanOrEqual(2);
    await sleep(Number(retryAfter) * 1000 + 50);
    expect((await limited.api(key, 'GET', COLLECTION)).status).toBe(200);
  });

  it('a refused create creates nothing', async () => {
    const other = await svc.platform('rate');
    const key = other.keys.sandbox;
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await limited.api(key, 'POST', COLLECTION, { ...OK, description: `n${i}` })).status);
    expect(statuses).toEqual([201, 201, 429, 429]);
    const list = await svc.api(key, 'GET', `${COLLECTION}?limit=100`);
    expect(list.body.data.map((e: { description: string }) => e.description).sort()).toEqual(['n0', 'n1']);
  });

  it('the limit is per key: another key, even of the same Platform, is not affected', async () => {
    const first = (await createApiKey(svc.ctx.database.db, p.platform_id, 'sandbox')).key;
    const second = (await createApiKey(svc.ctx.database.db, p.platform_id, 'sandbox')).key;
    for (let i = 0; i < 2; i++) await limited.api(first, 'GET', COLLECTION);
    expect((await limited.api(first, 'GET', COLLECTION)).status).toBe(429);
    expect((await limited.api(second, 'GET', COLLECTION)).status).toBe(200);
    expect((await limited.api(second, 'GET', COLLECTION)).status).toBe(200);
    expect((await limited.api(second, 'GET', COLLECTION)).status).toBe(429);
  });

  it('failed internal-token attempts are limited per client address like API keys; the right token still works', async () => {
    const call = (token: string) =>
      fetch(`${limited.url}/internal/v1/payments/pay_nothing/transitions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ status: 'processing' }),
      });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await call(`guess-${i}-${'x'.repeat(32)}`)).status);
    expect(statuses).toEqual([401, 401, 429]);
    const refused = await call('another-guess');
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({
      error: {
        type: 'rate_limit_error',
        code: 'rate_limited',
        message: expect.stringMatching(/^Too many requests with an invalid internal token from this address; retry after \d+ s\.$/),
      },
    });
    // The token itself is never refused by the failed-attempt limit (here: the payment does not exist).
    expect((await call(INTERNAL_TOKEN)).status).toBe(404);
  });

  it('failed authentications are limited per client address: guessing keys ends in 429', async () => {
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await limited.api(`sk_test_guess${i}${'x'.repeat(20)}`, 'GET', COLLECTION)).status);
    expect(statuses).toEqual([401, 401, 429]);
  });
});

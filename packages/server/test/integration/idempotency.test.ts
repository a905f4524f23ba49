import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, startService, type TestService } from '../helpers/service.ts';
import { idempotencyKeys, webhookEndpoints } from '../../src/db/schema.ts';
import { createApiKey, type CreatedPlatform } from '../../src/tenancy/platforms.ts';

/**
 * `Idempotency-Key` on create (Stripe's semantics; the contract is silent, docs/decisions/api-conventions.md
 * follows Stripe): the same key and body within 24 h answer the first response, marked
 * `idempotent-replayed: true`, and create nothing; the same key with another body is a 409.
 */

const COLLECTION = '/api/v1/webhook_endpoints';
const HOUR = 3_600_000;

let svc: TestService;
let clock: ManualClock;
let p: CreatedPlatform;
let keyCounter = 0;

const newKey = () => `idem-${Date.now()}-${++keyCounter}`;
const body = (n: string | number = 'x') => ({
  url: `https://merchant.example.com/hooks/${n}`,
  enabled_events: ['*'],
  description: `endpoint ${n}`,
});
const create = (apiKey: string, b: unknown, idempotencyKey?: string) =>
  svc.api(apiKey, 'POST', COLLECTION, b, idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey });

async function countEndpoints(platformId: string, url: string): Promise<number> {
  const rows = await svc.ctx.database.db
    .select({ id: webhookEndpoints.id })
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.platformId, platformId), eq(webhookEndpoints.url, url)));
  return rows.length;
}

beforeAll(async () => {
  clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
  svc = await startService({ rateLimitPerSecond: 10_000, rateLimitBurst: 10_000 }, { clock });
  p = await svc.platform();
});
afterAll(async () => svc?.close());

describe('Idempotency-Key on create', () => {
  it('spec 4.1 Create: the same key and body answer the first response (its secret too: the answer to that creation), marked idempotent-replayed, and create one endpoint', async () => {
    const key = newKey();
    const b = body('replay');
    const first = await create(p.keys.sandbox, b, key);
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const second = await create(p.keys.sandbox, b, key);
    expect(second.status).toBe(201);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body).toEqual(first.body);
    expect(second.body.secret).toBe(first.body.secret);
    const third = await create(p.keys.sandbox, b, key);
    expect(third.body.id).toBe(first.body.id);
    expect(await countEndpoints(p.platform_id, b.url)).toBe(1);
  });

  it('key order and whitespace of the JSON body do not make it a different request', async () => {
    const key = newKey();
    const first = await create(p.keys.sandbox, '{"url":"https://merchant.example.com/hooks/order","enabled_events":["*"]}', key);
    const again = await create(p.keys.sandbox, '{ "enabled_events": ["*"],\n  "url": "https://merchant.example.com/hooks/order" }', key);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.id).toBe(first.body.id);
  });

  it('the same key with a different body is 409 idempotency_key_reused and creates nothing', async () => {
    const key = newKey();
    const first = await create(p.keys.sandbox, body('reuse-a'), key);
    expect(first.status).toBe(201);
    for (const other of [body('reuse-b'), { ...body('reuse-a'), description: 'changed' }, { ...body('reuse-a'), metadata: { a: 'b' } }]) {
      const res = await create(p.keys.sandbox, other, key);
      expect(res.status).toBe(409);
      expect(res.body).toEqual({
        error: { type: 'idempotency_error', code: 'idempotency_key_reused', message: expect.any(String), param: 'Idempotency-Key' },
      });
    }
    expect(await countEndpoints(p.platform_id, body('reuse-b').url)).toBe(0);
    expect(await countEndpoints(p.platform_id, body('reuse-a').url)).toBe(1);
  });

  it('the first response is replayed even after the endpoint was deleted, and nothing is re-created', async () => {
    const key = newKey();
    const b = body('deleted');
    const first = await create(p.keys.sandbox, b, key);
    expect((await svc.api(p.keys.sandbox, 'DELETE', `${COLLECTION}/${first.body.id}`)).status).toBe(200);
    const again = await create(p.keys.sandbox, b, key);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.id).toBe(first.body.id);
    expect((await svc.api(p.keys.sandbox, 'GET', `${COLLECTION}?limit=100`)).body.data.map((e: { id: string }) => e.id)).not.toContain(
      first.body.id,
    );
  });

  it('without the header, two identical requests create two endpoints', async () => {
    const b = body('no-key');
    const one = await create(p.keys.sandbox, b);
    const two = await create(p.keys.sandbox, b);
    expect(one.body.id).not.toBe(two.body.id);
    expect(two.headers.get('idempotent-replayed')).toBeNull();
  });

  it('keys are scoped to the Platform and environment: the same key elsewhere is a new request', async () => {
    const other = await svc.platform('other');
    const key = newKey();
    const b = { ...body('scoped'), enabled_events: ['*'] };
    const mine = await create(p.keys.sandbox, b, key);
    const theirs = await create(other.keys.sandbox, b, key);
    const myLive = await create(p.keys.live, b, key);
    for (const r of [mine, theirs, myLive]) {
      expect(r.status).toBe(201);
      expect(r.headers.get('idempotent-replayed')).toBeNull();
    }
    expect(new Set([mine.body.id, theirs.body.id, myLive.body.id]).size).toBe(3);
    expect(theirs.body.secret).not.toBe(mine.body.secret);
    // A different body under the same key on another Platform is no conflict either.
    expect((await create(other.keys.live, body('scoped-other'), key)).status).toBe(201);
    // A second key of the same Platform and environment shares the key space.
    const second = await createApiKey(svc.ctx.database.db, p.platform_id, 'sandbox');
    const replay = await create(second.key, b, key);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.id).toBe(mine.body.id);
  });

  it('a failed request is not stored: the corrected request with the same key goes through', async () => {
    const key = newKey();
    const bad = { ...body('fixed'), url: 'https://127.0.0.1/h' };
    expect((await create(p.keys.sandbox, bad, key)).status).toBe(422);
    expect((await create(p.keys.sandbox, bad, key)).status).toBe(422);
    expect((await create(p.keys.sandbox, { ...body('fixed'), enabled_events: ['nope'] }, key)).status).toBe(400);
    const good = await create(p.keys.sandbox, body('fixed'), key);
    expect(good.status).toBe(201);
    expect(good.headers.get('idempotent-replayed')).toBeNull();
    expect((await create(p.keys.sandbox, body('fixed'), key)).headers.get('idempotent-replayed')).toBe('true');
  });

  it('the stored response is encrypted: the signing secret is not in the table in clear', async () => {
    const key = newKey();
    const created = await create(p.keys.sandbox, body('stored'), key);
    const [row] = await svc.ctx.database.db.select().from(idempotencyKeys).where(eq(idempotencyKeys.key, key));
    expect(row).toBeDefined();
    expect(row!.responseBody).not.toContain(created.body.secret);
    expect(row!.responseBody).not.toContain(created.body.secret.slice(6));
    expect(row!.responseBody).not.toContain(created.body.id);
  });

  it.each([
    ['', 'empty'],
    ['a b', 'a space'],
    ['ü-key', 'non-ASCII'],
    ['k'.repeat(256), '256 characters'],
  ])('an Idempotency-Key that is %j (%s) is 400 idempotency_key_invalid', async (key) => {
    const res = /^\p{ASCII}*$/u.test(key)
      ? await create(p.keys.sandbox, body('badkey'), key)
      : await svc.api(p.keys.sandbox, 'POST', COLLECTION, body('badkey'), {
          'idempotency-key': Buffer.from(key, 'utf8').toString('latin1'),
        });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'idempotency_key_invalid', param: 'Idempotency-Key' });
    expect(await countEndpoints(p.platform_id, body('badkey').url)).toBe(0);
  });

  it('a 255-character key is accepted', async () => {
    const key = `${newKey()}-`.padEnd(255, 'k');
    expect((await create(p.keys.sandbox, body('longkey'), key)).status).toBe(201);
    expect((await create(p.keys.sandbox, body('longkey'), key)).headers.get('idempotent-replayed')).toBe('true');
  });
});

describe('Idempotency-Key window (24 h)', () => {
  it('replays up to 24 h; from 24 h on the key is free and a new request creates a new endpoint', async () => {
    const key = newKey();
    const b = body('window');
    const start = clock.now().getTime();
    const first = await create(p.keys.sandbox, b, key);
    clock.set(start + 24 * HOUR - 1000);
    const late = await create(p.keys.sandbox, b, key);
    expect(late.headers.get('idempotent-replayed')).toBe('true');
    expect(late.body.id).toBe(first.body.id);
    // ...and a different body inside the window still conflicts.
    expect((await create(p.keys.sandbox, body('window-other'), key)).status).toBe(409);

    clock.set(start + 24 * HOUR);
    const fresh = await create(p.keys.sandbox, b, key);
    expect(fresh.status).toBe(201);
    expect(fresh.headers.get('idempotent-replayed')).toBeNull();
    expect(fresh.body.id).not.toBe(first.body.id);
    // The new response starts a new window.
    clock.set(start + 30 * HOUR);
    const replayOfFresh = await create(p.keys.sandbox, b, key);
    expect(replayOfFresh.body.id).toBe(fresh.body.id);
    expect(replayOfFresh.headers.get('idempotent-replayed')).toBe('true');
    clock.set(start + 48 * HOUR + 1);
    const third = await create(p.keys.sandbox, body('window-other'), key);
    expect(third.status).toBe(201);
    expect(await countEndpoints(p.platform_id, b.url)).toBe(2);
  });
});

describe('concurrent requests with one Idempotency-Key', () => {
  it('identical concurrent requests create exactly one endpoint and all answer it', async () => {
    const key = newKey();
    const b = body('concurrent');
    const answers = await Promise.all(Array.from({ length: 12 }, () => create(p.keys.sandbox, b, key)));
    for (const a of answers) {
      expect(a.status, JSON.stringify(a.body)).toBe(201);
      expect(a.body.id).toBe(answers[0]!.body.id);
      expect(a.body.secret).toBe(answers[0]!.body.secret);
    }
    expect(answers.filter((a) => a.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    expect(await countEndpoints(p.platform_id, b.url)).toBe(1);
  });

  it('concurrent requests with different bodies: one wins, the others are 409, one endpoint in all', async () => {
    const key = newKey();
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => create(p.keys.sandbox, body(`race-${i}`), key)));
    const created = answers.filter((a) => a.status === 201);
    expect(created).toHaveLength(1);
    for (const a of answers.filter((x) => x.status !== 201)) {
      expect(a.status).toBe(409);
      expect(['idempotency_key_reused', 'idempotency_key_in_use']).toContain(a.body.error.code);
    }
    let total = 0;
    for (let i = 0; i < 8; i++) total += await countEndpoints(p.platform_id, body(`race-${i}`).url);
    expect(total).toBe(1);
  });
});

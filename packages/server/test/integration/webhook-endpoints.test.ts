import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_TYPES, REQUIRED_LIVE_EVENT_TYPES } from '@payhooks/contract';
import { startService, type TestService } from '../helpers/service.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';

const LIVE_EVENTS = [...REQUIRED_LIVE_EVENT_TYPES];

let svc: TestService;
let p: CreatedPlatform;

beforeAll(async () => {
  // Public-looking hosts only: no private-URL allowance here.
  svc = await startService();
  p = await svc.platform();
});
afterAll(async () => svc?.close());

describe('webhook endpoint management API (spec 4.1)', () => {
  it('spec 4.1: create, retrieve, list, update and delete round trip', async () => {
    const created = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url: 'https://merchant.example.com/hooks',
      enabled_events: ['payment.succeeded', 'payment.failed'],
      description: 'orders',
      metadata: { team: 'payments' },
    });
    expect(created.status).toBe(201);
    const ep = created.body;
    expect(ep).toMatchObject({
      object: 'webhook_endpoint',
      url: 'https://merchant.example.com/hooks',
      enabled_events: ['payment.succeeded', 'payment.failed'],
      description: 'orders',
      metadata: { team: 'payments' },
      status: 'enabled',
      environment: 'sandbox',
    });
    expect(ep.id).toMatch(/^we_[0-9A-Za-z]{24}$/);
    expect(ep.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(ep.updated_at).toBe(ep.created_at);

    const got = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${ep.id}`);
    expect(got.status).toBe(200);
    const { secret: _secret, ...withoutSecret } = ep;
    expect(got.body).toEqual(withoutSecret);

    const list = await svc.api(p.keys.sandbox, 'GET', '/api/v1/webhook_endpoints');
    expect(list.status).toBe(200);
    expect(list.body.object).toBe('list');
    expect(list.body.has_more).toBe(false);
    expect(list.body.data.map((e: { id: string }) => e.id)).toContain(ep.id);

    const patched = await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${ep.id}`, {
      url: 'https://merchant.example.com/v2/hooks',
      enabled_events: ['*'],
      description: null,
      metadata: { team: '', region: 'eu' },
      status: 'disabled',
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      id: ep.id,
      url: 'https://merchant.example.com/v2/hooks',
      enabled_events: ['*'],
      description: null,
      metadata: { region: 'eu' },
      status: 'disabled',
    });

    const deleted = await svc.api(p.keys.sandbox, 'DELETE', `/api/v1/webhook_endpoints/${ep.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id: ep.id, object: 'webhook_endpoint', deleted: true });
    expect((await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${ep.id}`)).status).toBe(404);
    expect((await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${ep.id}`, { status: 'enabled' })).status).toBe(404);
    expect((await svc.api(p.keys.sandbox, 'DELETE', `/api/v1/webhook_endpoints/${ep.id}`)).status).toBe(404);
    const after = await svc.api(p.keys.sandbox, 'GET', '/api/v1/webhook_endpoints');
    expect(after.body.data.map((e: { id: string }) => e.id)).not.toContain(ep.id);
  });

  it('spec 2.3, 4.1 rule 2: the whsec_ secret is in the create response only, and encrypted at rest', async () => {
    const created = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url: 'https://a.example.com/h',
      enabled_events: ['*'],
    });
    const secret: string = created.body.secret;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9]{44}$/);
    const id = created.body.id;
    const answers = [
      await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${id}`),
      await svc.api(p.keys.sandbox, 'GET', '/api/v1/webhook_endpoints?limit=100'),
      await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${id}`, { description: 'x' }),
      await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${id}`, { url: 'not a url' }),
    ];
    for (const a of answers) {
      const text = JSON.stringify(a.body);
      expect(text).not.toContain(secret);
      expect(text).not.toContain('"secret"');
    }
    const rows = await svc.ctx.database.query<{ secret_ciphertext: string }>(
      'SELECT secret_ciphertext FROM webhook_endpoints WHERE id = $1',
      [id],
    );
    const stored = rows[0]!.secret_ciphertext;
    expect(stored).not.toContain(secret);
    expect(stored).not.toContain(secret.slice(6));
    expect(svc.ctx.endpoints.decryptSecret({ id, secretCiphertext: stored })).toBe(secret);
    // Bound to its row: the same ciphertext on another id does not decrypt.
    expect(() => svc.ctx.endpoints.decryptSecret({ id: 'we_other', secretCiphertext: stored })).toThrow();
  });

  it('spec 4.1 rule 3: a live endpoint must subscribe to the four required types (create)', async () => {
    const missing = await svc.api(p.keys.live, 'POST', '/api/v1/webhook_endpoints', {
      url: 'https://live.example.com/h',
      enabled_events: ['payment.succeeded', 'payment.failed'],
    });
    expect(missing.status).toBe(422);
    expect(missing.body.error.code).toBe('live_subscription_incomplete');
    expect(missing.body.error.param).toBe('enabled_events');
    expect(missing.body.error.message).toContain('payment.expired');
    expect(missing.body.error.message).toContain('checkout_session.completed');

    const full = await svc.api(p.keys.live, 'POST', '/api/v1/webhook_endpoints', {
      url: 'https://live.example.com/h',
      enabled_events: LIVE_EVENTS,
    });
    expect(full.status).toBe(201);
    expect(full.body.environment).toBe('live');
    const wildcard = await svc.api(p.keys.live, 'POST', '/api/v1/webhook_endpoints', {
      url: 'https://live.example.com/h2',
      enabled_events: ['*'],
    });
    expect(wildcard.status).toBe(201);
    // The rule is for live endpoints; a sandbox endpoint may subscribe to one type.
    const sandbox = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url: 'https://s.example.com/h',
      enabled_events: ['payment.created'],
    });
    expect(sandbox.status).toBe(201);
  });

  it('spec 4.1 rule 3: the live subscription rule holds on PATCH too', async () => {
    const created = await svc.api(p.keys.live, 'POST', '/api/v1/webhook_endpoints', {
      url: 'https://live.example.com/p',
      enabled_events: ['*'],
    });
    const res = await svc.api(p.keys.live, 'PATCH', `/api/v1/webhook_endpoints/${created.body.id}`, {
      enabled_events: ['payment.succeeded'],
    });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('live_subscription_incomplete');
    expect(res.body.error.message).toContain('payment.failed');
    const unchanged = await svc.api(p.keys.live, 'GET', `/api/v1/webhook_endpoints/${created.body.id}`);
    expect(unchanged.body.enabled_events).toEqual(['*']);
    const ok = await svc.api(p.keys.live, 'PATCH', `/api/v1/webhook_endpoints/${created.body.id}`, {
      enabled_events: [...LIVE_EVENTS, 'payment.created'],
    });
    expect(ok.status).toBe(200);
  });

  it('live endpoints need https; sandbox endpoints may use http', async () => {
    const live = await svc.api(p.keys.live, 'POST', '/api/v1/webhook_endpoints', {
      url: 'http://live.example.com/h',
      enabled_events: ['*'],
    });
    expect(live.status).toBe(422);
    expect(live.body.error).toMatchObject({ code: 'url_insecure', param: 'url' });
    const sandbox = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url: 'http://sandbox.example.com/h',
      enabled_events: ['*'],
    });
    expect(sandbox.status).toBe(201);
  });

  it('lists newest first with limit, starting_after and has_more', async () => {
    const other = await svc.platform('pager');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await svc.api(other.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
        url: `https://p${i}.example.com/h`,
        enabled_events: ['*'],
      });
      ids.push(r.body.id);
    }
    const newestFirst = [...ids].reverse();
    const page1 = await svc.api(other.keys.sandbox, 'GET', '/api/v1/webhook_endpoints?limit=2');
    expect(page1.body.data.map((e: { id: string }) => e.id)).toEqual(newestFirst.slice(0, 2));
    expect(page1.body.has_more).toBe(true);
    const page2 = await svc.api(other.keys.sandbox, 'GET', `/api/v1/webhook_endpoints?limit=2&starting_after=${newestFirst[1]}`);
    expect(page2.body.data.map((e: { id: string }) => e.id)).toEqual(newestFirst.slice(2, 4));
    const page3 = await svc.api(other.keys.sandbox, 'GET', `/api/v1/webhook_endpoints?limit=2&starting_after=${newestFirst[3]}`);
    expect(page3.body.data.map((e: { id: string }) => e.id)).toEqual(newestFirst.slice(4));
    expect(page3.body.has_more).toBe(false);
    const all = await svc.api(other.keys.sandbox, 'GET', '/api/v1/webhook_endpoints');
    expect(all.body.data).toHaveLength(5);
  });

  it('accepts every catalog type (spec 6.1)', async () => {
    const r = await svc.api(p.keys.live, 'POST', '/api/v1/webhook_endpoints', {
      url: 'https://all.example.com/h',
      enabled_events: [...EVENT_TYPES],
    });
    expect(r.status).toBe(201);
    expect(r.body.enabled_events).toEqual([...EVENT_TYPES]);
  });

  it('serves an OpenAPI document generated from the route schemas', async () => {
    const r = await svc.api(undefined, 'GET', '/api/v1/openapi.json');
    expect(r.status).toBe(200);
    expect(r.body.openapi).toMatch(/^3\./);
    expect(Object.keys(r.body.paths)).toEqual(expect.arrayContaining(['/api/v1/webhook_endpoints', '/api/v1/webhook_endpoints/{id}']));
    expect(Object.keys(r.body.paths['/api/v1/webhook_endpoints/{id}'])).toEqual(expect.arrayContaining(['get', 'patch', 'delete']));
    expect(JSON.stringify(r.body.paths['/api/v1/webhook_endpoints'].post)).toContain('enabled_events');
  });

  it('answers malformed paths in the API error shape: bad percent-encoding 400, over-long id 404', async () => {
    const bad = await svc.api(p.keys.sandbox, 'GET', '/api/v1/webhook_endpoints/%E0%A4%A');
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_url');
    const long = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/we_${'x'.repeat(200)}`);
    expect(long.status).toBe(404);
    expect(long.body.error.code).toBe('resource_missing');
    const text = await svc.api(undefined, 'POST', '/internal/v1/events', 'hello', { 'content-type': 'text/plain' });
    expect([401, 404, 415]).toContain(text.status);
    expect(text.body.error).toBeDefined();
  });

  it('answers /healthz and /readyz', async () => {
    expect((await svc.api(undefined, 'GET', '/healthz')).body).toEqual({ status: 'ok' });
    const ready = await svc.api(undefined, 'GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe('ready');
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { EVENT_TYPES, REQUIRED_LIVE_EVENT_TYPES } from '@payhooks/contract';
import { startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';

/**
 * The event catalog for merchants (`GET /api/v1/event_types`): every type, what it means and
 * which change sends it, its JSON Schema and an example the schema accepts; and the schema
 * accepts what payhooks really delivers, checked on events a real receiver got.
 */

let svc: TestService;
let p: CreatedPlatform;
let receiver: TestReceiver;

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true, allowHttpUrls: true });
  p = await svc.platform('Catalog');
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

const ajv = () => new Ajv2020({ strict: false, allErrors: true });

describe('GET /api/v1/event_types', () => {
  it('lists every type of the catalog with a description, when it is sent, a self-contained JSON Schema and an example it accepts', async () => {
    const r = await svc.api(p.keys.sandbox, 'GET', '/api/v1/event_types');
    expect(r.status).toBe(200);
    expect(r.body.object).toBe('list');
    const entries = r.body.data as { type: string; description: string; sent_when: string; schema: object; example: object }[];
    expect(entries.map((e) => e.type)).toEqual([...EVENT_TYPES]);
    for (const e of entries) {
      expect(e.description.length, e.type).toBeGreaterThan(10);
      expect(e.sent_when.length, e.type).toBeGreaterThan(10);
      expect(JSON.stringify(e.schema), `${e.type}: self-contained`).not.toContain('$ref');
      const validate = ajv().compile(e.schema);
      expect([e.type, validate(e.example), validate.errors]).toEqual([e.type, true, null]);
      expect((e.example as { type: string }).type).toBe(e.type);
    }
    // A schema is the type's own: another type's example is refused.
    const succeeded = entries.find((e) => e.type === 'payment.succeeded')!;
    const failed = entries.find((e) => e.type === 'payment.failed')!;
    expect(ajv().compile(succeeded.schema)(failed.example)).toBe(false);
    expect(REQUIRED_LIVE_EVENT_TYPES.every((t) => entries.some((e) => e.type === t))).toBe(true);
  });

  it('each schema accepts the events payhooks really delivered of that type', async () => {
    const ep = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url: receiver.url, enabled_events: ['*'] });
    expect(ep.status).toBe(201);
    // Real payments and a checkout session, changed through the API as a merchant would.
    const pay = (
      await svc.api(p.keys.sandbox, 'POST', '/api/v1/payments', { amount: '5.00', asset_code: 'USDC.ETH', metadata: { order: 'o1' } })
    ).body;
    for (const status of ['processing', 'succeeded'])
      expect((await svc.api(p.keys.sandbox, 'POST', `/api/v1/sandbox/payments/${pay.id}/simulate`, { status })).status).toBe(200);
    const other = (await svc.api(p.keys.sandbox, 'POST', '/api/v1/payments', { amount: '7.00', asset_code: 'USDC.ETH' })).body;
    expect((await svc.api(p.keys.sandbox, 'POST', `/api/v1/payments/${other.id}/cancel`)).status).toBe(200);
    const session = (
      await svc.api(p.keys.sandbox, 'POST', '/api/v1/checkout_sessions', {
        amount: '9.00',
        asset_code: 'USDC.ETH',
        success_url: 'https://shop.example/ok',
      })
    ).body;
    expect((await svc.api(p.keys.sandbox, 'POST', `/api/v1/checkout_sessions/${session.id}/expire`)).status).toBe(200);
    await svc.ctx.createWorker().drain();
    const entries = (await svc.api(p.keys.sandbox, 'GET', '/api/v1/event_types')).body.data as { type: string; schema: object }[];
    const bodies = receiver.requests.map((req) => JSON.parse(req.raw.toString()) as { type: string });
    expect([...new Set(bodies.map((b) => b.type))].sort()).toEqual([
      'checkout_session.expired',
      'payment.cancelled',
      'payment.created',
      'payment.expired',
      'payment.processing',
      'payment.succeeded',
    ]);
    for (const body of bodies) {
      const validate = ajv().compile(entries.find((e) => e.type === body.type)!.schema);
      expect([body.type, validate(body), validate.errors]).toEqual([body.type, true, null]);
    }
  });

  it('needs an API key, like the rest of the API', async () => {
    const r = await fetch(`${svc.url}/api/v1/event_types`);
    expect(r.status).toBe(401);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { startService, type TestService } from '../helpers/service.ts';
import { startVariant, type VariantService } from '../helpers/variant.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import { expectError } from '../helpers/errors.ts';

/**
 * Bad input is always a 4xx in the error shape `{error: {type, code, message, param?}}`, never
 * a 500: malformed JSON, wrong types, unknown fields, __proto__ keys, arrays, empty and huge
 * bodies, wrong content types, and each field's own rules (spec 4.1 Create/Update, our rules).
 */

let svc: TestService;
let p: CreatedPlatform;
let endpointId: string;
let liveEndpointId: string;

const COLLECTION = '/api/v1/webhook_endpoints';
const OK = { url: 'https://merchant.example.com/hooks', enabled_events: ['*'] };
const ALLOWED_STATUSES = new Set([200, 201, 400, 404, 409, 413, 415, 422]);

beforeAll(async () => {
  // Hundreds of requests from one key: the rate limit is tested in rate-limit.test.ts.
  svc = await startService({ rateLimitPerSecond: 1_000_000, rateLimitBurst: 1_000_000 });
  p = await svc.platform();
  endpointId = (await svc.api(p.keys.sandbox, 'POST', COLLECTION, OK)).body.id;
  liveEndpointId = (await svc.api(p.keys.live, 'POST', COLLECTION, OK)).body.id;
});
afterAll(async () => svc?.close());

const post = (body: unknown, headers?: Record<string, string>, key = p.keys.sandbox) => svc.api(key, 'POST', COLLECTION, body, headers);
const patch = (body: unknown, headers?: Record<string, string>, id = endpointId) =>
  svc.api(p.keys.sandbox, 'PATCH', `${COLLECTION}/${id}`, body, headers);

describe('request bodies that are not a JSON object', () => {
  it.each([
    ['{', 'truncated'],
    ['{"url": ', 'truncated value'],
    ['not json', 'plain words'],
    ["{'url': 'https://x.example.com'}", 'single quotes'],
    ['{"url":"https://x.example.com",}', 'trailing comma'],
    ['NaN', 'NaN'],
    ['{"a":1}{"b":2}', 'two documents'],
    ['\u0000', 'a NUL byte'],
  ])('malformed JSON (%s) is 400 invalid_json', async (raw) => {
    for (const send of [post, patch]) expectError(await send(raw), 400, 'invalid_json');
  });

  it('an empty body with a JSON content type is 400 invalid_json', async () => {
    expectError(await post(''), 400, 'invalid_json');
    expectError(await patch(''), 400, 'invalid_json');
  });

  it('no body and no content type is a 400 asking for a JSON object', async () => {
    const res = await svc.api(p.keys.sandbox, 'POST', COLLECTION);
    expectError(res, 400);
    expect(['invalid_json', 'parameter_invalid', 'parameter_missing']).toContain(res.body.error.code);
  });

  it.each([
    ['[]', 'an empty array'],
    ['[{"url":"https://x.example.com/h","enabled_events":["*"]}]', 'an array holding a valid object'],
    ['"https://x.example.com/h"', 'a string'],
    ['42', 'a number'],
    ['true', 'a boolean'],
    ['null', 'null'],
  ])('a body that is %s instead of an object is 400', async (raw) => {
    expectError(await post(raw), 400);
    expectError(await patch(raw), 400);
  });

  it('__proto__ and constructor.prototype keys are refused with 400 and pollute nothing', async () => {
    const bodies = [
      '{"__proto__":{"polluted":"yes"},"url":"https://x.example.com/h","enabled_events":["*"]}',
      '{"url":"https://x.example.com/h","enabled_events":["*"],"metadata":{"__proto__":{"polluted":"yes"}}}',
      '{"constructor":{"prototype":{"polluted":"yes"}},"url":"https://x.example.com/h","enabled_events":["*"]}',
      '{"url":"https://x.example.com/h","enabled_events":["*"],"metadata":{"constructor":{"prototype":{"polluted":"yes"}}}}',
    ];
    for (const raw of bodies) {
      expectError(await post(raw), 400);
      expectError(await patch(raw), 400);
    }
    // The service runs in this process: its prototypes are ours.
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('polluted');
    const list = await svc.api(p.keys.sandbox, 'GET', `${COLLECTION}?limit=100`);
    expect(list.body.data).toHaveLength(1);
  });

  it('a body over the size limit is 413 body_too_large', async () => {
    const huge = { ...OK, description: 'x'.repeat(200_000) };
    expectError(await post(huge), 413, 'body_too_large');
    expectError(await patch(huge), 413, 'body_too_large');
    expectError(await post(JSON.stringify(huge).slice(0, -10)), 413, 'body_too_large'); // too big and malformed: size first
  });

  it('a streamed (chunked) body over the size limit is 413 too', async () => {
    const chunk = new TextEncoder().encode(`{"url":"https://x.example.com/h","enabled_events":["*"],"description":"${'y'.repeat(16_384)}`);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 8) controller.enqueue(sent === 1 ? chunk : new TextEncoder().encode('y'.repeat(16_384)));
        else {
          controller.enqueue(new TextEncoder().encode('"}'));
          controller.close();
        }
      },
    });
    const res = await fetch(svc.url + COLLECTION, {
      method: 'POST',
      headers: { authorization: `Bearer ${p.keys.sandbox}`, 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    const body = await res.json();
    expectError({ status: res.status, body, headers: res.headers }, 413, 'body_too_large');
  });

  it.each([
    ['text/plain', 'plain text'],
    ['application/x-www-form-urlencoded', 'a form'],
    ['multipart/form-data; boundary=x', 'multipart'],
    ['application/xml', 'XML'],
  ])('a %s body (%s) is 415 unsupported_media_type', async (contentType) => {
    expectError(await post(JSON.stringify(OK), { 'content-type': contentType }), 415, 'unsupported_media_type');
    expectError(await patch(JSON.stringify({ description: 'x' }), { 'content-type': contentType }), 415, 'unsupported_media_type');
  });

  it('application/json with a utf-8 charset is accepted', async () => {
    const res = await post(JSON.stringify({ ...OK, description: 'charset ü' }), { 'content-type': 'application/json; charset=utf-8' });
    expect(res.status).toBe(201);
    expect(res.body.description).toBe('charset ü');
    await svc.api(p.keys.sandbox, 'DELETE', `${COLLECTION}/${res.body.id}`);
  });
});

describe('unknown fields', () => {
  it.each([
    ['urll', 'https://x.example.com/h'],
    ['secret', 'whsec_mine'],
    ['id', 'we_mine'],
    ['environment', 'live'],
    ['status', 'disabled'],
    ['created_at', '2026-01-01T00:00:00Z'],
  ])('create with unknown field %s is 400 parameter_unknown naming it', async (field, value) => {
    const err = expectError(await post({ ...OK, [field]: value }), 400, 'parameter_unknown', field);
    expect(err.message).toContain(field);
  });

  it.each([['secret'], ['id'], ['environment'], ['object'], ['enabled_event']])(
    'update with unknown field %s is 400 parameter_unknown',
    async (field) => {
      expectError(await patch({ [field]: 'x' }), 400, 'parameter_unknown', field);
    },
  );

  it('a refused update changed nothing', async () => {
    const before = await svc.api(p.keys.sandbox, 'GET', `${COLLECTION}/${endpointId}`);
    await patch({ description: 'changed', secret: 'whsec_x' });
    await patch({ description: 'changed', url: 'ftp://x.example.com' });
    await patch({ description: 'changed', enabled_events: ['nope'] });
    const after = await svc.api(p.keys.sandbox, 'GET', `${COLLECTION}/${endpointId}`);
    expect(after.body).toEqual(before.body);
  });
});

describe('each field of create and update', () => {
  const long = (n: number) => 'a'.repeat(n);
  const urlOf = (n: number) => `https://example.com/${'p'.repeat(n - 'https://example.com/'.length)}`;
  const many = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v']));

  // [name, body fields, status, code, param]
  const cases: [string, Record<string, unknown>, number, string, string | undefined][] = [
    ['url missing (create)', { url: undefined }, 400, 'parameter_missing', 'url'],
    ['url a number', { url: 5 }, 400, 'parameter_invalid', 'url'],
    ['url null', { url: null }, 400, 'parameter_invalid', 'url'],
    ['url an object', { url: { href: 'https://x.example.com' } }, 400, 'parameter_invalid', 'url'],
    ['url an array', { url: ['https://x.example.com'] }, 400, 'parameter_invalid', 'url'],
    ['url empty', { url: '' }, 400, 'parameter_invalid', 'url'],
    ['url not a URL', { url: 'not a url' }, 400, 'url_invalid', 'url'],
    ['url relative', { url: '/hooks' }, 400, 'url_invalid', 'url'],
    ['url ftp', { url: 'ftp://example.com/h' }, 400, 'url_invalid', 'url'],
    ['url javascript:', { url: 'javascript:alert(1)' }, 400, 'url_invalid', 'url'],
    ['url with credentials', { url: 'https://user:pw@example.com/h' }, 400, 'url_invalid', 'url'],
    ['url with a fragment', { url: 'https://example.com/h#x' }, 400, 'url_invalid', 'url'],
    ['url with a NUL byte', { url: 'https://example.com/h\u0000' }, 400, 'url_invalid', 'url'],
    ['url with a space', { url: 'https://example.com/a b' }, 400, 'url_invalid', 'url'],
    ['url over 2048 characters', { url: urlOf(2049) }, 400, 'parameter_invalid', 'url'],
    ['url to a loopback address', { url: 'https://127.0.0.1/h' }, 422, 'url_not_allowed', 'url'],
    ['url to cloud metadata', { url: 'http://169.254.169.254/latest/meta-data/' }, 422, 'url_not_allowed', 'url'],
    ['url to a private address', { url: 'https://10.0.0.8/h' }, 422, 'url_not_allowed', 'url'],
    ['url to a private address (172.16/12)', { url: 'https://172.20.1.1/h' }, 422, 'url_not_allowed', 'url'],
    ['url to CGNAT', { url: 'https://100.64.1.1/h' }, 422, 'url_not_allowed', 'url'],
    ['url to IPv6 loopback', { url: 'https://[::1]/h' }, 422, 'url_not_allowed', 'url'],
    ['url to IPv4-mapped loopback', { url: 'https://[::ffff:127.0.0.1]/h' }, 422, 'url_not_allowed', 'url'],
    ['url to IPv6 unique-local', { url: 'https://[fd00::5]/h' }, 422, 'url_not_allowed', 'url'],
    ['url to localhost', { url: 'https://localhost:3000/h' }, 422, 'url_not_allowed', 'url'],
    ['url to a decimal loopback', { url: 'https://2130706433/h' }, 422, 'url_not_allowed', 'url'],
    ['enabled_events missing (create)', { enabled_events: undefined }, 400, 'parameter_missing', 'enabled_events'],
    ['enabled_events a string', { enabled_events: 'payment.succeeded' }, 400, 'parameter_invalid', 'enabled_events'],
    ['enabled_events null', { enabled_events: null }, 400, 'parameter_invalid', 'enabled_events'],
    ['enabled_events an object', { enabled_events: { 'payment.succeeded': true } }, 400, 'parameter_invalid', 'enabled_events'],
    ['enabled_events empty', { enabled_events: [] }, 400, 'parameter_invalid', 'enabled_events'],
    ['enabled_events over 100 entries', { enabled_events: Array(101).fill('*') }, 400, 'parameter_invalid', 'enabled_events'],
    ['enabled_events with a number', { enabled_events: ['*', 5] }, 400, 'parameter_invalid', 'enabled_events[1]'],
    ['spec 6.1: enabled_events with an empty type', { enabled_events: [''] }, 400, 'event_type_unknown', 'enabled_events[0]'],
    ['enabled_events with a nested array', { enabled_events: [['*']] }, 400, 'parameter_invalid', 'enabled_events[0]'],
    [
      'spec 6.1: enabled_events with a type outside the catalog',
      { enabled_events: ['payment.succeeded', 'payment.refunded'] },
      400,
      'event_type_unknown',
      'enabled_events[1]',
    ],
    ['spec 6.1: enabled_events with a NUL type', { enabled_events: ['payment\u0000'] }, 400, 'event_type_unknown', 'enabled_events[0]'],
    ['description a number', { description: 5 }, 400, 'parameter_invalid', 'description'],
    ['description an object', { description: { text: 'x' } }, 400, 'parameter_invalid', 'description'],
    ['description over 5000 characters', { description: long(5001) }, 400, 'parameter_invalid', 'description'],
    ['description with a NUL byte', { description: 'a\u0000b' }, 400, 'invalid_characters', undefined],
    ['metadata a string', { metadata: 'team=payments' }, 400, 'parameter_invalid', 'metadata'],
    ['metadata an array', { metadata: [['team', 'payments']] }, 400, 'parameter_invalid', 'metadata'],
    ['metadata null', { metadata: null }, 400, 'parameter_invalid', 'metadata'],
    ['metadata a number value', { metadata: { team: 5 } }, 400, 'parameter_invalid', 'metadata[team]'],
    ['metadata a null value', { metadata: { team: null } }, 400, 'parameter_invalid', 'metadata[team]'],
    ['metadata an object value', { metadata: { team: { name: 'x' } } }, 400, 'parameter_invalid', 'metadata[team]'],
    ['metadata a value over 500 characters', { metadata: { team: long(501) } }, 400, 'parameter_invalid', 'metadata[team]'],
    ['metadata a key over 40 characters', { metadata: { [long(41)]: 'v' } }, 400, 'parameter_invalid', 'metadata'],
    ['metadata an empty key', { metadata: { '': 'v' } }, 400, 'parameter_invalid', 'metadata'],
    ['metadata over 50 keys', { metadata: many(51) }, 400, 'parameter_invalid', 'metadata'],
    ['metadata with a NUL in a value', { metadata: { team: 'a\u0000' } }, 400, 'invalid_characters', undefined],
    ['metadata with a NUL in a key', { metadata: { 'a\u0000': 'v' } }, 400, 'invalid_characters', undefined],
  ];

  for (const [name, fields, status, code, param] of cases) {
    it(`create: ${name} -> ${status} ${code}`, async () => {
      const body = Object.fromEntries(Object.entries({ ...OK, ...fields }).filter(([, v]) => v !== undefined));
      expectError(await post(body), status, code, param);
    });
    if (!name.endsWith('(create)')) {
      it(`update: ${name} -> ${status} ${code}`, async () => {
        expectError(await patch(fields), status, code, param);
      });
    }
  }

  it.each([
    ['status an unknown value', { status: 'paused' }, 'status'],
    ['status null', { status: null }, 'status'],
    ['status a boolean', { status: true }, 'status'],
    ['status upper case', { status: 'DISABLED' }, 'status'],
  ])('update: %s -> 400 parameter_invalid', async (_name, fields, param) => {
    expectError(await patch(fields), 400, 'parameter_invalid', param);
  });

  it('update: a live endpoint may not switch to http (422 url_insecure)', async () => {
    const res = await svc.api(p.keys.live, 'PATCH', `${COLLECTION}/${liveEndpointId}`, { url: 'http://example.com/h' });
    expectError(res, 422, 'url_insecure', 'url');
  });

  it('create: a live endpoint needs https (422 url_insecure)', async () => {
    expectError(await post({ ...OK, url: 'http://example.com/h' }, undefined, p.keys.live), 422, 'url_insecure', 'url');
  });

  it('the edges of each limit are accepted', async () => {
    const res = await post({
      url: urlOf(2048),
      enabled_events: Array(100).fill('payment.created'),
      description: long(5000),
      metadata: { ...many(49), [long(40)]: long(500) },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.url).toHaveLength(2048);
    expect(res.body.enabled_events).toEqual(['payment.created']);
    expect(Object.keys(res.body.metadata)).toHaveLength(50);
    const cleared = await svc.api(p.keys.sandbox, 'PATCH', `${COLLECTION}/${res.body.id}`, {
      description: null,
      metadata: { [long(40)]: '' },
    });
    expect(cleared.status).toBe(200);
    expect(cleared.body.description).toBeNull();
    expect(Object.keys(cleared.body.metadata)).toHaveLength(49);
    await svc.api(p.keys.sandbox, 'DELETE', `${COLLECTION}/${res.body.id}`);
  });

  it('an empty update is allowed and changes nothing but updated_at at most', async () => {
    const before = await svc.api(p.keys.sandbox, 'GET', `${COLLECTION}/${endpointId}`);
    const res = await patch({});
    expect(res.status).toBe(200);
    const { updated_at: _a, ...rest } = res.body;
    const { updated_at: _b, ...restBefore } = before.body;
    expect(rest).toEqual(restBefore);
  });
});

describe('list query parameters', () => {
  it.each([
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=-1', 'limit'],
    ['limit=abc', 'limit'],
    ['limit=1.5', 'limit'],
    ['limit=', 'limit'],
    ['limit=1&limit=2', 'limit'],
    ['starting_after=', 'starting_after'],
  ])('%s is 400 naming the parameter', async (query, param) => {
    expectError(await svc.api(p.keys.sandbox, 'GET', `${COLLECTION}?${query}`), 400, undefined, param);
  });

  it('an unknown query parameter is 400 parameter_unknown', async () => {
    expectError(await svc.api(p.keys.sandbox, 'GET', `${COLLECTION}?ending_before=we_x`), 400, 'parameter_unknown', 'ending_before');
  });

  it('starting_after an unknown id is 400 resource_missing', async () => {
    expectError(
      await svc.api(p.keys.sandbox, 'GET', `${COLLECTION}?starting_after=we_000000000000000000000000`),
      400,
      'resource_missing',
      'starting_after',
    );
  });

  it('starting_after with a NUL byte is a 400, not a 500', async () => {
    expectError(await svc.api(p.keys.sandbox, 'GET', `${COLLECTION}?starting_after=we_%00`), 400);
  });

  it('limit=1 and limit=100 are accepted', async () => {
    const one = await svc.api(p.keys.sandbox, 'GET', `${COLLECTION}?limit=1`);
    expect(one.status).toBe(200);
    expect(one.body.data).toHaveLength(1);
    expect((await svc.api(p.keys.sandbox, 'GET', `${COLLECTION}?limit=100`)).status).toBe(200);
  });
});

describe('URL policy switches', () => {
  let privateOk: VariantService;
  let httpOk: VariantService;
  let dev: VariantService;
  beforeAll(async () => {
    [privateOk, httpOk, dev] = await Promise.all([
      startVariant(svc, { allowPrivateUrls: true }),
      startVariant(svc, { allowHttpUrls: true }),
      startVariant(svc, { dev: true }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([privateOk?.close(), httpOk?.close(), dev?.close()]);
  });

  it('PAYHOOKS_ALLOW_PRIVATE_URLS admits private and loopback hosts, but live still needs https', async () => {
    for (const url of ['https://127.0.0.1:4000/h', 'https://10.0.0.8/h', 'https://[::1]/h', 'https://localhost/h']) {
      const res = await privateOk.api(p.keys.live, 'POST', COLLECTION, { url, enabled_events: ['*'] });
      expect(res.status, url).toBe(201);
    }
    expectError(
      await privateOk.api(p.keys.live, 'POST', COLLECTION, { url: 'http://127.0.0.1/h', enabled_events: ['*'] }),
      422,
      'url_insecure',
      'url',
    );
  });

  it('PAYHOOKS_ALLOW_HTTP_URLS admits http for live, but not private hosts', async () => {
    expect((await httpOk.api(p.keys.live, 'POST', COLLECTION, { url: 'http://example.com/h', enabled_events: ['*'] })).status).toBe(201);
    expectError(
      await httpOk.api(p.keys.live, 'POST', COLLECTION, { url: 'http://127.0.0.1/h', enabled_events: ['*'] }),
      422,
      'url_not_allowed',
      'url',
    );
  });

  it('development mode admits http://127.0.0.1 for live and sandbox', async () => {
    for (const key of [p.keys.live, p.keys.sandbox]) {
      const res = await dev.api(key, 'POST', COLLECTION, { url: 'http://127.0.0.1:4000/webhooks', enabled_events: ['*'] });
      expect(res.status).toBe(201);
    }
  });

  it('without them, PATCH to a private host is refused too', async () => {
    expectError(await patch({ url: 'https://192.168.1.10/h' }), 422, 'url_not_allowed', 'url');
    const ok = await privateOk.api(p.keys.sandbox, 'PATCH', `${COLLECTION}/${endpointId}`, { url: 'https://192.168.1.10/h' });
    expect(ok.status).toBe(200);
    expect((await patch({ url: OK.url })).status).toBe(200);
  });
});

describe('no input gives a 500', () => {
  const anyJson = fc.jsonValue({ maxDepth: 3, stringUnit: 'binary' });
  const endpointish = fc.record(
    {
      url: fc.oneof(anyJson, fc.webUrl(), fc.constantFrom('https://example.com/h', 'http://[::1]/h', 'https://a@b/h')),
      enabled_events: fc.oneof(
        anyJson,
        fc.array(fc.oneof(fc.constantFrom('*', 'payment.succeeded', 'payment.refunded'), fc.string({ unit: 'binary' })), { maxLength: 5 }),
      ),
      description: fc.oneof(anyJson, fc.string({ unit: 'binary' })),
      metadata: fc.oneof(
        anyJson,
        fc.dictionary(fc.string({ unit: 'binary', maxLength: 45 }), fc.oneof(fc.string({ unit: 'binary' }), anyJson), { maxKeys: 4 }),
      ),
      status: fc.oneof(anyJson, fc.constantFrom('enabled', 'disabled')),
    },
    { requiredKeys: [] },
  );
  const check = async (status: number, body: any, what: string) => {
    expect(ALLOWED_STATUSES.has(status), `${status} for ${what}: ${JSON.stringify(body)}`).toBe(true);
    if (status >= 400) expect(typeof body?.error?.code, what).toBe('string');
  };

  it('random JSON bodies on create and update answer 2xx or 4xx in the error shape', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(anyJson, endpointish), async (value) => {
        const raw = JSON.stringify(value) ?? 'null';
        const created = await post(raw);
        await check(created.status, created.body, `POST ${raw}`);
        const updated = await patch(raw);
        await check(updated.status, updated.body, `PATCH ${raw}`);
      }),
      { numRuns: 150 },
    );
  });

  it('random bytes as a JSON body answer 4xx in the error shape', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'binary', maxLength: 200 }), async (raw) => {
        const res = await post(raw);
        await check(res.status, res.body, `POST ${JSON.stringify(raw)}`);
      }),
      { numRuns: 100 },
    );
  });

  it('random path ids and query strings answer 2xx or 4xx in the error shape', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: 'binary', minLength: 1, maxLength: 60 }),
        fc.string({ unit: 'binary', maxLength: 60 }),
        async (id, q) => {
          const get = await svc.api(p.keys.sandbox, 'GET', `${COLLECTION}/${encodeURIComponent(id)}`);
          await check(get.status, get.body, `GET id ${JSON.stringify(id)}`);
          const list = await svc.api(
            p.keys.sandbox,
            'GET',
            `${COLLECTION}?starting_after=${encodeURIComponent(q)}&limit=${encodeURIComponent(q)}`,
          );
          await check(list.status, list.body, `GET list ${JSON.stringify(q)}`);
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe('errors on closed lists (enums) name the allowed values', () => {
  it('a body field (update status)', async () => {
    const res = await svc.api(p.keys.sandbox, 'PATCH', `${COLLECTION}/${endpointId}`, { status: 'paused' });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({
      code: 'parameter_invalid',
      param: 'status',
      message: "Invalid 'status' (got 'paused'): status must be one of: enabled, disabled.",
    });
  });

  it('a query parameter (the delivery log filter)', async () => {
    const res = await svc.api(p.keys.sandbox, 'GET', '/api/v1/webhook_deliveries?state=done');
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({
      code: 'parameter_invalid',
      param: 'state',
      message: "Invalid 'state' (got 'done'): state must be one of: pending, delivered, failed_retrying, exhausted, cancelled.",
    });
  });

  it('spec 6.1: an event type filter outside the catalog', async () => {
    const res = await svc.api(p.keys.sandbox, 'GET', '/api/v1/events?type=payment.refunded');
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'event_type_unknown', param: 'type' });
    expect(res.body.error.message).toContain('type must be one of: payment.created, payment.requires_action,');
  });
});

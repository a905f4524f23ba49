import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { request } from 'undici';
import { startService, type TestService } from '../helpers/service.ts';
import { publish } from '../helpers/publish.ts';
import { expectError, expectErrorShape } from '../helpers/errors.ts';
import { routesOf, type RouteInfo } from '../../src/api/app.ts';
import { MAX_JSON_DEPTH } from '../../src/api/json-body.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';

/**
 * Input never causes a 500: invalid Unicode and deep nesting in any JSON body, requests Node's
 * HTTP parser refuses, and a fuzz run over every route the app registers (so routes added later
 * are fuzzed too), each answered in our error shape.
 */

const INTERNAL_TOKEN = 'fuzz-internal-token-0123456789';
let svc: TestService;
let p: CreatedPlatform;
let ids: Record<string, string>;
let routes: RouteInfo[];

beforeAll(async () => {
  svc = await startService({ rateLimitPerSecond: 1_000_000, rateLimitBurst: 1_000_000, internalToken: INTERNAL_TOKEN });
  p = await svc.platform();
  const endpoint = (
    await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url: 'https://merchant.example.com/hooks', enabled_events: ['*'] })
  ).body;
  const { event } = await publish(svc.ctx, p.merchant_id);
  const [delivery] = (await svc.api(p.keys.sandbox, 'GET', '/api/v1/webhook_deliveries')).body.data;
  const payment = (await svc.api(p.keys.sandbox, 'POST', '/api/v1/payments', { amount: '10.00', asset_code: 'USDC.ETH' })).body;
  const session = (
    await svc.api(p.keys.sandbox, 'POST', '/api/v1/checkout_sessions', {
      amount: '10.00',
      asset_code: 'USDC.ETH',
      success_url: 'https://shop.example.com/ok',
    })
  ).body;
  ids = { endpoint: endpoint.id, event: event.id, delivery: delivery.id, payment: payment.id, session: session.id };
  // The listen session route answers a stream that stays open while its client is connected:
  // its input is tested in listen.test.ts.
  routes = routesOf(svc.app).filter((r) => !(r.method === 'POST' && r.url === '/api/v1/listen_sessions'));
});
afterAll(async () => svc?.close());

/** Sends raw bytes and resolves to everything the server wrote before closing. */
function rawRequest(bytes: string): Promise<string> {
  const { port } = new URL(svc.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    let out = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (out += d));
    socket.on('close', () => resolve(out));
    socket.on('error', reject);
    socket.write(bytes, 'latin1');
    // A well-formed request keeps the connection open; stop waiting once an answer is in.
    setTimeout(() => socket.end(), 300);
  });
}

/**
 * Percent-encodes any string, lone surrogates included (as their 3-byte WTF-8 form, which is
 * invalid UTF-8: exactly what a hostile client can send), where encodeURIComponent throws.
 */
function pct(s: string): string {
  let out = '';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    out +=
      c >= 0xd800 && c <= 0xdfff
        ? [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('')
        : encodeURIComponent(ch);
  }
  return out;
}

function parseRaw(out: string): { status: number; contentType: string; requestId: string; body: any } {
  const [head, ...rest] = out.split('\r\n\r\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head!)?.[1]);
  const contentType = /\r\ncontent-type: ([^\r]+)/i.exec(head!)?.[1] ?? '';
  const requestId = /\r\nrequest-id: ([^\r]+)/i.exec(head!)?.[1] ?? '';
  return { status, contentType, requestId, body: JSON.parse(rest.join('\r\n\r\n')) };
}

describe('JSON bodies: Unicode and nesting', () => {
  const create = (raw: string) => svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', raw);

  it('a lone UTF-16 surrogate in a metadata value is 400 invalid_unicode naming the field, and nothing is stored', async () => {
    const before = (await svc.api(p.keys.sandbox, 'GET', '/api/v1/webhook_endpoints?limit=100')).body.data.length;
    const res = await create('{"url":"https://m.example.com/h","enabled_events":["*"],"metadata":{"order":"a\\ud800b"}}');
    expectError(res, 400, 'invalid_unicode', 'metadata.order');
    const after = (await svc.api(p.keys.sandbox, 'GET', '/api/v1/webhook_endpoints?limit=100')).body.data.length;
    expect(after).toBe(before);
  });

  it('a lone surrogate in a key, in an array item and in a URL is refused too; a valid pair is accepted', async () => {
    expectError(
      await create('{"url":"https://m.example.com/h","enabled_events":["*"],"metadata":{"k\\udc00":"v"}}'),
      400,
      'invalid_unicode',
      'metadata.k\udc00',
    );
    expectError(
      await create('{"url":"https://m.example.com/h","enabled_events":["*","\\ud83d"]}'),
      400,
      'invalid_unicode',
      'enabled_events[1]',
    );
    expectError(await create('{"url":"https://m.example.com/\\udfff","enabled_events":["*"]}'), 400, 'invalid_unicode', 'url');
    const ok = await create('{"url":"https://m.example.com/h","enabled_events":["*"],"metadata":{"emoji":"\\ud83d\\ude00"}}');
    expect(ok.status).toBe(201);
    expect(ok.body.metadata.emoji).toBe('😀');
  });

  it(`nesting beyond ${MAX_JSON_DEPTH} levels is 400 nesting_too_deep on the internal events API (4,100 levels used to overflow the stack)`, async () => {
    const deep = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
    const body = (n: number) =>
      `{"type":"payment.succeeded","merchant_id":"${p.merchant_id}","environment":"sandbox","data":{"object":${deep(n)}}}`;
    const headers = { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' };
    const res = await fetch(`${svc.url}/internal/v1/events`, { method: 'POST', headers, body: body(4_100) });
    expectError({ status: res.status, headers: res.headers, body: await res.json() }, 400, 'nesting_too_deep');
    // Just inside the limit, the body gets past the parser (and is judged on its content).
    const inside = await fetch(`${svc.url}/internal/v1/events`, { method: 'POST', headers, body: body(MAX_JSON_DEPTH - 3) });
    const insideBody = (await inside.json()) as { error: { code: string } };
    expect(inside.status).toBe(400);
    expect(insideBody.error.code).not.toBe('nesting_too_deep');
  });
});

describe('requests the HTTP parser refuses get our error shape', () => {
  const cases: Array<[string, string, number, string]> = [
    ['a space in the path', 'GET /api/v1/webhook endpoints HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'malformed_http'],
    [
      'an invalid Content-Length',
      'POST /api/v1/webhook_endpoints HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n',
      400,
      'malformed_http',
    ],
    [
      'Content-Length and Transfer-Encoding together',
      'POST /api/v1/webhook_endpoints HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      400,
      'malformed_http',
    ],
    ['an invalid method', 'GE@T / HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'malformed_http'],
    ['an unknown HTTP version', 'GET / HTTP/9.9\r\nHost: x\r\n\r\n', 400, 'malformed_http'],
    [
      'headers over 16 KiB',
      `GET /api/v1/webhook_endpoints HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      431,
      'headers_too_large',
    ],
  ];
  for (const [name, bytes, status, code] of cases) {
    it(`${name}: ${status} ${code}`, async () => {
      const res = parseRaw(await rawRequest(bytes));
      expect(res.status).toBe(status);
      expect(res.contentType).toMatch(/^application\/json/);
      expectErrorShape(res.body);
      expect(res.body.error.code).toBe(code);
      expect(res.requestId).toMatch(/^req_/);
    });
  }

  it('CONNECT is answered 405 method_not_allowed in our shape, not closed without an answer', async () => {
    const res = parseRaw(await rawRequest('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'));
    expect(res.status).toBe(405);
    expect(res.contentType).toMatch(/^application\/json/);
    expectErrorShape(res.body);
    expect(res.body.error.code).toBe('method_not_allowed');
    expect(res.requestId).toMatch(/^req_/);
  });

  it('an HTTP/1.1 request without Host is 400 host_required in our shape, not an empty 400', async () => {
    const res = parseRaw(await rawRequest('GET /api/v1/webhook_endpoints HTTP/1.1\r\nConnection: close\r\n\r\n'));
    expect(res.status).toBe(400);
    expect(res.contentType).toMatch(/^application\/json/);
    expectErrorShape(res.body);
    expect(res.body.error.code).toBe('host_required');
    expect(res.requestId).toMatch(/^req_/);
    // HTTP/1.0 has no Host requirement.
    const old = parseRaw(await rawRequest('GET /healthz HTTP/1.0\r\n\r\n'));
    expect(old.status).toBe(200);
  });

  it('a method the router does not know is a 404 in our shape', async () => {
    const res = parseRaw(await rawRequest('PROPFIND /api/v1/webhook_endpoints HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'));
    expect(res.status).toBe(404);
    expectErrorShape(res.body);
  });
});

/** Routes of pages for a browser, not the JSON API. */
const BROWSER_PAGES = /^\/(checkout|portal)(\/|$)/;

describe('fuzz: every route, no 5xx', () => {
  // Strings that include lone surrogates, NULs and other control characters.
  const nasty = fc.string({
    unit: fc.oneof(
      { weight: 6, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
      { weight: 1, arbitrary: fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)) },
      { weight: 1, arbitrary: fc.constantFrom('\u0000', '"', '\\', '/', '..', '%', '?', '#', '&', '=') },
    ),
    maxLength: 40,
  });
  const json = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.constantFrom(null, true, false, 0, -1, 1e308, 10.5),
      nasty,
      fc.constantFrom('payment.succeeded', 'sandbox', 'live', '10.00', 'USDC.ETH', 'https://m.example.com/h', '*', 'enabled', 'disabled'),
      fc.array(tie('value'), { maxLength: 4 }),
      fc.dictionary(
        fc.oneof(
          nasty,
          fc.constantFrom(
            'url',
            'enabled_events',
            'metadata',
            'status',
            'amount',
            'asset_code',
            'type',
            'data',
            'object',
            'environment',
            'merchant_id',
          ),
        ),
        tie('value'),
        { maxKeys: 5 },
      ),
    ),
  })).value;
  const auth = () =>
    fc
      .constantFrom<Array<string | undefined>>([p.keys.sandbox, p.keys.live, INTERNAL_TOKEN, 'sk_test_nope', undefined])
      .chain((keys) => fc.constantFrom(...keys));
  const param = () =>
    fc.oneof(
      fc.constantFrom(ids.endpoint, ids.event, ids.delivery, ids.payment, ids.session, 'pay_x', 'cs_x'),
      nasty.filter((s) => s.length > 0),
    );

  /**
   * Valid bodies of the routes that take one, keyed by `METHOD url`. Mutating one field of a
   * valid body reaches the code behind validation (the database, the domain), where random JSON
   * is refused at the first field. A route missing here is still fuzzed with random bodies.
   */
  const templates = (): Record<string, Record<string, unknown>> => ({
    'POST /api/v1/webhook_endpoints': {
      url: 'https://m.example.com/h',
      enabled_events: ['*'],
      description: 'd',
      metadata: { order: 'o1' },
    },
    'POST /api/v1/webhook_endpoints/:id/rotate_secret': { expire_previous_in: 60 },
    'PATCH /api/v1/webhook_endpoints/:id': {
      url: 'https://m.example.com/h2',
      enabled_events: ['payment.succeeded'],
      description: 'd',
      metadata: { order: 'o2' },
      status: 'enabled',
    },
    'POST /api/v1/payments': { amount: '25.00', asset_code: 'USDC.ETH', metadata: { order_id: 'o4' } },
    'POST /api/v1/checkout_sessions': {
      amount: '25.00',
      asset_code: 'USDC-E.ARB',
      metadata: { order_id: 'o5' },
      success_url: 'https://shop.example.com/ok',
      cancel_url: 'https://shop.example.com/cart',
      expires_in: 600,
    },
    'POST /api/v1/sandbox/payments/:id/simulate': { status: 'processing', double_delivery: true },
    'POST /internal/v1/payments/:id/transitions': { status: 'under_review' },
    'POST /internal/v1/events': {
      type: 'payment.succeeded',
      merchant_id: p.merchant_id,
      environment: 'sandbox',
      data: {
        object: {
          id: 'pay_fuzz',
          object: 'payment',
          status: 'succeeded',
          amount: '10.00',
          asset_code: 'USDC.ETH',
          metadata: { order: 'o3' },
        },
      },
    },
  });
  /** Leaves of a JSON value as paths, so one of them can be replaced. */
  const leaves = (v: unknown, path: string[] = []): string[][] =>
    v && typeof v === 'object' ? Object.entries(v).flatMap(([k, c]) => leaves(c, [...path, k])) : [path];
  const mutate = (template: Record<string, unknown>, pick: number, value: unknown, extraKey: string | null) => {
    const copy = structuredClone(template);
    const all = leaves(copy);
    const path = all[pick % all.length]!;
    let at: any = copy;
    for (const k of path.slice(0, -1)) at = at[k];
    if (path.length > 0) at[path.at(-1)!] = value;
    if (extraKey !== null && !Array.isArray(at)) at[extraKey] = value;
    return copy;
  };

  it('random methods, ids, query strings, bodies and credentials on every registered route answer < 500 in the error shape', async () => {
    expect(routes.length).toBeGreaterThan(5);
    const bodyTemplates = templates();
    const requests = fc.record({
      route: fc.constantFrom(...routes),
      auth: auth(),
      params: fc.array(param(), { minLength: 4, maxLength: 4 }),
      query: fc.array(
        fc.tuple(fc.oneof(nasty, fc.constantFrom('limit', 'starting_after', 'state', 'status', 'type', 'endpoint_id')), nasty),
        { maxLength: 3 },
      ),
      body: fc.option(
        fc.oneof(
          json.map((v) => JSON.stringify(v) ?? 'null'),
          nasty,
          fc.constant('template'),
        ),
        { nil: undefined },
      ),
      mutation: fc.tuple(fc.nat(), json, fc.option(nasty, { nil: null })),
      contentType: fc.constantFrom(
        'application/json',
        'application/json',
        'application/json; charset=utf-8',
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
      ),
    });
    let n = 0;
    await fc.assert(
      fc.asyncProperty(requests, async (r) => {
        const template = bodyTemplates[`${r.route.method} ${r.route.url}`];
        if (r.body === 'template') r.body = template ? JSON.stringify(mutate(template, ...r.mutation)) : '{}';
        let i = 0;
        const path = r.route.url.replace(/:[A-Za-z_]+/g, () => pct(r.params[i++]!)).replace('*', pct(r.params[3]!));
        const qs = r.query.map(([k, v]) => `${pct(k)}=${pct(v)}`).join('&');
        const headers: Record<string, string> = {};
        if (r.auth) headers.authorization = `Bearer ${r.auth}`;
        if (r.body !== undefined) headers['content-type'] = r.contentType;
        // undici's request, unlike fetch, sends a body with any method (GET with a body is fuzz too).
        const res = await request(`${svc.url}${path}${qs ? `?${qs}` : ''}`, { method: r.route.method as 'GET', headers, body: r.body });
        const text = await res.body.text();
        const what = `${r.route.method} ${path}?${qs} body=${JSON.stringify(r.body)} -> ${res.statusCode} ${text.slice(0, 300)}`;
        n++;
        expect(res.statusCode, what).toBeLessThan(500);
        if (res.statusCode >= 400 && BROWSER_PAGES.test(r.route.url)) {
          // Pages a person's browser opens (the hosted checkout, the portal's UI) answer errors as pages.
          expect(res.headers['content-type'], what).toMatch(/^(text\/html|application\/json)/);
        } else if (res.statusCode >= 400) {
          expect(res.headers['content-type'], what).toMatch(/^application\/json/);
          expectErrorShape(JSON.parse(text), what);
        }
      }),
      { numRuns: 2_000 },
    );
    expect(n).toBe(2_000);
    // Two thousand requests take a few seconds alone, far longer on a busy 2-core machine.
  }, 240_000);
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signPayload, parseSignatureHeader } from '@payhooks/contract';
import { startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type Received, type TestReceiver } from '../helpers/receiver.ts';
import { publish } from '../helpers/publish.ts';
import { inviteAndAccept, portalSignIn } from '../helpers/portal.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';
import { MAX_CUSTOM_HEADERS, MAX_CUSTOM_HEADER_BYTES } from '../../src/endpoints/custom-headers.ts';

/**
 * Issue 36 item 4: an endpoint's own request headers, set by the merchant, sent with every
 * attempt to a real receiver, shown in the delivery log, never signed; refused with a 400 and a
 * code when they would override a header payhooks or HTTP sets, or are malformed or too many.
 */

let svc: TestService;
let worker: DeliveryWorker;
let receiver: TestReceiver;
let p: CreatedPlatform;

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true, allowHttpUrls: true });
  worker = svc.ctx.createWorker();
  receiver = await startReceiver();
  p = await svc.platform();
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

const at = (path: string) => receiver.url.replace('/webhooks', path);
const hits = (path: string) => receiver.requests.filter((r) => r.path === path);

async function sendOne(path: string, platform = p): Promise<Received> {
  const before = hits(path).length;
  await publish(svc.ctx, platform.merchant_id);
  await worker.drain();
  expect(hits(path)).toHaveLength(before + 1);
  return hits(path).at(-1)!;
}

async function lastAttempt(endpointId: string, platform = p) {
  const r = await svc.api(platform.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?endpoint_id=${endpointId}&limit=1`);
  return r.body.data[0].attempts.at(-1) as { request_headers: Record<string, string> };
}

const create = (body: Record<string, unknown>, key = p.keys.sandbox) =>
  svc.api(key, 'POST', '/api/v1/webhook_endpoints', { url: at('/refused'), enabled_events: ['*'], ...body });

describe('custom headers on an endpoint', () => {
  it('are stored as given, sent with every attempt (names as written), shown in the log, and not signed', async () => {
    const headers = { Authorization: 'Basic dXNlcjpwYXNz', 'X-Shop-Region': 'eu-west 1', 'x-lower': 'a\tb' };
    const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url: at('/custom'), enabled_events: ['*'], headers });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.headers).toEqual(headers);
    expect((await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${r.body.id}`)).body.headers).toEqual(headers);

    const req = await sendOne('/custom');
    expect(req.headers).toMatchObject({ authorization: 'Basic dXNlcjpwYXNz', 'x-shop-region': 'eu-west 1', 'x-lower': 'a\tb' });
    expect(req.rawHeaders).toMatchObject(headers);
    // The contract's headers are all there, unchanged.
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['service-event-id']).toBe(JSON.parse(req.raw.toString('utf8')).id);
    // Not signed: the signature is the HMAC of t.body alone, as for an endpoint without headers.
    const { timestamp } = parseSignatureHeader(String(req.headers['service-signature']))!;
    expect(req.headers['service-signature']).toBe(signPayload(r.body.secret, timestamp, req.raw));
    expect(Object.keys(req.headers).filter((h) => h.startsWith('webhook-'))).toEqual([]);

    const attempt = await lastAttempt(r.body.id);
    expect(attempt.request_headers).toMatchObject(headers);
    expect(attempt.request_headers['Service-Signature']).toBe(req.headers['service-signature']);
  });

  it('an update replaces the whole set, null removes them; the log keeps what each attempt was sent with', async () => {
    const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url: at('/replace'),
      enabled_events: ['*'],
      headers: { 'X-A': '1', 'X-B': '2' },
    });
    const id = r.body.id as string;
    const first = await sendOne('/replace');
    expect(first.headers).toMatchObject({ 'x-a': '1', 'x-b': '2' });
    const firstLog = await lastAttempt(id);

    const patch = (headers: unknown) => svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${id}`, { headers });
    expect((await patch({ 'X-C': '3' })).body.headers).toEqual({ 'X-C': '3' });
    const second = await sendOne('/replace');
    expect(second.headers['x-c']).toBe('3');
    expect(second.headers['x-a']).toBeUndefined();
    // An update without `headers` keeps them.
    expect((await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${id}`, { description: 'd' })).body.headers).toEqual({
      'X-C': '3',
    });

    expect((await patch(null)).body.headers).toEqual({});
    const third = await sendOne('/replace');
    expect(third.headers['x-c']).toBeUndefined();
    expect(await lastAttempt(id)).toMatchObject({ request_headers: expect.not.objectContaining({ 'X-C': '3' }) });
    expect((await patch({ 'X-D': '4' })).body.headers).toEqual({ 'X-D': '4' });
    expect((await patch({})).body.headers).toEqual({});

    // The first attempt's log entry still shows what it was sent with.
    const all = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?endpoint_id=${id}&limit=10`);
    const logged = all.body.data.flatMap((d: { attempts: unknown[] }) => d.attempts) as Array<{ request_headers: Record<string, string> }>;
    expect(logged.map((a) => a.request_headers['X-A'] ?? a.request_headers['X-C'] ?? null).sort()).toEqual(['1', '3', null].sort());
    expect(firstLog.request_headers).toMatchObject({ 'X-A': '1', 'X-B': '2' });
  });

  it('with standard_webhooks on too, both kinds arrive and neither overrides the other', async () => {
    const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url: at('/both'),
      enabled_events: ['*'],
      standard_webhooks: true,
      headers: { 'X-Both': 'yes' },
    });
    const req = await sendOne('/both');
    expect(req.headers['x-both']).toBe('yes');
    expect(req.headers['webhook-id']).toBe(req.headers['service-event-id']);
    const attempt = await lastAttempt(r.body.id);
    expect(attempt.request_headers).toEqual({
      'Content-Type': 'application/json',
      'User-Agent': req.headers['user-agent'],
      'Service-Event-Id': req.headers['service-event-id'],
      'Service-Signature': req.headers['service-signature'],
      'webhook-id': req.headers['webhook-id'],
      'webhook-timestamp': req.headers['webhook-timestamp'],
      'webhook-signature': req.headers['webhook-signature'],
      'X-Both': 'yes',
    });
  });

  it("a portal viewer sees the headers' names but never their values, in the endpoint and in each attempt's request headers; a developer sees them in full", async () => {
    const credential = 'Bearer viewer-must-not-see-0123456789';
    const admin = await portalSignIn(svc.url, p.portal.email, p.portal.password);
    const viewer = await inviteAndAccept(svc.url, admin, `viewer-${Date.now()}@headers.example`, 'viewer');
    const developer = await inviteAndAccept(svc.url, admin, `dev-${Date.now()}@headers.example`, 'developer');
    const created = await admin.call('POST', '/endpoints', {
      url: at('/viewer-headers'),
      enabled_events: ['*'],
      headers: { Authorization: credential, 'X-Shop': 'eu' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((await sendOne('/viewer-headers')).headers.authorization).toBe(credential);
    const id = created.body.id as string;
    const deliveries = await viewer.call('GET', `/deliveries?endpoint_id=${id}`);
    const deliveryId = deliveries.body.data[0].id as string;

    const seen = {
      endpoint: await viewer.call('GET', `/endpoints/${id}`),
      list: await viewer.call('GET', '/endpoints?limit=100'),
      deliveries,
      delivery: await viewer.call('GET', `/deliveries/${deliveryId}`),
    };
    for (const [what, r] of Object.entries(seen)) {
      expect(r.status, what).toBe(200);
      expect(r.text, what).not.toContain('viewer-must-not-see');
    }
    expect(seen.endpoint.body.headers).toEqual({ Authorization: '[redacted]', 'X-Shop': '[redacted]' });
    expect(seen.list.body.data.find((e: { id: string }) => e.id === id).headers).toEqual({
      Authorization: '[redacted]',
      'X-Shop': '[redacted]',
    });
    const sent = seen.delivery.body.attempts[0].request_headers;
    expect(sent).toMatchObject({ Authorization: '[redacted]', 'X-Shop': '[redacted]', 'Content-Type': 'application/json' });
    expect(sent['Service-Signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(seen.deliveries.body.data[0].last_attempt.request_headers.Authorization).toBe('[redacted]');

    // Roles that can edit the endpoint see what they set.
    expect((await developer.call('GET', `/endpoints/${id}`)).body.headers).toEqual({ Authorization: credential, 'X-Shop': 'eu' });
    expect((await developer.call('GET', `/deliveries/${deliveryId}`)).body.attempts[0].request_headers.Authorization).toBe(credential);
  });

  it('the portal sets them like the API', async () => {
    const portal = await portalSignIn(svc.url, p.portal.email, p.portal.password);
    const created = await portal.call('POST', '/endpoints', {
      url: at('/portal-headers'),
      enabled_events: ['*'],
      headers: { 'X-Portal': 'p' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.headers).toEqual({ 'X-Portal': 'p' });
    expect((await sendOne('/portal-headers')).headers['x-portal']).toBe('p');
    const refused = await portal.call('PATCH', `/endpoints/${created.body.id}`, { headers: { Host: 'evil.example' } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('header_reserved');
    expect((await portal.call('GET', `/endpoints/${created.body.id}`)).body.headers).toEqual({ 'X-Portal': 'p' });
  });

  it('the audit trail names the headers but never their values', async () => {
    const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url: at('/audited'),
      enabled_events: ['*'],
      headers: { Authorization: 'Bearer very-secret-token' },
    });
    await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${r.body.id}`, { headers: { Authorization: 'Bearer other-token' } });
    const trail = await svc.api(p.keys.sandbox, 'GET', `/api/v1/audit_events?resource_id=${r.body.id}`);
    expect(trail.status).toBe(200);
    const text = JSON.stringify(trail.body);
    expect(text).not.toContain('very-secret-token');
    expect(text).not.toContain('other-token');
    const changes = trail.body.data.map((e: { changes: { headers?: unknown } }) => e.changes?.headers);
    expect(changes).toContainEqual({ Authorization: '[redacted]' });
  });
});

describe('refused headers: 400 with a code and the header as param', () => {
  const reserved = [
    'Service-Event-Id',
    'service-signature',
    'Service-Anything',
    'webhook-id',
    'Webhook-Timestamp',
    'webhook-signature',
    'Webhook-Future',
    'Content-Type',
    'content-length',
    'Content-Encoding',
    'User-Agent',
    'traceparent',
    'Tracestate',
    'Host',
    'Connection',
    'Keep-Alive',
    'Proxy-Authorization',
    'proxy-connection',
    'TE',
    'Trailer',
    'Transfer-Encoding',
    'Upgrade',
    'Expect',
  ];
  it.each(reserved)('%s: header_reserved', async (name) => {
    const r = await create({ headers: { 'X-Fine': 'ok', [name]: 'x' } });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ type: 'invalid_request_error', code: 'header_reserved', param: `headers[${name}]` });
  });

  it.each([
    ['a space', 'X Name'],
    ['a colon', 'X-Name:'],
    ['a slash', 'X/Name'],
    ['non-ASCII', 'X-Näme'],
    ['empty', ''],
    ['a newline', 'X-A\r\nX-B'],
  ])('a name with %s: header_name_invalid', async (_what, name) => {
    const r = await create({ headers: { [name]: 'x' } });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'header_name_invalid', param: `headers[${name}]` });
  });

  it.each([
    ['CR LF (header injection)', 'a\r\nX-Injected: 1'],
    ['a lone LF', 'a\nb'],
    ['NUL', 'a\u0000b'],
    ['another control character', 'a\u0007b'],
    ['DEL', 'a\u007fb'],
    ['non-ASCII', 'café'],
    ['a leading space', ' a'],
    ['a trailing tab', 'a\t'],
  ])('a value with %s: header_value_invalid', async (_what, value) => {
    const r = await create({ headers: { 'X-Value': value } });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'header_value_invalid', param: 'headers[X-Value]' });
  });

  it('a value that is not a string is refused by the schema', async () => {
    for (const value of [1, true, null, ['a'], { a: 'b' }]) {
      const r = await create({ headers: { 'X-Value': value } });
      expect(r.status, JSON.stringify(value)).toBe(400);
    }
  });

  it('the same name twice in different case: header_duplicate', async () => {
    const r = await create({ headers: { 'X-Dup': '1', 'x-dup': '2' } });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'header_duplicate', param: 'headers[x-dup]' });
  });

  it(`more than ${MAX_CUSTOM_HEADERS} headers: too_many_custom_headers; exactly ${MAX_CUSTOM_HEADERS} are fine`, async () => {
    const many = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`X-H${i}`, 'v']));
    const r = await create({ headers: many(MAX_CUSTOM_HEADERS + 1) });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'too_many_custom_headers', param: 'headers' });
    expect((await create({ headers: many(MAX_CUSTOM_HEADERS) })).status).toBe(201);
  });

  it(`more than ${MAX_CUSTOM_HEADER_BYTES} bytes of names and values: custom_headers_too_large; exactly that many are fine`, async () => {
    const sized = (total: number) => ({ 'X-Big': 'v'.repeat(total - 'X-Big'.length) });
    const r = await create({ headers: sized(MAX_CUSTOM_HEADER_BYTES + 1) });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'custom_headers_too_large', param: 'headers' });
    expect((await create({ headers: sized(MAX_CUSTOM_HEADER_BYTES) })).status).toBe(201);
  });

  it('an update is refused the same way and changes nothing', async () => {
    const r = await create({ headers: { 'X-Keep': 'k' } });
    const bad = await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${r.body.id}`, {
      headers: { 'Transfer-Encoding': 'chunked' },
      description: 'changed',
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('header_reserved');
    const got = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${r.body.id}`);
    expect(got.body).toMatchObject({ headers: { 'X-Keep': 'k' }, description: null });
  });
});

describe('tenant isolation', () => {
  it("another Platform's key can neither read nor change an endpoint's headers (404), and its own endpoints send only their own", async () => {
    const other = await svc.platform();
    const mine = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url: at('/tenant-a'),
      enabled_events: ['*'],
      headers: { 'X-Tenant': 'a' },
    });
    const theirs = await svc.api(other.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url: at('/tenant-b'), enabled_events: ['*'] });
    expect((await svc.api(other.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${mine.body.id}`)).status).toBe(404);
    const patched = await svc.api(other.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${mine.body.id}`, {
      headers: { 'X-Tenant': 'b' },
    });
    expect(patched.status).toBe(404);
    expect((await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${mine.body.id}`)).body.headers).toEqual({ 'X-Tenant': 'a' });
    expect(JSON.stringify((await svc.api(other.keys.sandbox, 'GET', '/api/v1/webhook_endpoints')).body)).not.toContain('X-Tenant');
    const req = await sendOne('/tenant-b', other);
    expect(req.headers['x-tenant']).toBeUndefined();
    expect(theirs.body.headers).toEqual({});
  });
});

import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAuthorizationServer, startTokenGateway, type Admitted, type AuthorizationServer } from '../helpers/oauth-server.ts';
import { ManualClock, startService, type TestService } from '../helpers/service.ts';
import { publish } from '../helpers/publish.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';

/**
 * An endpoint's `authentication: {type: "oauth2_client_credentials"}` (RFC 6749 section 4.4)
 * against a real authorization server (oidc-provider, over HTTPS with a CA made here) and a
 * receiver whose gateway accepts only the tokens that server issued and has not revoked: a token
 * is asked for once and shared until shortly before it expires (by the injected clock), a 401
 * brings one new token, a token endpoint that fails fails the attempt as `authentication_failed`,
 * and neither the client secret nor a token is in an API answer, an audit entry, a column in
 * clear or a log line.
 */

const SECRET = 'cs-5b1e07d2-never-shown';
const POST_SECRET = 'cs-post-88c1-never-shown';
const TOKEN_TTL_S = 600;

let dir: string;
let auth: AuthorizationServer;
let tokenUrl: string;
let caPem: string;
let gateway: Awaited<ReturnType<typeof startTokenGateway>>;
let receiverUrl: string;
/** Tokens the gateway no longer takes (revoked), and whether it refuses every token. */
const revoked = new Set<string>();
let refuseAll = false;
let seen: Admitted[];
const tokenRequests = () => auth.tokenRequests();

const clock = new ManualClock(Date.now());
let svc: TestService;
let worker: DeliveryWorker;
let p: CreatedPlatform;
const logLines: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'payhooks-oauth2-'));
  auth = await startAuthorizationServer(
    dir,
    [
      { client_id: 'payhooks-basic', client_secret: SECRET, scope: 'webhooks' },
      { client_id: 'payhooks-post', client_secret: POST_SECRET, token_endpoint_auth_method: 'client_secret_post' },
    ],
    TOKEN_TTL_S,
  );
  ({ tokenUrl, caPem } = auth);
  gateway = await startTokenGateway(auth, { refuse: (token) => refuseAll || revoked.has(token) });
  seen = gateway.seen;
  receiverUrl = gateway.url;
  const sink = new Writable({
    write(chunk, _enc, done) {
      logLines.push(String(chunk));
      done();
    },
  });
  svc = await startService({ allowPrivateUrls: true, allowHttpUrls: true }, { clock, logger: pino({ level: 'debug' }, sink) });
  worker = svc.ctx.createWorker();
  p = await svc.platform();
});
afterAll(async () => {
  await svc?.close();
  await auth?.close();
  await gateway?.close();
  rmSync(dir, { recursive: true, force: true });
});

const oauth = (overrides: Record<string, unknown> = {}) => ({
  type: 'oauth2_client_credentials',
  token_url: tokenUrl,
  client_id: 'payhooks-basic',
  client_secret: SECRET,
  scope: 'webhooks',
  ...overrides,
});

async function create(authentication: Record<string, unknown>, path = '/webhooks') {
  const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
    url: receiverUrl.replace('/webhooks', path),
    enabled_events: ['*'],
    // The authorization server's certificate is of a private CA: the endpoint trusts it, for the
    // token endpoint as for the receiver.
    tls: { ca_certificates: caPem },
    authentication,
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.id as string;
}

async function disable(endpointId: string) {
  await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${endpointId}`, { status: 'disabled' });
}

interface Attempt {
  status_code: number | null;
  error_kind: string | null;
  error_message: string | null;
  request_headers: Record<string, string> | null;
}

async function attemptsOf(endpointId: string): Promise<Attempt[]> {
  const r = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?endpoint_id=${endpointId}&limit=1`);
  return r.body.data[0].attempts as Attempt[];
}

async function deliver(endpointId: string, events = 1): Promise<Attempt> {
  for (let i = 0; i < events; i++) {
    // A millisecond apart, so the log's newest delivery is the last one published.
    clock.advance(1);
    await publish(svc.ctx, p.merchant_id);
  }
  await worker.drain();
  return (await attemptsOf(endpointId)).at(-1)!;
}

describe('receiver authentication: OAuth 2.0 client credentials', () => {
  let endpointId: string;

  it('a token is asked for once, shared by the attempts, sent as Bearer and shown redacted', async () => {
    endpointId = await create(oauth());
    const r = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${endpointId}`);
    expect(r.body.authentication).toEqual({
      type: 'oauth2_client_credentials',
      token_url: tokenUrl,
      client_id: 'payhooks-basic',
      scope: 'webhooks',
      audience: null,
      client_auth_method: 'client_secret_basic',
    });
    const before = tokenRequests();
    const attempt = await deliver(endpointId, 3);
    expect(attempt.status_code).toBe(200);
    expect(attempt.request_headers!.Authorization).toBe('Bearer [redacted]');
    const accepted = seen.slice(-3);
    expect(accepted.map((s) => s.status)).toEqual([200, 200, 200]);
    expect(new Set(accepted.map((s) => s.token)).size).toBe(1);
    expect(accepted[0]).toMatchObject({ clientId: 'payhooks-basic', scope: 'webhooks' });
    expect(tokenRequests() - before).toBe(1);
  });

  it('kept until shortly before it expires by the injected clock, then a new one is asked for', async () => {
    const before = tokenRequests();
    const first = seen.at(-1)!.token;
    // 90 % of the lifetime, and never within a minute of its end: kept at 530 s, renewed at 540 s.
    clock.advance(530_000);
    expect((await deliver(endpointId)).status_code).toBe(200);
    expect(tokenRequests() - before).toBe(0);
    expect(seen.at(-1)!.token).toBe(first);
    clock.advance(10_000);
    expect((await deliver(endpointId)).status_code).toBe(200);
    expect(tokenRequests() - before).toBe(1);
    expect(seen.at(-1)!.token).not.toBe(first);
  });

  it('a 401 from the receiver brings one new token and the request is sent again in the same attempt', async () => {
    const token = seen.at(-1)!.token!;
    revoked.add(token);
    const before = tokenRequests();
    const seenBefore = seen.length;
    const attempt = await deliver(endpointId);
    expect(attempt.status_code).toBe(200);
    expect(seen.slice(seenBefore).map((s) => s.status)).toEqual([401, 200]);
    expect(seen.at(-1)!.token).not.toBe(token);
    expect(tokenRequests() - before).toBe(1);
    // One attempt in the log for that delivery: the retry with the new token is part of it.
    expect(await attemptsOf(endpointId)).toHaveLength(1);
  });

  it('a receiver that refuses every token gets one new token per attempt, not a loop: the attempt is its 401', async () => {
    refuseAll = true;
    try {
      const before = tokenRequests();
      const seenBefore = seen.length;
      const attempt = await deliver(endpointId);
      expect(attempt.status_code).toBe(401);
      expect(attempt.error_kind).toBe('http_status');
      expect(seen.slice(seenBefore).map((s) => s.status)).toEqual([401, 401]);
      expect(tokenRequests() - before).toBe(1);
    } finally {
      refuseAll = false;
    }
    await disable(endpointId);
  });

  it('client_secret_post sends the client in the body (the server allows only that for this client)', async () => {
    const id = await create(
      oauth({ client_id: 'payhooks-post', client_secret: POST_SECRET, scope: null, client_auth_method: 'client_secret_post' }),
    );
    expect((await deliver(id)).status_code).toBe(200);
    expect(seen.at(-1)).toMatchObject({ status: 200, clientId: 'payhooks-post' });
    await disable(id);
  });

  it('a token endpoint that fails fails the attempt as authentication_failed, sends nothing, and is asked again after a pause', async () => {
    const wrong = await create(oauth({ client_secret: 'not-the-secret' }), '/wrong');
    const seenBefore = seen.length;
    const refused = await deliver(wrong);
    expect(refused).toMatchObject({ status_code: null, error_kind: 'authentication_failed' });
    expect(refused.error_message).toContain('HTTP 401');
    expect(refused.error_message).toContain('invalid_client');
    expect(refused.error_message).not.toContain('not-the-secret');
    await disable(wrong);

    const id = await create(oauth(), '/down');
    auth.setDown(true);
    const down = await deliver(id);
    expect(down).toMatchObject({ status_code: null, error_kind: 'authentication_failed' });
    expect(down.error_message).toContain('HTTP 503 (temporarily_unavailable)');
    // Within the pause the token endpoint is not asked again: the next attempt fails the same way.
    const before = tokenRequests();
    const listed = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?endpoint_id=${id}&limit=1`);
    const deliveryId = listed.body.data[0].id as string;
    const scope = { platformId: p.platform_id, environment: 'sandbox' as const, actor: { type: 'operator' as const, id: 'test' } };
    await svc.ctx.deliveries.replay(scope, deliveryId);
    expect(tokenRequests()).toBe(before);
    expect((await attemptsOf(id)).at(-1)).toMatchObject({ error_kind: 'authentication_failed' });
    auth.setDown(false);
    clock.advance(6_000);
    await svc.ctx.deliveries.replay(scope, deliveryId);
    expect((await attemptsOf(id)).at(-1)).toMatchObject({ status_code: 200 });
    expect(seen.length).toBeGreaterThan(seenBefore);
    expect(seen.slice(seenBefore).every((s) => s.status === 200)).toBe(true);
    await disable(id);

    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const unreachable = await create(oauth({ token_url: `https://127.0.0.1:${port}/token` }), '/unreachable');
    const none = await deliver(unreachable);
    expect(none).toMatchObject({ status_code: null, error_kind: 'authentication_failed' });
    expect(none.error_message).toContain('could not be reached: Connection refused');
    await disable(unreachable);
  });

  it('refused with a clear error: a token URL that is not https, has a query, or is not a URL', async () => {
    const refused = async (overrides: Record<string, unknown>, param: string) => {
      const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
        url: receiverUrl,
        enabled_events: ['*'],
        authentication: oauth(overrides),
      });
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.error.param).toBe(param);
      expect(JSON.stringify(r.body)).not.toContain(SECRET);
    };
    await refused({ token_url: tokenUrl.replace('https:', 'http:') }, 'authentication[token_url]');
    await refused({ token_url: `${tokenUrl}?client_secret=x` }, 'authentication[token_url]');
    await refused({ token_url: 'not a url' }, 'authentication[token_url]');
    await refused({ client_id: 'a\r\nb' }, 'authentication[client_id]');
    await refused({ client_auth_method: 'private_key_jwt' }, 'authentication[client_auth_method]');
    // The message is about the type that was sent, not the first kind's fields.
    const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url: receiverUrl,
      enabled_events: ['*'],
      authentication: oauth({ client_auth_method: 'private_key_jwt' }),
    });
    expect(r.body.error.message).toBe(
      "Invalid 'authentication[client_auth_method]' (got 'private_key_jwt'): authentication[client_auth_method] must be one of: client_secret_basic, client_secret_post.",
    );
  });

  it('the client secret and the tokens are in no API answer, audit entry, column in clear or log line', async () => {
    const tokens = [...new Set(seen.map((s) => s.token).filter((t): t is string => t !== null))];
    expect(tokens.length).toBeGreaterThan(1);
    const answers = [
      await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${endpointId}`),
      await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?endpoint_id=${endpointId}`),
      await svc.api(p.keys.sandbox, 'GET', `/api/v1/audit_events?resource_id=${endpointId}`),
    ];
    const rows = await svc.ctx.database.query<Record<string, unknown>>('SELECT * FROM webhook_endpoints', []);
    const attempts = await svc.ctx.database.query<Record<string, unknown>>('SELECT * FROM delivery_attempts', []);
    const everything = [...answers.map((a) => JSON.stringify(a.body)), JSON.stringify(rows), JSON.stringify(attempts), ...logLines];
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(logLines.length).toBeGreaterThan(0);
    for (const text of everything) {
      for (const secret of [SECRET, POST_SECRET, ...tokens]) expect(text).not.toContain(secret);
    }
  });
});

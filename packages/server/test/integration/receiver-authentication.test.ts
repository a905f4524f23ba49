import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { publish } from '../helpers/publish.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';

/**
 * An endpoint's `authentication` (Basic, RFC 7617): sent with every attempt to a real receiver
 * that checks it, shown redacted in the delivery log, and the password in no API answer, audit
 * entry, database column in clear or log line.
 */

const PASSWORD = 'pw-7f3a9c1e-never-shown';
const USERNAME = 'payhooks-gw';
const EXPECTED = `Basic ${Buffer.from(`${USERNAME}:${PASSWORD}`).toString('base64')}`;

let svc: TestService;
let worker: DeliveryWorker;
let receiver: TestReceiver;
let p: CreatedPlatform;
const logLines: string[] = [];

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _enc, done) {
      logLines.push(String(chunk));
      done();
    },
  });
  svc = await startService({ allowPrivateUrls: true, allowHttpUrls: true }, { logger: pino({ level: 'debug' }, sink) });
  worker = svc.ctx.createWorker();
  // The receiver's gateway: 401 without the right credentials.
  receiver = await startReceiver((req) =>
    req.headers.authorization === EXPECTED ? { status: 200 } : { status: 401, body: 'unauthorized' },
  );
  p = await svc.platform();
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

const at = (path: string) => receiver.url.replace('/webhooks', path);
const hits = (path: string) => receiver.requests.filter((r) => r.path === path);
const create = (body: Record<string, unknown>) =>
  svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url: at('/basic'), enabled_events: ['*'], ...body });

async function deliverOne(path: string): Promise<void> {
  const before = hits(path).length;
  await publish(svc.ctx, p.merchant_id);
  await worker.drain();
  expect(hits(path)).toHaveLength(before + 1);
}

async function lastAttempt(endpointId: string) {
  const r = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?endpoint_id=${endpointId}&limit=1`);
  return r.body.data[0].attempts.at(-1) as { status_code: number; request_headers: Record<string, string> };
}

describe('receiver authentication: basic', () => {
  let endpointId: string;

  it('sends Authorization: Basic with every attempt; the receiver that checks it accepts; the log shows it redacted', async () => {
    const r = await create({ authentication: { type: 'basic', username: USERNAME, password: PASSWORD } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    endpointId = r.body.id;
    expect(r.body.authentication).toEqual({ type: 'basic', username: USERNAME });
    await deliverOne('/basic');
    expect(hits('/basic').at(-1)!.headers.authorization).toBe(EXPECTED);
    const attempt = await lastAttempt(endpointId);
    expect(attempt.status_code).toBe(200);
    expect(attempt.request_headers.Authorization).toBe('Basic [redacted]');
  });

  it("a wrong password is the receiver's 401, logged as a failed attempt; a new password is sent from the next attempt", async () => {
    const wrong = await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${endpointId}`, {
      authentication: { type: 'basic', username: USERNAME, password: 'not-the-one' },
    });
    expect(wrong.status, JSON.stringify(wrong.body)).toBe(200);
    await deliverOne('/basic');
    expect((await lastAttempt(endpointId)).status_code).toBe(401);
    await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${endpointId}`, {
      authentication: { type: 'basic', username: USERNAME, password: PASSWORD },
    });
    await deliverOne('/basic');
    expect((await lastAttempt(endpointId)).status_code).toBe(200);
  });

  it('null removes it: no Authorization is sent', async () => {
    const r = await create({ url: at('/removed'), authentication: { type: 'basic', username: USERNAME, password: PASSWORD } });
    const removed = await svc.api(p.keys.sandbox, 'PATCH', `/api/v1/webhook_endpoints/${r.body.id}`, { authentication: null });
    expect(removed.body.authentication).toBeNull();
    await deliverOne('/removed');
    expect(hits('/removed').at(-1)!.headers.authorization).toBeUndefined();
  });

  it('refused with a clear error: a colon in the username, a control character, a broker URL, a custom Authorization header beside it, an unknown type', async () => {
    const refused = async (body: Record<string, unknown>, status: number, code: string, param: string) => {
      const r = await create(body);
      expect(r.status, JSON.stringify(r.body)).toBe(status);
      expect(r.body.error.code).toBe(code);
      expect(r.body.error.param).toBe(param);
      expect(JSON.stringify(r.body)).not.toContain(PASSWORD);
    };
    await refused(
      { authentication: { type: 'basic', username: 'a:b', password: PASSWORD } },
      400,
      'parameter_invalid',
      'authentication[username]',
    );
    await refused(
      { authentication: { type: 'basic', username: 'a', password: `x\r\n${PASSWORD}` } },
      400,
      'parameter_invalid',
      'authentication[password]',
    );
    await refused(
      { url: 'amqps://rabbit.example.com/vhost?exchange=x', authentication: { type: 'basic', username: 'a', password: PASSWORD } },
      400,
      'authentication_not_supported',
      'authentication',
    );
    await refused(
      { headers: { authorization: 'Bearer x' }, authentication: { type: 'basic', username: 'a', password: PASSWORD } },
      400,
      'header_conflicts_with_authentication',
      'headers[authorization]',
    );
    const unknown = await create({ authentication: { type: 'digest', username: 'a', password: PASSWORD } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toMatchObject({
      code: 'parameter_invalid',
      param: 'authentication[type]',
      message:
        "Invalid 'authentication[type]' (got 'digest'): authentication[type] must be one of: basic, mtls, oauth2_client_credentials.",
    });
  });

  it('the password is in no API answer, audit entry, log line or column in clear', async () => {
    const answers = [
      await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${endpointId}`),
      await svc.api(p.keys.sandbox, 'GET', '/api/v1/webhook_endpoints?limit=100'),
      await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?endpoint_id=${endpointId}`),
      await svc.api(p.keys.sandbox, 'GET', `/api/v1/audit_events?resource_id=${endpointId}`),
    ];
    for (const a of answers) {
      expect(a.status).toBe(200);
      expect(JSON.stringify(a.body)).not.toContain(PASSWORD);
      expect(JSON.stringify(a.body)).not.toContain(EXPECTED.slice(6));
    }
    const audit = answers[3]!.body.data as { action: string; changes: Record<string, unknown> }[];
    expect(audit.some((e) => JSON.stringify(e.changes).includes(USERNAME))).toBe(true);
    expect(logLines.length).toBeGreaterThan(0);
    for (const line of logLines) {
      expect(line).not.toContain(PASSWORD);
      expect(line).not.toContain(EXPECTED.slice(6));
    }
    const [row] = await svc.ctx.database.query<Record<string, unknown>>('SELECT * FROM webhook_endpoints WHERE id = $1', [endpointId]);
    expect(JSON.stringify(row)).not.toContain(PASSWORD);
    expect(row!.authentication_ciphertext).toEqual(expect.any(String));
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { publish } from '../helpers/publish.ts';
import type { Resolver } from '../../src/delivery/safe-lookup.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';

/**
 * A DNS stub for names this test owns (the machine has no outside DNS): each name resolves to
 * the addresses given, as a hostile or rebinding DNS server would answer.
 */
const zone: Record<string, Array<{ address: string; family: 4 | 6 }>> = {
  'rebind.test': [{ address: '127.0.0.1', family: 4 }],
  'metadata.test': [{ address: '169.254.169.254', family: 4 }],
  'private.test': [{ address: '10.1.2.3', family: 4 }],
  'ula.test': [{ address: 'fd12::1', family: 6 }],
};
const resolver: Resolver = (hostname, _options, callback) => {
  const answer = zone[hostname];
  if (!answer) return callback(Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
  callback(null, answer);
};

let svc: TestService;
let p: CreatedPlatform;
let receiver: TestReceiver;

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: false, attemptTimeoutMs: 2000 }, { resolver });
  p = await svc.platform();
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

async function attemptTo(url: string, viaDatabase = false) {
  const created = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
    url: viaDatabase ? 'http://placeholder.test/h' : url,
    enabled_events: ['*'],
  });
  expect(created.status).toBe(201);
  // An address that passed registration (public then, or written before a rule change) and
  // points inside now: only the connect-time check stands in the way.
  if (viaDatabase) await svc.ctx.database.query('UPDATE webhook_endpoints SET url = $1 WHERE id = $2', [url, created.body.id]);
  const { event } = await publish(svc.ctx, p.merchant_id);
  await svc.ctx.createWorker().drain();
  const d = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?event_id=${event.id}&endpoint_id=${created.body.id}`);
  await svc.api(p.keys.sandbox, 'DELETE', `/api/v1/webhook_endpoints/${created.body.id}`);
  return d.body.data[0];
}

describe('safe targets (SSRF guard at connect time)', () => {
  it.each(['rebind.test', 'metadata.test', 'private.test', 'ula.test'])(
    'refuses %s, whose DNS answer is a forbidden address, and logs why',
    async (host) => {
      const before = receiver.requests.length;
      const d = await attemptTo(`http://${host}:${receiver.port}/h`);
      expect(d.state).toBe('failed_retrying');
      expect(d.attempts[0]).toMatchObject({ succeeded: false, error_kind: 'forbidden_address', status_code: null });
      expect(d.attempts[0].error_message).toContain('PAYHOOKS_ALLOW_PRIVATE_URLS');
      expect(receiver.requests.length).toBe(before);
    },
  );

  it.each(['127.0.0.1', '[::ffff:127.0.0.1]', '[::1]'])('refuses the literal address %s at connect time', async (host) => {
    const before = receiver.requests.length;
    const d = await attemptTo(`http://${host}:${receiver.port}/h`, true);
    expect(d.attempts[0]).toMatchObject({ succeeded: false, error_kind: 'forbidden_address' });
    expect(receiver.requests.length).toBe(before);
  });

  it('refuses private and loopback URLs at registration too (422)', async () => {
    for (const url of [
      `http://127.0.0.1:${receiver.port}/h`,
      'http://localhost/h',
      'http://[::1]/h',
      'http://169.254.169.254/latest/meta-data',
      'http://[::ffff:10.0.0.1]/h',
    ]) {
      const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url, enabled_events: ['*'] });
      expect(r.status, url).toBe(422);
      expect(r.body.error.code).toBe('url_not_allowed');
    }
  });

  it('delivers to the same receiver when private targets are allowed (control)', async () => {
    const open = await startService({ allowPrivateUrls: true }, { resolver });
    try {
      const q = await open.platform();
      const ep = await open.api(q.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
        url: `http://rebind.test:${receiver.port}/h`,
        enabled_events: ['*'],
      });
      const before = receiver.requests.length;
      await publish(open.ctx, q.merchant_id);
      await open.ctx.createWorker().drain();
      expect(receiver.requests.length).toBe(before + 1);
      const d = await open.api(q.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?endpoint_id=${ep.body.id}`);
      expect(d.body.data[0].state).toBe('delivered');
    } finally {
      await open.close();
    }
  });
});

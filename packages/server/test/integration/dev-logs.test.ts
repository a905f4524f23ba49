import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { publish } from '../helpers/publish.ts';
import { createLogger } from '../../src/logging.ts';

/** Issue 12 item 3: one log line per attempt, pretty in development, JSON at debug otherwise; Request-Id on every response. */
const clock = new ManualClock(Date.UTC(2026, 10, 22, 12, 0, 0));
let receiver: TestReceiver;

function capture() {
  const lines: string[] = [];
  return { lines, stream: new Writable({ write: (c, _e, cb) => (lines.push(...String(c).split('\n').filter(Boolean)), cb()) }) };
}

async function run(dev: boolean, level: 'info' | 'debug', status: number) {
  const { lines, stream } = capture();
  const svc: TestService = await startService({ allowPrivateUrls: true, dev }, { clock, logger: createLogger({ logLevel: level, dev }, stream) });
  try {
    const p = await svc.platform();
    receiver.behave(() => ({ status }));
    const ep = (await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url: receiver.url, enabled_events: ['*'] })).body;
    const { event } = await publish(svc.ctx, p.merchant_id, { type: 'payment.succeeded' });
    await svc.ctx.createWorker().drain();
    return { lines, event, ep, svc };
  } finally {
    await svc.close();
  }
}

beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
});

describe('attempt log line', () => {
  it('development mode: one human-readable line per attempt with type, id, endpoint, status, duration, next attempt', async () => {
    const { lines, event, ep } = await run(true, 'info', 503);
    const line = lines.filter((l) => l.includes(event.id));
    expect(line).toHaveLength(1);
    expect(() => JSON.parse(line[0]!)).toThrow(); // pretty, not JSON
    expect(line[0]).toContain(`payment.succeeded ${event.id} -> ${ep.id} ${receiver.url}: 503 in `);
    // 503 on the first attempt: the next one is 1 minute later (spec 8).
    expect(line[0]).toContain(`next attempt ${new Date(clock.now().getTime() + 60_000).toISOString()}`);
  });

  it('development mode: a delivered attempt says so', async () => {
    const { lines, event } = await run(true, 'info', 200);
    const line = lines.find((l) => l.includes(event.id))!;
    expect(line).toMatch(/: 200 in \d+ ms, delivered/);
  });

  it('production: the same fields as JSON, at debug level only', async () => {
    const atInfo = await run(false, 'info', 200);
    expect(atInfo.lines.filter((l) => l.includes(atInfo.event.id) && l.includes('attempt_log'))).toEqual([]);
    const atDebug = await run(false, 'debug', 200);
    const entries = atDebug.lines.map((l) => JSON.parse(l)).filter((e) => e.attempt_log);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      level: 20,
      event_type: 'payment.succeeded',
      event_id: atDebug.event.id,
      endpoint_id: atDebug.ep.id,
      endpoint_url: receiver.url,
      attempt: 1,
      succeeded: true,
      status_code: 200,
      error: null,
      next_attempt_at: null,
    });
    expect(typeof entries[0].duration_ms).toBe('number');
  });

  it('a connection error is logged by its kind', async () => {
    const { lines, stream } = capture();
    const svc = await startService({ allowPrivateUrls: true, dev: true }, { clock, logger: createLogger({ logLevel: 'info', dev: true }, stream) });
    try {
      const p = await svc.platform();
      await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url: 'http://127.0.0.1:1/hook', enabled_events: ['*'] });
      const { event } = await publish(svc.ctx, p.merchant_id);
      await svc.ctx.createWorker().drain();
      expect(lines.find((l) => l.includes(event.id))).toContain(': connection_refused in ');
    } finally {
      await svc.close();
    }
  });
});

describe('Request-Id header', () => {
  it('every response carries a fresh req_ id: success, 401, 404, 400', async () => {
    const svc = await startService();
    try {
      const p = await svc.platform();
      const responses = [
        await svc.api(p.keys.sandbox, 'GET', '/api/v1/webhook_endpoints'),
        await svc.api(undefined, 'GET', '/api/v1/webhook_endpoints'),
        await svc.api(p.keys.sandbox, 'GET', '/api/v1/webhook_endpoints/we_unknown'),
        await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url: 5 }),
        await svc.api(undefined, 'GET', '/no/such/route'),
        await svc.api(undefined, 'GET', '/healthz'),
      ];
      expect(responses.map((r) => r.status)).toEqual([200, 401, 404, 400, 404, 200]);
      const ids = responses.map((r) => r.headers.get('request-id'));
      for (const id of ids) expect(id).toMatch(/^req_[A-Za-z0-9_-]{16}$/);
      expect(new Set(ids).size).toBe(ids.length);
    } finally {
      await svc.close();
    }
  });

  it('a client-sent Request-Id is not echoed (ids are ours)', async () => {
    const svc = await startService();
    try {
      const r = await svc.api(undefined, 'GET', '/healthz', undefined, { 'request-id': 'req_forged' });
      expect(r.headers.get('request-id')).not.toBe('req_forged');
    } finally {
      await svc.close();
    }
  });
});

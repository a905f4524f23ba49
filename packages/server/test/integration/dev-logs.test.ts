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
  return {
    lines,
    stream: new Writable({
      write: (c, _e, cb) => {
        lines.push(...String(c).split('\n').filter(Boolean));
        cb();
      },
    }),
  };
}

/** One service per mode (starting one is the slow part), each logging into its own capture. */
interface Mode {
  svc: TestService;
  lines: string[];
  key: string;
  merchant: string;
  platformId: string;
}
let dev: Mode;
let prod: Mode;

async function mode(isDev: boolean): Promise<Mode> {
  const { lines, stream } = capture();
  const svc = await startService(
    { allowPrivateUrls: true, dev: isDev },
    { clock, logger: createLogger({ logLevel: 'info', dev: isDev }, stream) },
  );
  const p = await svc.platform();
  return { svc, lines, key: p.keys.sandbox, merchant: p.merchant_id, platformId: p.platform_id };
}

async function run(m: Mode, status: number, url = receiver.url) {
  receiver.behave(() => ({ status }));
  const ep = (await m.svc.api(m.key, 'POST', '/api/v1/webhook_endpoints', { url, enabled_events: ['*'] })).body;
  const { event } = await publish(m.svc.ctx, m.merchant, { type: 'payment.succeeded' });
  await m.svc.ctx.createWorker().drain();
  // Only this endpoint's line: earlier tests' endpoints receive this event too.
  return { lines: m.lines.filter((l) => l.includes(event.id) && l.includes(ep.id)), event, ep };
}

beforeAll(async () => {
  receiver = await startReceiver();
  dev = await mode(true);
  prod = await mode(false);
});
afterAll(async () => {
  await dev?.svc.close();
  await prod?.svc.close();
  await receiver?.close();
});

describe('attempt log line', () => {
  it('development mode: one human-readable line per attempt with type, id, endpoint, status, duration, next attempt', async () => {
    const { lines: line, event, ep } = await run(dev, 503);
    expect(line).toHaveLength(1);
    expect(() => JSON.parse(line[0]!)).toThrow(); // pretty, not JSON
    expect(line[0]).toContain(`payment.succeeded ${event.id} -> ${ep.id} ${receiver.url}: 503 in `);
    // 503 on the first attempt: the next one is 1 minute later (spec 8).
    expect(line[0]).toContain(`next attempt ${new Date(clock.now().getTime() + 60_000).toISOString()}`);
  });

  it('development mode: a delivered attempt says so', async () => {
    const { lines } = await run(dev, 200);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/: 200 in \d+ ms, delivered/);
  });

  it('production: the same fields as JSON, at debug level only', async () => {
    const atInfo = await run(prod, 200);
    expect(atInfo.lines).toEqual([]);
    prod.svc.ctx.logger.level = 'debug';
    const atDebug = await run(prod, 200);
    prod.svc.ctx.logger.level = 'info';
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

  it('a manual replay logs its line too, marked manual', async () => {
    const { event, ep } = await run(dev, 503);
    const [delivery] = (await dev.svc.api(dev.key, 'GET', `/api/v1/webhook_deliveries?event_id=${event.id}&endpoint_id=${ep.id}`)).body
      .data;
    receiver.behave(() => ({ status: 200 }));
    await dev.svc.ctx.deliveries.replay(
      { platformId: dev.platformId, environment: 'sandbox', actor: { type: 'operator' as const, id: 'test' } },
      delivery.id,
    );
    const manual = dev.lines.filter((l) => l.includes(event.id) && l.includes(ep.id) && l.includes('manual payment.succeeded'));
    expect(manual).toHaveLength(1);
    expect(manual[0]).toMatch(/: 200 in \d+ ms, delivered/);
  });

  it('a connection error is logged by its kind', async () => {
    const { lines } = await run(dev, 200, 'http://127.0.0.1:1/hook');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(': connection_refused in ');
  });
});

describe('request log lines', () => {
  // The audit trail's line of a change carries its request id too (next test): these are the request lines.
  const requestLines = (m: Mode, requestId: string | null) =>
    m.lines.filter((l) => requestId && l.includes(requestId) && !l.includes('audit: '));

  it('development mode: a successful read logs nothing; any other request one line (method, path, status, duration, id)', async () => {
    const before = dev.lines.length;
    const read = await dev.svc.api(dev.key, 'GET', '/api/v1/webhook_endpoints?limit=3');
    expect(read.status).toBe(200);
    expect(dev.lines.length).toBe(before);
    const created = await dev.svc.api(dev.key, 'POST', '/api/v1/webhook_endpoints', { url: receiver.url, enabled_events: ['*'] });
    const id = created.headers.get('request-id');
    const lines = requestLines(dev, id);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`POST /api/v1/webhook_endpoints 201 in \\d+ ms \\(${id}\\)$`));
    const missing = await dev.svc.api(dev.key, 'GET', '/api/v1/webhook_endpoints/we_missing?x=secret');
    const miss = requestLines(dev, missing.headers.get('request-id'));
    expect(miss).toHaveLength(1);
    expect(miss[0]).toContain('GET /api/v1/webhook_endpoints/we_missing 404 in ');
    expect(miss[0]).not.toContain('secret');
  });

  it('production: one JSON line per request, reads included, without the query string', async () => {
    const read = await prod.svc.api(prod.key, 'GET', '/api/v1/webhook_endpoints?limit=2');
    const lines = requestLines(prod, read.headers.get('request-id'));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: 30,
      reqId: read.headers.get('request-id'),
      http_method: 'GET',
      http_path: '/api/v1/webhook_endpoints',
      http_status: 200,
      duration_ms: expect.any(Number),
    });
    expect(lines[0]).not.toContain('limit=2');
  });
});

describe('audit log line', () => {
  it('each audit entry is one structured line (JSON in production) once its change has committed, never with the secret', async () => {
    const created = await prod.svc.api(prod.key, 'POST', '/api/v1/webhook_endpoints', { url: receiver.url, enabled_events: ['*'] });
    expect(created.status).toBe(201);
    const requestId = created.headers.get('request-id');
    const audits = prod.lines.map((l) => JSON.parse(l)).filter((e) => e.audit && e.audit.origin.request_id === requestId);
    expect(audits).toHaveLength(1);
    expect(audits[0]).toMatchObject({
      level: 30,
      msg: expect.stringMatching(/^audit: webhook_endpoint\.create succeeded by api_key key_\w+ on webhook_endpoint we_\w+$/),
      audit: {
        object: 'audit_event',
        action: 'webhook_endpoint.create',
        outcome: 'succeeded',
        actor: { type: 'api_key' },
        resource: { type: 'webhook_endpoint', id: created.body.id },
        platform_id: expect.stringMatching(/^plt_/),
      },
    });
    expect(JSON.stringify(audits[0])).not.toContain(created.body.secret);
    // A change refused before it committed leaves no success line behind, only its refusal.
    const refused = await prod.svc.api(prod.key, 'PATCH', '/api/v1/webhook_endpoints/we_missing', { description: 'x' });
    expect(refused.status).toBe(404);
    const refusedLines = prod.lines
      .map((l) => JSON.parse(l))
      .filter((e) => e.audit && e.audit.origin.request_id === refused.headers.get('request-id'));
    expect(refusedLines.map((e) => e.audit.outcome)).toEqual(['failed']);
  });
});

describe('Request-Id header', () => {
  it('every response carries a fresh req_ id: success, 401, 404, 400', async () => {
    const svc = prod.svc;
    {
      const p = { keys: { sandbox: prod.key } };
      const responses = [
        await svc.api(p.keys.sandbox, 'GET', '/api/v1/webhook_endpoints'),
        await svc.api(undefined, 'GET', '/api/v1/webhook_endpoints'),
        await svc.api(p.keys.sandbox, 'GET', '/api/v1/webhook_endpoints/we_unknown'),
        await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url: 5 }),
        await svc.api(undefined, 'GET', '/no/such/route'),
        await svc.api(undefined, 'GET', '/healthz'),
        await svc.api(p.keys.sandbox, 'GET', '/api/v1/webhook_endpoints/%E0%A4%A'),
      ];
      expect(responses.map((r) => r.status)).toEqual([200, 401, 404, 400, 404, 200, 400]);
      const ids = responses.map((r) => r.headers.get('request-id'));
      for (const id of ids) expect(id).toMatch(/^req_[A-Za-z0-9_-]{16}$/);
      expect(new Set(ids).size).toBe(ids.length);
    }
  });

  it('a client-sent Request-Id is not echoed (ids are ours)', async () => {
    const r = await prod.svc.api(undefined, 'GET', '/healthz', undefined, { 'request-id': 'req_forged' });
    expect(r.headers.get('request-id')).toMatch(/^req_/);
    expect(r.headers.get('request-id')).not.toBe('req_forged');
  });
});

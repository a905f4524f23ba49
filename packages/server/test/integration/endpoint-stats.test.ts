import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type Behaviour, type TestReceiver } from '../helpers/receiver.ts';
import { publish } from '../helpers/publish.ts';
import { portalSignIn } from '../helpers/portal.ts';
import { LATENCY_BUCKETS, latencyBucket, percentile } from '../../src/delivery/attempt-stats.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';

/**
 * Endpoint health over time (delivery/attempt-stats.ts, delivery/stats.ts): what the stats say
 * is what a real receiver answered, attempt by attempt, as the delivery log records it (status,
 * kind of failure, answer time), per hour and per day, for an endpoint and for the Platform;
 * manual replays count; two workers add up; old buckets leave with retention. On the injected clock.
 */

const MIN = 60_000;
const HOUR = 60 * MIN;
const T0 = Date.UTC(2026, 11, 1, 10, 20, 0);
const clock = new ManualClock(T0);
let svc: TestService;
let receiver: TestReceiver;
let p: CreatedPlatform;
let closedPort: number;

/** The answers of the mixed endpoint, one per request in arrival order. */
const MIXED: Behaviour[] = [
  { status: 200 },
  { status: 200, delayMs: 250 },
  { status: 500, body: 'boom' },
  { status: 429, body: 'slow down' },
  { status: 400, body: 'bad' },
  { status: 200, delayMs: 40 },
];

beforeAll(async () => {
  svc = await startService(
    { allowPrivateUrls: true, allowHttpUrls: true, retryScheduleMs: [HOUR, HOUR], attemptTimeoutMs: 1_000 },
    { clock },
  );
  p = await svc.platform('Stats Shop');
  let mixed = 0;
  receiver = await startReceiver((req) => {
    if (req.path.startsWith('/mixed')) return MIXED[mixed++ % MIXED.length]!;
    if (req.path.startsWith('/hang')) return { status: 200, delayMs: 3_000 };
    return { status: 200 };
  });
  // A port nothing listens on: connection refused.
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  closedPort = (server.address() as { port: number }).port;
  await new Promise<void>((r) => server.close(() => r()));
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

const api = (method: string, path: string) => svc.api(p.keys.sandbox, method, path);
const at = (path: string) => receiver.url.replace('/webhooks', path);

async function endpoint(url: string): Promise<string> {
  const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url, enabled_events: ['payment.succeeded'] });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.id;
}

interface LoggedAttempt {
  status_code: number | null;
  error_kind: string | null;
  succeeded: boolean;
  duration_ms: number;
  started_at: string;
}

/** Every attempt the delivery log holds for an endpoint. */
async function logged(endpointId: string): Promise<LoggedAttempt[]> {
  const r = await api('GET', `/api/v1/webhook_deliveries?endpoint_id=${endpointId}&limit=100`);
  return r.body.data.flatMap((d: { attempts: LoggedAttempt[] }) => d.attempts);
}

/** The percentiles the stats must report for these answer times: the same histogram, read the same way. */
function expectedLatency(durations: number[]) {
  const h = new Array<number>(LATENCY_BUCKETS).fill(0);
  for (const d of durations) h[latencyBucket(d)]!++;
  return { p50: percentile(h, 0.5), p95: percentile(h, 0.95), p99: percentile(h, 0.99) };
}

const ZERO = { timeout: 0, connection: 0, tls: 0, http_4xx: 0, http_429: 0, http_5xx: 0, endpoint_disabled: 0, other: 0 };

describe('endpoint stats', () => {
  let mixed: string;
  let refused: string;
  let hanging: string;

  it("counts what the receiver answered, by kind, with the log's answer times, in the attempt's hour", async () => {
    mixed = await endpoint(at('/mixed'));
    refused = await endpoint(`http://127.0.0.1:${closedPort}/gone`);
    hanging = await endpoint(at('/hang'));
    for (let i = 0; i < MIXED.length; i++) await publish(svc.ctx, p.merchant_id);
    await svc.ctx.createWorker().drain();

    // Six events to each endpoint: the mixed endpoint answered each kind in turn.
    const log = await logged(mixed);
    expect(log).toHaveLength(6);
    expect(receiver.requests.filter((r) => r.path.startsWith('/mixed'))).toHaveLength(6);
    const stats = await api('GET', `/api/v1/webhook_endpoints/${mixed}/stats`);
    expect(stats.status, JSON.stringify(stats.body)).toBe(200);
    expect(stats.body).toMatchObject({ object: 'webhook_stats', endpoint_id: mixed, environment: 'sandbox', granularity: 'hour' });
    expect(stats.body.data).toHaveLength(24);
    expect(stats.body.until).toBe('2026-12-01T11:00:00Z');
    expect(stats.body.from).toBe('2026-11-30T11:00:00Z');
    const hour = stats.body.data.at(-1);
    expect(hour.start).toBe('2026-12-01T10:00:00Z');
    expect(hour).toMatchObject({ attempts: 6, successes: 3, failures: { ...ZERO, http_5xx: 1, http_429: 1, http_4xx: 1 } });
    expect(hour.latency_ms).toEqual(expectedLatency(log.map((a) => a.duration_ms)));
    // The slow answer is in the tail: p99 is at least the 250 ms the receiver waited, within a bucket.
    expect(hour.latency_ms.p99).toBeGreaterThanOrEqual(Math.floor(250 / 1.1));
    expect(stats.body.totals).toEqual({ attempts: 6, successes: 3, failures: hour.failures, latency_ms: hour.latency_ms });
    expect(stats.body.data.slice(0, 23).every((b: { attempts: number }) => b.attempts === 0)).toBe(true);

    const gone = await api('GET', `/api/v1/webhook_endpoints/${refused}/stats`);
    expect(gone.body.totals).toEqual({
      attempts: 6,
      successes: 0,
      failures: { ...ZERO, connection: 6 },
      latency_ms: { p50: null, p95: null, p99: null },
    });
    expect((await logged(refused)).every((a) => a.error_kind === 'connection_refused')).toBe(true);
    const slow = await api('GET', `/api/v1/webhook_endpoints/${hanging}/stats`);
    expect(slow.body.totals).toMatchObject({ attempts: 6, successes: 0, failures: { ...ZERO, timeout: 6 } });
  });

  it('retries an hour later land in the next hour; a manual replay counts; the day adds both; the Platform sums its endpoints', async () => {
    clock.set(T0 + HOUR);
    // Two workers drain side by side: each counts what it recorded, and the buckets add up.
    await Promise.all([svc.ctx.createWorker().drain(), svc.ctx.createWorker().drain()]);
    const admin = await portalSignIn(svc.url, p.portal.email, p.portal.password);
    const failed = await api('GET', `/api/v1/webhook_deliveries?endpoint_id=${mixed}&state=failed_retrying&limit=1`);
    const replay = failed.body.data[0] ? await admin.call('POST', `/deliveries/${failed.body.data[0].id}/replay`) : null;
    const log = await logged(mixed);
    const byHour = (h: string) => log.filter((a) => a.started_at.startsWith(h));
    const hourly = await api('GET', `/api/v1/webhook_endpoints/${mixed}/stats?from=2026-12-01T10:00:00Z&until=2026-12-01T12:00:00Z`);
    expect(hourly.body.data.map((b: { start: string; attempts: number }) => [b.start, b.attempts])).toEqual([
      ['2026-12-01T10:00:00Z', byHour('2026-12-01T10').length],
      ['2026-12-01T11:00:00Z', byHour('2026-12-01T11').length],
    ]);
    // The three failures were retried (the mixed receiver answered them afresh), and one replayed by hand.
    expect(replay?.status).toBe(200);
    expect(byHour('2026-12-01T11').length).toBe(4);
    expect(hourly.body.data[1].successes).toBe(byHour('2026-12-01T11').filter((a) => a.succeeded).length);

    const daily = await api(
      'GET',
      `/api/v1/webhook_endpoints/${mixed}/stats?granularity=day&from=2026-12-01T00:00:00Z&until=2026-12-02T00:00:00Z`,
    );
    expect(daily.body.data).toHaveLength(1);
    expect(daily.body.data[0]).toMatchObject({
      start: '2026-12-01T00:00:00Z',
      attempts: log.length,
      successes: log.filter((a) => a.succeeded).length,
    });
    expect(daily.body.data[0].latency_ms).toEqual(expectedLatency(log.filter((a) => a.status_code !== null).map((a) => a.duration_ms)));

    const platform = await api('GET', '/api/v1/webhook_stats?granularity=day&from=2026-12-01T00:00:00Z&until=2026-12-02T00:00:00Z');
    expect(platform.status).toBe(200);
    expect(platform.body.endpoint_id).toBeNull();
    const all = [...log, ...(await logged(refused)), ...(await logged(hanging))];
    expect(platform.body.totals.attempts).toBe(all.length);
    expect(platform.body.totals.failures).toEqual({
      ...ZERO,
      connection: all.filter((a) => a.error_kind === 'connection_refused').length,
      timeout: all.filter((a) => a.error_kind === 'timeout').length,
      http_4xx: all.filter((a) => a.status_code !== null && a.status_code >= 400 && a.status_code < 500 && a.status_code !== 429).length,
      http_429: all.filter((a) => a.status_code === 429).length,
      http_5xx: all.filter((a) => a.status_code !== null && a.status_code >= 500).length,
    });
    expect(platform.body.endpoints.map((e: { endpoint_id: string }) => e.endpoint_id).sort()).toEqual([mixed, refused, hanging].sort());
    // The portal's charts read the same answer.
    const portal = await admin.call(
      'GET',
      `/endpoints/${mixed}/stats?granularity=day&from=2026-12-01T00:00:00Z&until=2026-12-02T00:00:00Z`,
    );
    expect(portal.body).toEqual(daily.body);
  });

  it("another Platform's endpoint, a bad range and an unknown endpoint get clear errors", async () => {
    const other = await svc.platform('Other Stats');
    const theirs = (await svc.api(other.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url: at('/x'), enabled_events: ['*'] })).body
      .id;
    expect((await api('GET', `/api/v1/webhook_endpoints/${theirs}/stats`)).status).toBe(404);
    expect((await api('GET', '/api/v1/webhook_endpoints/we_nope/stats')).status).toBe(404);
    const backwards = await api('GET', `/api/v1/webhook_endpoints/${mixed}/stats?from=2026-12-01T12:00:00Z&until=2026-12-01T10:00:00Z`);
    expect([backwards.status, backwards.body.error.code, backwards.body.error.param]).toEqual([400, 'parameter_invalid', 'from']);
    const wide = await api('GET', `/api/v1/webhook_endpoints/${mixed}/stats?from=2026-11-20T00:00:00Z`);
    expect([wide.status, wide.body.error.param]).toEqual([400, 'from']);
    expect(wide.body.error.message).toContain('granularity=day');
    const notATime = await api('GET', `/api/v1/webhook_endpoints/${mixed}/stats?from=yesterday`);
    expect(notATime.status).toBe(400);
    const granularity = await api('GET', '/api/v1/webhook_stats?granularity=minute');
    expect([granularity.status, granularity.body.error.param]).toEqual([400, 'granularity']);
    // The other Platform's summary holds none of this one's attempts.
    const theirStats = await svc.api(other.keys.sandbox, 'GET', '/api/v1/webhook_stats');
    expect(theirStats.body.totals.attempts).toBe(0);
  });

  it('retention drops hours after 8 days and keeps days for the retention window', async () => {
    clock.set(T0 + 9 * 24 * HOUR);
    await svc.ctx.createRetentionJob().runOnce();
    const rows = await svc.ctx.database.query<{ period: string; n: number }>(
      'SELECT period, count(*)::int AS n FROM endpoint_stats WHERE platform_id = $1 GROUP BY period ORDER BY period',
      [p.platform_id],
    );
    expect(rows.map((r) => [r.period, Number(r.n)])).toEqual([['day', 3]]);
    const daily = await api('GET', `/api/v1/webhook_endpoints/${mixed}/stats?granularity=day`);
    expect(daily.body.totals.attempts).toBe((await logged(mixed)).length);
  });
});

import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMigratedPgDatabase } from '../helpers/database.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { spawnPayhooks, type Spawned } from '../helpers/spawn.ts';
import { payment } from '../helpers/publish.ts';
import { openDatabase, type Database } from '../../src/db/client.ts';
import { createContext, type ServiceContext } from '../../src/context.ts';
import { loadConfig } from '../../src/config.ts';
import { ManualClock } from '../../src/clock.ts';
import { createPlatform } from '../../src/tenancy/platforms.ts';
import { publishEvent } from '../../src/events/publish.ts';
import { MAX_ATTEMPTS, RETRY_DELAYS_MS } from '@payhooks/contract';

/**
 * Real `payhooks worker` processes on PostgreSQL: one is SIGKILLed mid-attempt, and one serves
 * its metrics port. PostgreSQL only (several processes on one database).
 */
const key = randomBytes(32);
const LEASE_MS = 6000;
let dbUrl: string;
let drop: () => Promise<void>;
let database: Database;
let ctx: ServiceContext;
const clock = new ManualClock(Date.now());
let receiver: TestReceiver;
const spawned: Spawned[] = [];

beforeAll(async () => {
  ({ url: dbUrl, drop } = await createMigratedPgDatabase());
  database = await openDatabase({ databaseUrl: dbUrl });
  const config = loadConfig(
    {},
    { databaseUrl: dbUrl, allowPrivateUrls: true, logLevel: 'silent', leaseMs: LEASE_MS, attemptTimeoutMs: 2000 },
  );
  ctx = createContext({ config, database, clock, logger: pino({ level: 'silent' }), encryptionKey: key });
  receiver = await startReceiver();
});
afterAll(async () => {
  for (const s of spawned) s.child.kill('SIGKILL');
  await receiver?.close();
  await ctx?.close();
  await database?.close();
  await drop?.();
});

function worker(env: Record<string, string> = {}): Spawned {
  const s = spawnPayhooks(['worker'], {
    DATABASE_URL: dbUrl,
    PAYHOOKS_ENCRYPTION_KEY: key.toString('hex'),
    PAYHOOKS_ALLOW_PRIVATE_URLS: 'true',
    PAYHOOKS_POLL_INTERVAL: '100ms',
    PAYHOOKS_LEASE: `${LEASE_MS / 1000}s`,
    PAYHOOKS_ATTEMPT_TIMEOUT: '2s',
    PAYHOOKS_LOG_LEVEL: 'info',
    ...env,
  });
  spawned.push(s);
  return s;
}

/** The `payhooks workers started` log line, parsed. */
async function started(w: Spawned): Promise<{ workers: string[]; metrics: string | null }> {
  await w.waitFor('payhooks workers started');
  const line = w
    .output()
    .split('\n')
    .find((l) => l.includes('payhooks workers started'))!;
  return JSON.parse(line);
}

async function setUp(path: string) {
  const p = await createPlatform(database.db, 'crash');
  const scope = { platformId: p.platform_id, environment: 'sandbox' as const, actor: { type: 'operator' as const, id: 'test' } };
  const ep = await ctx.endpoints.create(scope, { url: receiver.url.replace('/webhooks', path), enabled_events: ['*'] });
  const publish = () =>
    database.db.transaction((tx) =>
      publishEvent(tx, { type: 'payment.succeeded', merchantId: p.merchant_id, environment: 'sandbox', object: payment() }, new Date()),
    );
  return { p, scope, ep, publish };
}

describe('a worker that dies mid-attempt', () => {
  it('its in-flight attempt appears as interrupted (no status, its worker, when it started) once the lease is taken over; the retry is logged after it', async () => {
    const { scope, ep, publish } = await setUp('/crash');
    // The receiver takes the request and holds it: the worker is killed while waiting for the answer.
    receiver.behave((req) =>
      req.path === '/crash' && receiver.requests.filter((r) => r.path === '/crash').length === 1
        ? { status: 200, delayMs: 60_000 }
        : { status: 200 },
    );
    const w = worker();
    const { workers } = await started(w);
    const before = Date.now();
    const { event } = await publish();
    await receiver.waitFor(receiver.requests.length + 1);
    w.child.kill('SIGKILL');
    expect(await w.exited).toBe('SIGKILL');

    const [held] = (await ctx.deliveries.list(scope, { limit: 10, endpointId: ep.id })).data;
    expect(held!.attempts, 'nothing was recorded by the dead worker').toHaveLength(0);

    // Before the lease runs out nobody may take it; after, the takeover logs the lost attempt,
    // and the retry keeps the schedule's first delay after it (spec 8): not sent yet.
    const survivor = ctx.createWorker();
    clock.set(Date.now() + 1000);
    expect(await survivor.drain()).toBe(0);
    clock.set(Date.now() + LEASE_MS + 1000);
    expect(await survivor.drain()).toBe(0);
    const [waiting] = (await ctx.deliveries.list(scope, { limit: 10, endpointId: ep.id })).data;
    expect(waiting!.state).toBe('failed_retrying');
    expect(waiting!.attempts.map((a) => a.error_kind)).toEqual(['interrupted']);
    expect(Date.parse(waiting!.next_attempt_at!)).toBe(Date.parse(waiting!.attempts[0]!.started_at) + RETRY_DELAYS_MS[0]!);
    expect(receiver.requests.filter((r) => r.path === '/crash')).toHaveLength(1);
    clock.set(Date.parse(waiting!.next_attempt_at!) + 1000);
    expect(await survivor.drain()).toBe(1);

    const [after] = (await ctx.deliveries.list(scope, { limit: 10, endpointId: ep.id })).data;
    expect(after!.state).toBe('delivered');
    expect(after!.attempts).toHaveLength(2);
    const [lost, retry] = after!.attempts;
    expect(lost).toMatchObject({
      attempt_number: 1,
      trigger: 'automatic',
      succeeded: false,
      status_code: null,
      response_body: null,
      error_kind: 'interrupted',
      worker_id: workers[0],
    });
    expect(lost!.error_message).toContain('may or may not have received it');
    const startedAt = new Date(lost!.started_at).getTime();
    expect(startedAt).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    expect(startedAt).toBeLessThanOrEqual(Date.now());
    expect(retry).toMatchObject({ attempt_number: 2, succeeded: true, status_code: 200, error_kind: null, worker_id: null });
    // The receiver got the event twice: the log now shows both.
    expect(receiver.requests.filter((r) => r.path === '/crash' && r.headers['service-event-id'] === event.id)).toHaveLength(2);
    expect(await ctx.metrics.registry.getSingleMetricAsString('payhooks_delivery_attempts_total')).toContain('error_kind="interrupted"');
  });

  it('spec 8: an interrupted attempt counts toward the 8: a worker killed during attempt 1, every later attempt failing, the receiver gets 8 requests in all before exhausted', async () => {
    const { scope, ep, publish } = await setUp('/crash-8');
    // The first request is held until the worker dies; every other one fails.
    receiver.behave((req) =>
      req.path === '/crash-8' && receiver.requests.filter((r) => r.path === '/crash-8').length === 1
        ? { status: 500, delayMs: 60_000 }
        : { status: 500 },
    );
    const w = worker();
    await started(w);
    const { event } = await publish();
    const sent = () => receiver.requests.filter((r) => r.path === '/crash-8' && r.headers['service-event-id'] === event.id);
    await receiver.waitFor(receiver.requests.length + 1);
    w.child.kill('SIGKILL');
    expect(await w.exited).toBe('SIGKILL');

    // A day past each due time is past any delay of the schedule: each drain makes one attempt.
    const survivor = ctx.createWorker();
    let t = Date.now() + LEASE_MS + 1000;
    let delivery = (await ctx.deliveries.list(scope, { limit: 10, endpointId: ep.id })).data[0]!;
    for (let i = 0; i < 12 && delivery.state !== 'exhausted'; i++) {
      clock.set(t);
      await survivor.drain();
      delivery = (await ctx.deliveries.list(scope, { limit: 10, endpointId: ep.id })).data[0]!;
      t += 25 * 3_600_000;
    }
    expect(delivery.state).toBe('exhausted');
    expect(delivery.attempts).toHaveLength(MAX_ATTEMPTS);
    expect(delivery.attempts[0]).toMatchObject({ attempt_number: 1, trigger: 'automatic', error_kind: 'interrupted' });
    expect(delivery.attempts.slice(1).every((a) => a.trigger === 'automatic' && a.status_code === 500)).toBe(true);
    expect(sent()).toHaveLength(MAX_ATTEMPTS);
    // Nothing more comes, however long we wait.
    clock.set(t + 30 * 86_400_000);
    expect(await survivor.drain()).toBe(0);
    expect(sent()).toHaveLength(MAX_ATTEMPTS);
  });

  it('a normal claim, and a later one after the attempt was recorded, log no interrupted attempt', async () => {
    const { scope, ep, publish } = await setUp('/drained');
    receiver.behave(() => ({ status: 200 }));
    await publish();
    const w = ctx.createWorker();
    clock.set(Date.now());
    await w.drain();
    clock.set(Date.now() + LEASE_MS + 1000);
    await w.drain();
    const [d] = (await ctx.deliveries.list(scope, { limit: 10, endpointId: ep.id })).data;
    expect(d!.attempts.map((a) => a.error_kind)).toEqual([null]);
  });
});

describe('payhooks worker metrics', () => {
  it('serves /metrics on PAYHOOKS_METRICS_PORT with the attempt counters of that process; other paths 404', async () => {
    const { publish } = await setUp('/metrics-port');
    receiver.behave(() => ({ status: 200 }));
    const w = worker({ PAYHOOKS_METRICS_PORT: '0', PAYHOOKS_HOST: '127.0.0.1' });
    const { metrics } = await started(w);
    expect(metrics).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const n = receiver.requests.length;
    await publish();
    await receiver.waitFor(n + 1);
    let text = '';
    for (let i = 0; i < 50 && !/payhooks_delivery_attempts_total\{outcome="succeeded",error_kind="none"\} [1-9]/.test(text); i++) {
      const res = await fetch(metrics!);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/plain');
      text = await res.text();
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(text).toMatch(/payhooks_delivery_attempts_total\{outcome="succeeded",error_kind="none"\} [1-9]/);
    expect(text).toContain('payhooks_deliveries{state="pending"}');
    expect(text).toContain('payhooks_endpoints_auto_disabled_total');
    expect(text).toContain('payhooks_secret_rotations_total');
    expect((await fetch(metrics!.replace('/metrics', '/other'))).status).toBe(404);
    w.child.kill('SIGTERM');
    expect(await w.exited).toBe(0);
  });
});

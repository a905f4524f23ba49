import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPgServer, type PgServer } from '../helpers/pg-server.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { spawnPayhooks, type Spawned } from '../helpers/spawn.ts';
import { payment } from '../helpers/publish.ts';
import { openDatabase, type Database } from '../../src/db/client.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createContext, type ServiceContext } from '../../src/context.ts';
import { loadConfig } from '../../src/config.ts';
import { systemClock } from '../../src/clock.ts';
import { createPlatform, type CreatedPlatform } from '../../src/tenancy/platforms.ts';
import { publishEvent } from '../../src/events/publish.ts';
import { until } from '../helpers/wait.ts';

/**
 * Issue 9, database faults: real `payhooks` processes on a PostgreSQL server of their own
 * (restarted, stopped for 30 s, started late), with publish traffic over HTTP and a real
 * receiver. PostgreSQL only: the embedded database has no server to lose.
 */

const key = randomBytes(32);
const token = randomBytes(32).toString('hex');
/** Put in every published event's metadata: it must never show up in a log line. */
const MARKER = `marker_${randomBytes(8).toString('hex')}`;
let server: PgServer;
let database: Database;
let ctx: ServiceContext;
let receiver: TestReceiver;
const spawned: Spawned[] = [];

beforeAll(async () => {
  server = await startPgServer();
  database = await openDatabase({ databaseUrl: server.url });
  await migrate(database);
  ctx = createContext({
    config: loadConfig({}, { databaseUrl: server.url, allowPrivateUrls: true, logLevel: 'silent' }),
    database,
    clock: systemClock,
    logger: pino({ level: 'silent' }),
    encryptionKey: key,
  });
  receiver = await startReceiver();
}, 120_000);

afterAll(async () => {
  for (const s of spawned) s.child.kill('SIGKILL');
  await receiver?.close();
  await ctx?.close();
  await database?.close();
  await server?.destroy();
});

function env(url: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: url,
    PAYHOOKS_ENCRYPTION_KEY: key.toString('hex'),
    PAYHOOKS_INTERNAL_TOKEN: token,
    PAYHOOKS_ALLOW_PRIVATE_URLS: 'true',
    PAYHOOKS_LOG_LEVEL: 'info',
    PAYHOOKS_PORT: '0',
    ...extra,
  };
}

function start(args: string[], environment: Record<string, string>): Spawned {
  const s = spawnPayhooks(args, environment);
  spawned.push(s);
  return s;
}

/** The `url` of the `payhooks listening` log line. */
function listeningUrl(s: Spawned): string {
  const m = /"url":"(http:\/\/[^"]+)"[^\n]*"msg":"payhooks listening"|"msg":"payhooks listening"[^\n]*"url":"(http:\/\/[^"]+)"/.exec(
    s.output(),
  );
  if (!m) throw new Error(`no listening line in:\n${s.output()}`);
  return (m[1] ?? m[2])!;
}

async function platformWithEndpoint(name: string): Promise<CreatedPlatform> {
  const p = await createPlatform(database.db, name);
  await ctx.endpoints.create(
    { platformId: p.platform_id, environment: 'sandbox', actor: { type: 'operator' as const, id: 'test' } },
    { url: `${receiver.url}/${name}`, enabled_events: ['*'] },
  );
  return p;
}

interface PublishAnswer {
  status: number;
  id?: string;
  code?: string;
  retryAfter?: string | null;
}

/** POST /internal/v1/events, as a payment core in another process does. Status 0 = no answer. */
async function publishHttp(baseUrl: string, merchantId: string): Promise<PublishAnswer> {
  try {
    const res = await fetch(`${baseUrl}/internal/v1/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        type: 'payment.succeeded',
        merchant_id: merchantId,
        environment: 'sandbox',
        data: { object: payment({ metadata: { marker: MARKER } }) },
      }),
      signal: AbortSignal.timeout(20_000),
    });
    const body = (await res.json()) as { id?: string; error?: { code?: string } };
    return { status: res.status, id: body.id, code: body.error?.code, retryAfter: res.headers.get('retry-after') };
  } catch {
    return { status: 0 };
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function deliveredCount(eventIds: string[]): Promise<number> {
  const [row] = await database.query<{ n: string }>(
    `SELECT count(DISTINCT event_id) AS n FROM webhook_deliveries WHERE event_id = ANY($1::text[]) AND state = 'delivered'`,
    [eventIds],
  );
  return Number(row!.n);
}

/** A query that may hit the server while it comes back: retried until it answers. */
async function settled<T>(fn: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (i > 50) throw err;
      await sleep(200);
    }
  }
}

const received = (eventId: string) => receiver.requests.some((r) => r.headers['service-event-id'] === eventId);

describe('database faults (issue 9): restarts, outages, late starts', () => {
  it('after a PostgreSQL restart the worker is woken by NOTIFY again, not by its 30 s poll', async () => {
    const p = await platformWithEndpoint('latency');
    const w = start(['worker'], env(server.url, { PAYHOOKS_POLL_INTERVAL: '30s' }));
    await w.waitFor('payhooks workers started');
    // Before the restart: the NOTIFY path works.
    const first = await publishInProcess(p.merchant_id);
    await until(() => received(first), { timeout: 10_000, interval: 100, message: 'first event delivered by NOTIFY' });

    for (let round = 1; round <= 2; round++) {
      await server.restart();
      // The listener reconnects with backoff and says so (once per reconnect).
      await until(() => (w.output().match(/wake-up listener reconnected/g) ?? []).length >= round, {
        timeout: 20_000,
        interval: 100,
        message: `listener reconnected (round ${round})`,
      });
      const id = await settled(() => publishInProcess(p.merchant_id));
      // Well inside the 30 s poll interval, so only a NOTIFY can have woken the worker.
      await until(() => received(id), {
        timeout: 10_000,
        interval: 100,
        message: `event ${round} delivered well before the poll interval`,
      });
    }
    expect(w.child.exitCode).toBeNull();
    w.child.kill('SIGTERM');
    expect(await w.exited).toBe(0);
  }, 90_000);

  it('payhooks serve under publish traffic survives 5 restarts and a 30 s outage: 503 unavailable with Retry-After meanwhile, never a 500, every accepted event delivered', async () => {
    const p = await platformWithEndpoint('outage');
    // A short lease so claims lost with a dropped connection come back quickly (and a deadline
    // short enough for that lease to be accepted).
    const s = start(['serve'], env(server.url, { PAYHOOKS_LEASE: '6s', PAYHOOKS_ATTEMPT_TIMEOUT: '2s', PAYHOOKS_POLL_INTERVAL: '1s' }));
    await s.waitFor('payhooks listening');
    const url = listeningUrl(s);

    const accepted: string[] = [];
    const statuses = new Map<number, number>();
    const unavailable: PublishAnswer[] = [];
    let running = true;
    const traffic = Array.from({ length: 3 }, async () => {
      while (running) {
        const a = await publishHttp(url, p.merchant_id);
        statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
        if (a.status === 201 && a.id) accepted.push(a.id);
        if (a.status === 503) unavailable.push(a);
        await sleep(20);
      }
    });
    // On a time-out the error carries what the publishers got and what the service said, so a
    // failure in CI can be read without a rerun.
    const acceptedAfter = async (n: number, what: string) =>
      until(() => accepted.length > n, { timeout: 30_000, interval: 100, message: what }).catch((err: Error) => {
        const seen = JSON.stringify(Object.fromEntries(statuses));
        throw new Error(
          `${err.message} (${accepted.length} accepted, statuses ${seen})\n--- serve output (tail) ---\n${s.output().slice(-6_000)}`,
        );
      });

    try {
      await acceptedAfter(20, 'traffic flowing');
      for (let i = 1; i <= 5; i++) {
        await server.restart();
        await acceptedAfter(accepted.length + 25, `publishing again after restart ${i}`);
        expect(s.child.exitCode, `alive after restart ${i}`).toBeNull();
      }

      await server.stop();
      const outageStart = Date.now();
      const before = accepted.length;
      await sleep(30_000);
      expect(s.child.exitCode, 'alive after the 30 s outage').toBeNull();
      // Nothing can be accepted without the database; everything meanwhile was a 503.
      expect(accepted.length).toBe(before);
      expect(unavailable.length).toBeGreaterThan(10);
      // Readiness says so too, with the same hint.
      const ready = await fetch(`${url}/readyz`);
      expect(ready.status).toBe(503);
      expect(ready.headers.get('retry-after')).toBe('5');
      await server.start();
      expect(Date.now() - outageStart).toBeGreaterThanOrEqual(30_000);
      await acceptedAfter(accepted.length + 20, 'publishing again after the outage');
    } finally {
      running = false;
      await Promise.all(traffic);
    }

    // Never a 500 and never an unanswered request: only 201s and 503s.
    expect([...statuses.keys()].sort()).toEqual([201, 503]);
    for (const a of unavailable) {
      expect(a.code).toBe('unavailable');
      expect(Number(a.retryAfter)).toBeGreaterThan(0);
    }

    // Every event whose publish answered 201 reaches the receiver and is recorded as delivered.
    await until(async () => (await deliveredCount(accepted)) === accepted.length, {
      timeout: 90_000,
      interval: 100,
      message: `${accepted.length} accepted events delivered`,
    });
    for (const id of accepted) expect(received(id), id).toBe(true);

    // The logs name the failed statement and its SQLSTATE, never the query's parameters.
    const out = s.output();
    expect(out).toMatch(/"type":"DatabaseError"/);
    expect(out).not.toContain(MARKER);
    expect(out).not.toContain('Failed query');
    expect(out).not.toContain('"params"');
    expect(out).not.toContain(token);

    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  }, 240_000);

  it('serve started before PostgreSQL waits for it, logging each try, then serves and delivers', async () => {
    const late = await startPgServer({ start: false });
    try {
      const s = start(['serve'], env(late.url, { PAYHOOKS_DB_WAIT: '60s' }));
      await s.waitFor(/not reachable yet[\s\S]*not reachable yet/, 30_000);
      expect(s.child.exitCode).toBeNull();
      // One line per try at the default level, with the reason and no stack.
      const tries = s
        .output()
        .split('\n')
        .filter((l) => l.includes('not reachable yet'));
      expect(tries.length).toBeGreaterThanOrEqual(2);
      for (const line of tries) {
        expect(JSON.parse(line)).toMatchObject({ level: 40, reason: expect.stringContaining('ECONNREFUSED'), attempt: expect.any(Number) });
        expect(line).not.toContain('"stack"');
      }
      await late.start();
      await s.waitFor('payhooks listening', 30_000);
      expect(s.output()).toContain('database reachable');
      expect(s.output()).toContain('migrations applied');

      // It works: a platform, an endpoint and a published event that gets delivered.
      const db = await openDatabase({ databaseUrl: late.url });
      try {
        const lateCtx = createContext({
          config: loadConfig({}, { databaseUrl: late.url, allowPrivateUrls: true, logLevel: 'silent' }),
          database: db,
          clock: systemClock,
          logger: pino({ level: 'silent' }),
          encryptionKey: key,
        });
        const p = await createPlatform(db.db, 'late');
        await lateCtx.endpoints.create(
          { platformId: p.platform_id, environment: 'sandbox', actor: { type: 'operator' as const, id: 'test' } },
          { url: `${receiver.url}/late`, enabled_events: ['*'] },
        );
        await lateCtx.close();
        const answer = await publishHttp(listeningUrl(s), p.merchant_id);
        expect(answer.status).toBe(201);
        await until(() => received(answer.id!), { timeout: 15_000, interval: 100, message: 'event delivered after a late start' });
      } finally {
        await db.close();
      }
      s.child.kill('SIGTERM');
      expect(await s.exited).toBe(0);

      // A bounded wait: with the database gone for longer than PAYHOOKS_DB_WAIT, a clean exit 1.
      await late.stop();
      const w = start(['worker'], env(late.url, { PAYHOOKS_DB_WAIT: '1s' }));
      expect(await w.exited).toBe(1);
      expect(w.output()).toContain('not reachable yet');
      expect(w.output()).toMatch(
        /payhooks: PostgreSQL at 127\.0\.0\.1:\d+ \(DATABASE_URL\) is not reachable \(ECONNREFUSED\) after \d+ s: start PostgreSQL or correct the host and port in DATABASE_URL; PAYHOOKS_DB_WAIT sets how long to wait for it\./,
      );
      expect(w.output(), 'no stack trace').not.toMatch(/\n\s+at /);
    } finally {
      await late.destroy();
    }
  }, 120_000);

  it('payhooks worker --workers 64, the most the CLI accepts, delivers on NOTIFY and stops on SIGTERM', async () => {
    const p = await platformWithEndpoint('many-loops');
    const w = start(['worker', '--workers', '64'], env(server.url, { PAYHOOKS_POLL_INTERVAL: '30s' }));
    await w.waitFor('payhooks workers started');
    const ids = await Promise.all(Array.from({ length: 20 }, () => publishInProcess(p.merchant_id)));
    await until(async () => (await deliveredCount(ids)) === ids.length, {
      timeout: 20_000,
      interval: 100,
      message: '20 events delivered by 64 loops',
    });
    w.child.kill('SIGTERM');
    expect(await w.exited).toBe(0);
  }, 60_000);

  it('a database that answers but refuses us (no such database) is not waited for: exit 1 at once saying what to check', async () => {
    const w = start(['worker'], env(server.url.replace(/\/postgres$/, '/no_such_database'), { PAYHOOKS_DB_WAIT: '60s' }));
    expect(await w.exited).toBe(1);
    expect(w.output()).toMatch(
      /payhooks: Database "no_such_database" does not exist on PostgreSQL at 127\.0\.0\.1:\d+ \(DATABASE_URL\): create it with `createdb -h 127\.0\.0\.1 -p \d+ -U postgres no_such_database`/,
    );
    expect(w.output()).not.toContain('not reachable yet');
  }, 30_000);
});

/** Publishes in this process (the payment core's path), returning the event id. */
async function publishInProcess(merchantId: string): Promise<string> {
  const result = await database.db.transaction((tx) =>
    publishEvent(
      tx,
      { type: 'payment.succeeded', merchantId, environment: 'sandbox', object: payment({ metadata: { marker: MARKER } }) },
      new Date(),
    ),
  );
  return result.event.id;
}

import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { spawnPayhooks, type Spawned } from '../helpers/spawn.ts';
import { sharedPostgres, type SharedPostgres } from '../helpers/shared-postgres.ts';
import type { Database } from '../../src/db/client.ts';
import type { ServiceContext } from '../../src/context.ts';
import { payment } from '../helpers/publish.ts';
import { createPlatform, type CreatedPlatform } from '../../src/tenancy/platforms.ts';
import { publishEvent } from '../../src/events/publish.ts';
import { until } from '../helpers/wait.ts';

/**
 * Scale-out on PostgreSQL with real `payhooks worker` processes (this file runs in the postgres
 * project only: the embedded database is single-process by design).
 */
let pg: SharedPostgres;
let key: Buffer;
let dbUrl: string;
let database: Database;
let ctx: ServiceContext;
const spawned: Spawned[] = [];

beforeAll(async () => {
  pg = await sharedPostgres();
  ({ key, url: dbUrl, database, ctx } = pg);
});
afterAll(async () => {
  for (const s of spawned) s.child.kill('SIGKILL');
  await pg?.close();
});

function worker(env: Record<string, string> = {}, args: string[] = []): Spawned {
  const s = spawnPayhooks(['worker', ...args], {
    DATABASE_URL: dbUrl,
    PAYHOOKS_ENCRYPTION_KEY: key.toString('hex'),
    PAYHOOKS_ALLOW_PRIVATE_URLS: 'true',
    PAYHOOKS_POLL_INTERVAL: '200ms',
    PAYHOOKS_LOG_LEVEL: 'info',
    ...env,
  });
  spawned.push(s);
  return s;
}

/** `endpoints` endpoints on `receiver`, then `events` events: events x endpoints deliveries. */
async function setUp(receiver: TestReceiver, endpoints: number, events: number): Promise<CreatedPlatform> {
  const p = await createPlatform(database.db, 'workers');
  const scope = { platformId: p.platform_id, environment: 'sandbox' as const, actor: { type: 'operator' as const, id: 'test' } };
  for (let i = 0; i < endpoints; i++) await ctx.endpoints.create(scope, { url: `${receiver.url}/e${i}`, enabled_events: ['*'] });
  for (let done = 0; done < events; done += 100) {
    await database.db.transaction(async (tx) => {
      for (let i = done; i < Math.min(events, done + 100); i++) {
        await publishEvent(
          tx,
          { type: 'payment.succeeded', merchantId: p.merchant_id, environment: 'sandbox', object: payment() },
          new Date(),
        );
      }
    });
  }
  return p;
}

async function states(platformId: string): Promise<Record<string, number>> {
  const rows = await database.query<{ state: string; n: string }>(
    'SELECT state, count(*) AS n FROM webhook_deliveries WHERE platform_id = $1 GROUP BY state',
    [platformId],
  );
  return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
}

const pairs = (r: TestReceiver) => r.requests.map((q) => `${q.headers['service-event-id']} ${q.path}`);

describe('workers on one PostgreSQL (spec 3.2 at scale)', () => {
  it('three worker processes deliver 5,000 deliveries with no duplicate attempt', async () => {
    const receiver = await startReceiver();
    try {
      const ws = [worker(), worker(), worker()];
      await Promise.all(ws.map((w) => w.waitFor('payhooks workers started')));
      // Published while the workers run: NOTIFY wakes them.
      const p = await setUp(receiver, 5, 1000);
      await until(async () => (await states(p.platform_id)).delivered === 5000, {
        timeout: 120_000,
        interval: 200,
        message: '5000 delivered',
      });
      expect(await states(p.platform_id)).toEqual({ delivered: 5000 });
      const seen = pairs(receiver);
      expect(seen).toHaveLength(5000);
      expect(new Set(seen).size).toBe(5000);
      const [attempts] = await database.query<{ n: string; max: number }>(
        'SELECT count(*) AS n, max(attempt_number) AS max FROM delivery_attempts',
        [],
      );
      expect(Number(attempts!.n)).toBe(5000);
      expect(Number(attempts!.max)).toBe(1);
      // SIGTERM: each drains and exits cleanly.
      for (const w of ws) w.child.kill('SIGTERM');
      expect(await Promise.all(ws.map((w) => w.exited))).toEqual([0, 0, 0]);
    } finally {
      await receiver.close();
    }
  }, 180_000);

  it('a worker killed with SIGKILL mid-flight loses nothing: its leases expire and another worker finishes the work', async () => {
    const receiver = await startReceiver(() => ({ status: 200, delayMs: 30 }));
    try {
      // The dead worker's attempts count as attempt 1 (spec 8): the takeover sends each retry the
      // schedule's first delay after the lease was taken, here a second rather than a minute.
      const fast = { PAYHOOKS_LEASE: '6s', PAYHOOKS_ATTEMPT_TIMEOUT: '2s', PAYHOOKS_RETRY_SCHEDULE: '1s,1s,1s,1s,1s,1s,1s' };
      const a = worker(fast);
      await a.waitFor('payhooks workers started');
      const p = await setUp(receiver, 5, 100);
      await receiver.waitFor(100);
      a.child.kill('SIGKILL');
      expect(await a.exited).toBe('SIGKILL');
      const [leased] = await database.query<{ n: string }>(
        'SELECT count(*) AS n FROM delivery_queue WHERE lease_token IS NOT NULL AND platform_id = $1',
        [p.platform_id],
      );
      expect(Number(leased!.n)).toBeGreaterThan(0); // the dead worker held work
      const b = worker(fast);
      await until(async () => (await states(p.platform_id)).delivered === 500, {
        timeout: 60_000,
        interval: 200,
        message: '500 delivered after SIGKILL',
      });
      expect(await states(p.platform_id)).toEqual({ delivered: 500 });
      // At-least-once: every delivery reached the receiver.
      expect(new Set(pairs(receiver)).size).toBe(500);
      b.child.kill('SIGTERM');
      expect(await b.exited).toBe(0);
    } finally {
      await receiver.close();
    }
  }, 120_000);

  it('SIGTERM lets in-flight attempts finish and be recorded, and hands unstarted work back', async () => {
    const receiver = await startReceiver(() => ({ status: 200, delayMs: 1500 }));
    try {
      const w = worker({ PAYHOOKS_ENDPOINT_CONCURRENCY: '2' });
      await w.waitFor('payhooks workers started');
      const p = await setUp(receiver, 1, 10);
      await receiver.waitFor(2);
      w.child.kill('SIGTERM');
      expect(await w.exited).toBe(0);
      const s = await states(p.platform_id);
      // What was in flight finished and is recorded as delivered; nothing is left leased.
      expect(s.delivered).toBe(receiver.requests.length);
      expect(s.delivered! + (s.pending ?? 0)).toBe(10);
      const [leased] = await database.query<{ n: string }>(
        'SELECT count(*) AS n FROM delivery_queue WHERE lease_token IS NOT NULL AND platform_id = $1',
        [p.platform_id],
      );
      expect(Number(leased!.n)).toBe(0);
      const [due] = await database.query<{ n: string }>(
        'SELECT count(*) AS n FROM delivery_queue WHERE due_at <= now() AND platform_id = $1',
        [p.platform_id],
      );
      expect(Number(due!.n)).toBe(s.pending ?? 0);
    } finally {
      await receiver.close();
    }
  }, 60_000);

  for (const n of [10, 20]) {
    it(`payhooks worker --workers ${n}: the loops share one listening connection, deliver on NOTIFY, and stop on SIGTERM`, async () => {
      const receiver = await startReceiver();
      try {
        // A 30 s poll: deliveries within the test's time can only come from NOTIFY wake-ups.
        const listening = async () => {
          const [row] = await database.query<{ n: string }>(
            `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN %'`,
            [],
          );
          return Number(row!.n);
        };
        const before = await listening();
        const w = worker({ PAYHOOKS_POLL_INTERVAL: '30s' }, ['--workers', String(n)]);
        await w.waitFor('payhooks workers started');
        const started = JSON.parse(
          w
            .output()
            .split('\n')
            .find((l) => l.includes('payhooks workers started'))!,
        ) as { workers: string[] };
        expect(started.workers).toHaveLength(n);
        // One LISTEN connection for the whole process, whatever n is: listening takes no pool slot.
        expect((await listening()) - before).toBe(1);
        const p = await setUp(receiver, 4, 50);
        await until(async () => (await states(p.platform_id)).delivered === 200, {
          timeout: 20_000,
          interval: 200,
          message: `200 delivered by ${n} loops`,
        });
        expect(await states(p.platform_id)).toEqual({ delivered: 200 });
        expect(new Set(pairs(receiver)).size).toBe(200);
        w.child.kill('SIGTERM');
        expect(await w.exited).toBe(0);
      } finally {
        await receiver.close();
      }
    }, 60_000);
  }

  it('a worker started with another PAYHOOKS_ENCRYPTION_KEY than the one that encrypted the signing secrets is refused at start', async () => {
    const receiver = await startReceiver();
    try {
      await setUp(receiver, 1, 0); // at least one stored signing secret
      const w = worker({ PAYHOOKS_ENCRYPTION_KEY: randomBytes(32).toString('hex') });
      expect(await w.exited).toBe(1);
      expect(w.output()).toContain(
        'payhooks: PAYHOOKS_ENCRYPTION_KEY is not the key the stored endpoint signing secrets were encrypted with',
      );
      expect(w.output(), 'no stack trace').not.toMatch(/\n\s+at /);
    } finally {
      await receiver.close();
    }
  });
});

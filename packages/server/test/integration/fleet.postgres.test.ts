import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../../receiver/src/index.ts';
import { sharedPostgres, type SharedPostgres } from '../helpers/shared-postgres.ts';
import { killAllPayhooks, runPayhooks, startServe, type ServeProcess } from '../helpers/cli.ts';
import { spawnPayhooks, type Spawned } from '../helpers/spawn.ts';
import { apiClient } from '../helpers/service.ts';
import { portalSignIn, type PortalClient } from '../helpers/portal.ts';
import { payment } from '../helpers/publish.ts';
import { createPlatform, type CreatedPlatform } from '../../src/tenancy/platforms.ts';
import { until } from '../helpers/wait.ts';

/**
 * Issue 23 item 4: payhooks as a fleet. Two `payhooks serve --no-worker` processes (A and B, as
 * behind a load balancer) and a `payhooks worker`, all on one PostgreSQL, as real processes.
 * Nothing that matters may live in one process: a `payhooks listen` session held by A gets its
 * deliveries through B; "Replay all failed since…" and single replays through both processes
 * never have more attempts in flight to the endpoint than its cap, counted at the receiver; and
 * the same with Redis holding the cap.
 */
const TOKEN = 'fleet-internal-token-0123456789abcdef0123';
const CAP = 3;
const HOLD_MS = 250;

let db: SharedPostgres;
let p: CreatedPlatform;
let worker: Spawned;
let receiver: HoldingReceiver;

/** A receiver that holds every request HOLD_MS and counts how many it holds at once. */
interface HoldingReceiver {
  url: string;
  answer: number;
  inFlight: number;
  peak: number;
  count: number;
  close(): Promise<void>;
}

async function holdingReceiver(): Promise<HoldingReceiver> {
  const r = { url: '', answer: 500, inFlight: 0, peak: 0, count: 0 } as HoldingReceiver;
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      r.count++;
      if (r.answer !== 200) return void res.writeHead(r.answer).end('down');
      r.inFlight++;
      r.peak = Math.max(r.peak, r.inFlight);
      setTimeout(() => {
        r.inFlight--;
        res.writeHead(200).end('ok');
      }, HOLD_MS);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hold`;
  r.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return r;
}

const env = (extra: Record<string, string> = {}) => ({
  DATABASE_URL: db.url,
  PAYHOOKS_ENCRYPTION_KEY: db.key.toString('hex'),
  PAYHOOKS_INTERNAL_TOKEN: TOKEN,
  PAYHOOKS_ALLOW_PRIVATE_URLS: 'true',
  PAYHOOKS_ALLOW_HTTP_URLS: 'true',
  PAYHOOKS_ENDPOINT_CONCURRENCY: String(CAP),
  // A failed attempt's retry is an hour away: the failed deliveries wait for a replay.
  PAYHOOKS_RETRY_SCHEDULE: '1h,1h,1h,1h,1h,1h,1h',
  PAYHOOKS_POLL_INTERVAL: '200ms',
  PAYHOOKS_LOG_LEVEL: 'info',
  ...extra,
});

async function stateCounts(endpointId: string): Promise<Record<string, number>> {
  const rows = await db.database.query<{ state: string; n: string }>(
    'SELECT state, count(*) AS n FROM webhook_deliveries WHERE endpoint_id = $1 GROUP BY state',
    [endpointId],
  );
  return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
}

/** Publishes `n` payment.failed events through a process's internal API. */
async function publishFailed(url: string, n: number, tag: string): Promise<void> {
  const post = apiClient(url);
  for (let i = 0; i < n; i++) {
    const r = await post(TOKEN, 'POST', '/internal/v1/events', {
      type: 'payment.failed',
      merchant_id: p.merchant_id,
      environment: 'sandbox',
      data: { object: payment({ id: `pay_${tag}${i}`, status: 'failed' }) },
    });
    expect(r.status).toBe(201);
  }
}

beforeAll(async () => {
  db = await sharedPostgres();
  p = await createPlatform(db.database.db, 'Fleet');
  receiver = await holdingReceiver();
  worker = spawnPayhooks(['worker'], env());
  await worker.waitFor('workers started');
});
afterAll(async () => {
  await killAllPayhooks();
  worker?.child.kill('SIGKILL');
  await receiver?.close();
  await db?.close();
});

describe('two API processes and a worker on one PostgreSQL', () => {
  let a: ServeProcess;
  let b: ServeProcess;
  beforeAll(async () => {
    b = await startServe(['--no-worker'], env());
    // A's sessions carry B's address: the load balancer sends the worker's relay requests to B.
    a = await startServe(['--no-worker'], env({ PAYHOOKS_PUBLIC_URL: b.url }));
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
  });

  it('payhooks listen: a session opened through A gets its deliveries through B, 64 KiB bodies included, each attempt in the log', async () => {
    const received: string[] = [];
    let secret = '';
    const local: Server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks);
        try {
          const event = verifyWebhook({ body: raw, headers: req.headers, secret });
          received.push(event.id);
          res.writeHead(200).end(`got ${raw.length} bytes`);
        } catch {
          res.writeHead(400).end('bad signature');
        }
      });
    });
    await new Promise<void>((r) => local.listen(0, '127.0.0.1', r));
    const localUrl = `http://127.0.0.1:${(local.address() as AddressInfo).port}/webhooks`;
    const cli = spawnPayhooks(['listen', '--api-key', p.keys.sandbox, '--forward-to', localUrl, '--url', a.url], {});
    try {
      await cli.waitFor(/signing secret for this session is whsec_\S+/);
      secret = /(whsec_\S+)/.exec(cli.output())![1]!;
      const session = /\(session (we_\w+)\)/.exec(cli.output())![1]!;
      const ep = await apiClient(a.url)(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${session}`);
      expect(ep.body.url).toBe(`${b.url}/listen/${session}`);

      // One ordinary event and one of 64 KiB (a NOTIFY carries at most 8000 bytes), published through B.
      const post = apiClient(b.url);
      const small = await post(TOKEN, 'POST', '/internal/v1/events', {
        type: 'payment.succeeded',
        merchant_id: p.merchant_id,
        environment: 'sandbox',
        data: { object: payment({ id: 'pay_listen1' }) },
      });
      const big = await post(TOKEN, 'POST', '/internal/v1/events', {
        type: 'payment.succeeded',
        merchant_id: p.merchant_id,
        environment: 'sandbox',
        data: { object: payment({ id: 'pay_listen2', metadata: { note: 'x'.repeat(64 * 1024) } }) },
      });
      expect([small.status, big.status]).toEqual([201, 201]);
      for (const id of [small.body.id, big.body.id]) await cli.waitFor(new RegExp(`<-- 200 \\d+ ms ${id}`));
      expect(received.sort()).toEqual([small.body.id, big.body.id].sort());

      // The worker's attempts went to B (the session's URL) and were answered with the local receiver's reply.
      const attempts = await until(
        async () => {
          const rows = await db.database.query<{ event_id: string; status_code: number; response_body: string }>(
            `SELECT d.event_id, a.status_code, a.response_body FROM delivery_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
           WHERE d.endpoint_id = $1 ORDER BY a.started_at`,
            [session],
          );
          return rows.length === 2 ? rows : undefined;
        },
        { timeout: 30_000, message: 'both attempts to be recorded' },
      );
      expect(attempts.map((r) => r.status_code)).toEqual([200, 200]);
      expect(attempts.find((r) => r.event_id === big.body.id)!.response_body).toMatch(/^got \d{5,} bytes$/);
      // The hand-over rows go once answered (removed just after the answer).
      await until(async () => (await db.database.query('SELECT id FROM listen_relays WHERE endpoint_id = $1', [session])).length === 0, {
        timeout: 30_000,
        message: 'the hand-over rows to be removed',
      });

      cli.child.kill('SIGINT');
      expect(await cli.exited).toBe(0);
      await until(async () => (await apiClient(b.url)(p.keys.sandbox, 'GET', `/api/v1/webhook_endpoints/${session}`)).status === 404, {
        timeout: 30_000,
        message: 'A to end the session',
      });
      // Ended through A: the relay through B now answers 404 (the session is nowhere).
      const gone = await fetch(`${b.url}/listen/${session}`, {
        method: 'POST',
        body: '{}',
        headers: { 'content-type': 'application/json' },
      });
      expect(gone.status).toBe(404);
    } finally {
      cli.child.kill('SIGKILL');
      await new Promise<void>((r) => local.close(() => r()));
    }
  });

  it('Replay all failed since… through A and single replays through B never have more than the cap in flight at the receiver', async () => {
    await bulkReplayAcross(a, b, 'pg');
    // Counted in PostgreSQL: every slot was given back.
    expect(await db.database.query('SELECT * FROM manual_attempt_slots', [])).toEqual([]);
  });
});

describe('the same with PAYHOOKS_REDIS_URL set', () => {
  let a: ServeProcess;
  let b: ServeProcess;
  let redis: Redis;
  beforeAll(async () => {
    redis = new Redis('redis://127.0.0.1:6379');
    a = await startServe(['--no-worker'], env({ PAYHOOKS_REDIS_URL: 'redis://127.0.0.1:6379' }));
    b = await startServe(['--no-worker'], env({ PAYHOOKS_REDIS_URL: 'redis://127.0.0.1:6379' }));
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    redis?.disconnect();
  });

  it('Replay all failed since… through A and single replays through B share the cap in Redis', async () => {
    const endpointId = await bulkReplayAcross(a, b, 'redis', async (ep) => {
      // While attempts are in flight, the slots are in Redis and none in PostgreSQL.
      expect(await redis.zcard(`payhooks:manual-attempts:${ep}`)).toBeGreaterThan(0);
      expect(await db.database.query('SELECT * FROM manual_attempt_slots', [])).toEqual([]);
    });
    expect(await redis.zcard(`payhooks:manual-attempts:${endpointId}`)).toBe(0);
  });
});

/**
 * 24 failed deliveries of a fresh endpoint: 16 replayed by A's bulk job and 8 by single replays
 * through B's portal, all at once. Per-process caps would allow 2 x CAP in flight; the shared
 * one must hold CAP, and reach it. Returns the endpoint's id.
 */
async function bulkReplayAcross(
  a: ServeProcess,
  b: ServeProcess,
  tag: string,
  whileRunning?: (endpointId: string) => Promise<void>,
): Promise<string> {
  receiver.answer = 500;
  const created = await apiClient(a.url)(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
    url: `${receiver.url}/${tag}`,
    enabled_events: ['payment.failed'],
  });
  expect(created.status).toBe(201);
  const endpointId: string = created.body.id;
  // The first 8 fail before `since`, the next 16 after it: the bulk job takes those 16, B replays the 8.
  await publishFailed(b.url, 8, `${tag}early`);
  await until(async () => (await stateCounts(endpointId)).failed_retrying === 8 || undefined, {
    timeout: 30_000,
    message: 'the first 8 to fail',
  });
  await new Promise((r) => setTimeout(r, 20));
  const since = new Date().toISOString();
  await new Promise((r) => setTimeout(r, 20));
  await publishFailed(a.url, 16, `${tag}late`);
  await until(async () => (await stateCounts(endpointId)).failed_retrying === 24 || undefined, {
    timeout: 30_000,
    message: 'all 24 to fail',
  });
  const early = (
    await db.database.query<{ id: string }>(
      `SELECT id FROM webhook_deliveries WHERE endpoint_id = $1 AND last_attempt_at < $2 ORDER BY created_at`,
      [endpointId, since],
    )
  ).map((r) => r.id);
  expect(early).toHaveLength(8);

  receiver.answer = 200;
  receiver.peak = 0;
  const countBefore = receiver.count;
  const portalA: PortalClient = await portalSignIn(a.url, p.portal.email, p.portal.password);
  const portalB: PortalClient = await portalSignIn(b.url, p.portal.email, p.portal.password);
  const job = await portalA.call('POST', `/endpoints/${endpointId}/bulk_replays`, { since });
  expect(job.status, job.text).toBe(202);
  expect(job.body).toMatchObject({ status: 'running', total: 16 });
  // B sees A's job running and refuses a second one for the endpoint.
  const second = await portalB.call('POST', `/endpoints/${endpointId}/bulk_replays`, { since });
  expect(second.status).toBe(409);
  expect(second.body.error.code).toBe('bulk_replay_running');
  const singles = Promise.all(early.map((id) => portalB.call('POST', `/deliveries/${id}/replay`)));
  if (whileRunning) {
    await until(async () => receiver.inFlight > 0, { timeout: 30_000, message: 'attempts in flight' });
    await whileRunning(endpointId);
  }
  const answers = await singles;
  expect(answers.map((r) => r.status)).toEqual(early.map(() => 200));
  const finished = await until(
    async () => {
      const r = await portalB.call('GET', `/bulk_replays/${job.body.id}`);
      return r.body.status === 'finished' ? r.body : undefined;
    },
    { timeout: 30_000, message: 'the bulk replay to finish' },
  );
  expect(finished).toMatchObject({ total: 16, attempted: 16, delivered: 16, failed: 0 });
  expect(await stateCounts(endpointId)).toEqual({ delivered: 24 });
  expect(receiver.count - countBefore).toBe(24);
  // The cap, counted where it matters: at the merchant's receiver.
  expect(receiver.peak).toBe(CAP);
  return endpointId;
}

it('the CLI of a fleet: `payhooks migrate --check` finds nothing pending on the migrated database', async () => {
  const r = await runPayhooks(['migrate', '--check'], env());
  expect(r.code, r.stdout + r.stderr).toBe(0);
});

import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createPlatform, type CreatedPlatform } from '../../src/tenancy/platforms.ts';
import { killAllPayhooks, startServe } from '../helpers/cli.ts';
import { payment } from '../helpers/publish.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { apiClient } from '../helpers/service.ts';
import { sharedPostgres, type SharedPostgres } from '../helpers/shared-postgres.ts';
import { spawnPayhooks, type Spawned } from '../helpers/spawn.ts';
import { until } from '../helpers/wait.ts';

/**
 * Issue 23 item 7: stopping a process of a fleet under load loses nothing. SIGTERM makes an API
 * process stop accepting and answer every request it took; a worker stop claiming, finish and
 * record the attempts in flight, and hand back the rows it claimed but had not started.
 */
const TOKEN = 'graceful-internal-token-0123456789abcdef';
let db: SharedPostgres;
let p: CreatedPlatform;
let receiver: TestReceiver;
const spawned: Spawned[] = [];

const env = (extra: Record<string, string> = {}) => ({
  DATABASE_URL: db.url,
  PAYHOOKS_ENCRYPTION_KEY: db.key.toString('hex'),
  PAYHOOKS_INTERNAL_TOKEN: TOKEN,
  PAYHOOKS_ALLOW_PRIVATE_URLS: 'true',
  PAYHOOKS_ALLOW_HTTP_URLS: 'true',
  PAYHOOKS_POLL_INTERVAL: '200ms',
  PAYHOOKS_LOG_LEVEL: 'info',
  ...extra,
});

function worker(): Spawned {
  const w = spawnPayhooks(['worker'], env({ PAYHOOKS_ENDPOINT_CONCURRENCY: '8' }));
  spawned.push(w);
  return w;
}

async function states(): Promise<Record<string, number>> {
  const rows = await db.database.query<{ state: string; n: string }>(
    'SELECT state, count(*) AS n FROM webhook_deliveries WHERE platform_id = $1 GROUP BY state',
    [p.platform_id],
  );
  return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
}

async function attemptsRecorded(): Promise<number> {
  const [row] = await db.database.query<{ n: string }>(
    'SELECT count(*) AS n FROM delivery_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.platform_id = $1',
    [p.platform_id],
  );
  return Number(row!.n);
}

beforeAll(async () => {
  db = await sharedPostgres();
  p = await createPlatform(db.database.db, 'Graceful');
  // Slow enough that attempts are always in flight when a signal comes.
  receiver = await startReceiver(() => ({ status: 200, delayMs: 200 }));
});
afterAll(async () => {
  await killAllPayhooks();
  for (const s of spawned) s.child.kill('SIGKILL');
  await receiver?.close();
  await db?.close();
});

describe('SIGTERM under load', () => {
  it('an API process answers every request it accepted, then exits 0; a worker finishes and records its attempts in flight and hands back the rest: no attempt lost, nothing left leased', async () => {
    const api = await startServe(['--no-worker'], env());
    const spare = await startServe(['--no-worker'], env());
    const created = await apiClient(spare.url)(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url: `${receiver.url}/graceful`,
      enabled_events: ['payment.succeeded'],
    });
    expect(created.status).toBe(201);
    const first = worker();
    await first.waitFor('payhooks workers started');

    // Eight publishers on the process that will be stopped, each event under its own idempotency
    // key. What the stopping process answers must be 201, or 503 once it is closing (load
    // shedding, with Connection: close); a connection it never took a request on may be refused
    // or closed. Then the publisher does what a load balancer would: the same key to the other process.
    const stopping = new Map<string, number>();
    const network: string[] = [];
    const finalStatus = new Map<string, number | string>();
    let stopped = false;
    let seq = 0;
    const send = async (base: string, key: string) =>
      fetch(`${base}/internal/v1/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          type: 'payment.succeeded',
          merchant_id: p.merchant_id,
          environment: 'sandbox',
          idempotency_key: key,
          data: { object: payment({ id: `pay_${key.replace('-', '')}` }) },
        }),
      });
    const publishOne = async () => {
      const key = `graceful-${seq++}`;
      try {
        const res = await send(api.url, key);
        stopping.set(key, res.status);
        await res.arrayBuffer();
        if (res.status === 201) {
          finalStatus.set(key, 201);
          return;
        }
      } catch (err) {
        network.push((err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message);
      }
      // The other process is up throughout; a failure there is the test's to report.
      const res = await send(spare.url, key).catch((err: Error) => ({ status: `spare: ${err.message}`, arrayBuffer: async () => {} }));
      finalStatus.set(key, res.status as number);
      await res.arrayBuffer();
    };
    // Paced (a request, then 25 ms), so the publishers keep requests in flight without taking
    // the machine's cores from the tests running beside this one.
    const paced = async () => {
      while (!stopped) {
        await publishOne();
        await new Promise((r) => setTimeout(r, 25));
      }
    };
    const traffic = Promise.all(Array.from({ length: 8 }, paced));
    onTestFinished(() => {
      stopped = true;
    });
    await until(async () => finalStatus.size >= 100 && receiver.requests.length >= 20, {
      timeout: 120_000,
      interval: 100,
      message: '100 publishes and 20 attempts under way',
    });

    // The worker first: attempts are in flight at the receiver right now.
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    const seenByReceiver = receiver.requests.length;
    // Every attempt the receiver got is recorded; nothing is left leased.
    expect(await attemptsRecorded()).toBe(seenByReceiver);
    const [leased] = await db.database.query<{ n: string }>(
      'SELECT count(*) AS n FROM delivery_queue WHERE lease_token IS NOT NULL AND platform_id = $1',
      [p.platform_id],
    );
    expect(Number(leased!.n)).toBe(0);

    // Then the API process, with requests in flight.
    const exit = await api.stop(30_000);
    expect(exit.code, `${api.stdout().slice(-3000)}\n${api.stderr().slice(-3000)}`).toBe(0);
    stopped = true;
    await traffic;
    // Every request it took got an answer: 201, or 503 while closing; nothing else.
    expect([...stopping.values()].filter((status) => status !== 201 && status !== 503)).toEqual([]);
    expect(network.filter((code) => !['ECONNREFUSED', 'ECONNRESET', 'UND_ERR_SOCKET'].includes(code))).toEqual([]);
    // Every key was published exactly once, through one process or the other.
    const published = [...finalStatus.keys()];
    expect([...finalStatus.values()].filter((status) => status !== 201)).toEqual([]);
    const [events] = await db.database.query<{ n: string }>('SELECT count(*) AS n FROM events WHERE merchant_id = $1', [p.merchant_id]);
    expect(Number(events!.n)).toBe(published.length);

    // A new worker delivers the rest; each delivery was attempted exactly once in all.
    const second = worker();
    await until(async () => (await states()).delivered === published.length, {
      timeout: 120_000,
      interval: 100,
      message: 'every event delivered after the restart',
    });
    expect(await states()).toEqual({ delivered: published.length });
    const ids = receiver.requests.map((r) => String(r.headers['service-event-id']));
    expect(new Set(ids).size).toBe(published.length);
    expect(ids.length).toBe(published.length);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    await spare.stop();
  }, 300_000);

  it('a request still being received at SIGTERM is answered and its keep-alive connection closed after it, so the process exits without waiting out the keep-alive timeout', async () => {
    const api = await startServe(['--no-worker'], env());
    const { hostname, port } = new URL(api.url);
    const socket = connect(Number(port), hostname);
    let received = '';
    socket.on('data', (b: Buffer) => (received += b.toString()));
    const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    const request = (key: string) => {
      const body = JSON.stringify({
        type: 'payment.succeeded',
        merchant_id: p.merchant_id,
        environment: 'sandbox',
        idempotency_key: key,
        data: { object: payment({ id: `pay_${key.replace(/-/g, '')}` }) },
      });
      const head = `POST /internal/v1/events HTTP/1.1\r\nHost: ${api.url.slice(7)}\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: keep-alive\r\n\r\n`;
      return { head, body };
    };
    // One whole request first: the connection is accepted and kept alive.
    const first = request('inflight-1');
    socket.write(first.head + first.body);
    await until(async () => /\r\n\r\n\{/.test(received) && received.includes('"id":"evt_'), {
      timeout: 120_000,
      interval: 100,
      message: 'the first answer',
    });
    expect(received).toMatch(/^HTTP\/1\.1 201/);
    expect(received.toLowerCase()).toContain('connection: keep-alive');
    received = '';
    // The second is half sent when the process is told to stop, and finished after.
    const second = request('inflight-2');
    socket.write(second.head + second.body.slice(0, 20));
    await until(async () => socket.bytesWritten >= Buffer.byteLength(second.head) + 20, {
      timeout: 120_000,
      interval: 100,
      message: 'the half request to be written',
    });
    const exit = api.stop(30_000);
    await until(() => api.stdout().includes('draining, then exiting'), {
      timeout: 120_000,
      interval: 20,
      message: 'the API process to say it is draining',
    });
    socket.write(second.body.slice(20));
    // Answered (201 if it was taken before the stop, 503 if Fastify shed it), then closed by the server.
    await ended;
    expect(received).toMatch(/^HTTP\/1\.1 (201|503)/);
    expect(received.toLowerCase()).toContain('connection: close');
    // Exits by itself, well inside the grace period and far from the 72 s keep-alive timeout.
    expect((await exit).code).toBe(0);
  }, 120_000);
});

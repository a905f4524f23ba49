import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { freePort, until } from '../helpers/wait.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { createMigratedPgDatabase } from '../helpers/database.ts';
import { killAllPayhooks, runPayhooks, startServe, type ServeProcess } from '../helpers/cli.ts';

/**
 * PAYHOOKS_REDIS_URL: two real `payhooks serve` processes on one PostgreSQL share one rate limit
 * per API key through one real Redis (127.0.0.1:6379), so requests split across them are refused
 * at the combined limit; Redis unreachable at start stops the process with a one-line reason;
 * Redis lost while running lets requests through (and says so in the log) instead of failing them.
 */

const REDIS_URL = process.env.PAYHOOKS_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const SPAWN_TIMEOUT = 90_000;
const COLLECTION = '/api/v1/webhook_endpoints';
/** 1 request a second, bursts of 30: a 30-request window of 30 s, long enough that no window ends mid-test. */
const LIMIT_ENV = { PAYHOOKS_RATE_LIMIT: '1', PAYHOOKS_RATE_LIMIT_BURST: '30' };

let dbEnv: Record<string, string>;
let dropDb = async () => {};
let platform: { platform_id: string; keys: { sandbox: string; live: string }; portal: { email: string; password: string } };

beforeAll(async () => {
  const db = await createMigratedPgDatabase();
  dropDb = db.drop;
  dbEnv = { DATABASE_URL: db.url, PAYHOOKS_ENCRYPTION_KEY: randomBytes(32).toString('hex') };
  const created = await runPayhooks(['admin', 'create-platform', '--name', 'Shared limit', '--json'], dbEnv, 80_000);
  expect(created.code, created.stderr).toBe(0);
  platform = JSON.parse(created.stdout);
}, SPAWN_TIMEOUT);

afterAll(async () => {
  await killAllPayhooks();
  await dropDb();
});

const get = (server: ServeProcess, key: string) => fetch(`${server.url}${COLLECTION}`, { headers: { authorization: `Bearer ${key}` } });

describe('rate limit shared through Redis (PAYHOOKS_REDIS_URL)', () => {
  let a: ServeProcess;
  let b: ServeProcess;
  beforeAll(async () => {
    const env = { ...dbEnv, ...LIMIT_ENV, PAYHOOKS_REDIS_URL: REDIS_URL };
    [a, b] = await Promise.all([startServe(['--no-worker'], env, 80_000), startServe(['--no-worker'], env, 80_000)]);
  }, SPAWN_TIMEOUT);
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
  });

  it('requests split across two API processes are refused at the combined limit, on both', async () => {
    expect(a.url).not.toBe(b.url);
    const key = platform.keys.sandbox;
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) statuses.push((await get(i % 2 === 0 ? a : b, key)).status);
    // 15 went to each process: each alone is far below its 30, yet together they used the key's 30.
    expect(statuses).toEqual(Array(30).fill(200));
    for (const server of [a, b]) {
      const refused = await get(server, key);
      expect(refused.status).toBe(429);
      expect(await refused.json()).toEqual({
        error: {
          type: 'rate_limit_error',
          code: 'rate_limited',
          message: expect.stringMatching(/^Too many requests for this API key; retry after \d+ s\.$/),
        },
      });
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(30);
    }
    // The other key of the same Platform has its own, untouched limit.
    expect((await get(b, platform.keys.live)).status).toBe(200);
  });

  it('the counters are in Redis, under the payhooks namespace', async () => {
    const redis = new Redis(REDIS_URL);
    try {
      const keys = await redis.keys('payhooks:rate-limit:*');
      expect(keys.length).toBeGreaterThan(0);
    } finally {
      redis.disconnect();
    }
  });

  it('failed authentications from one address are limited across both processes too', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 31; i++) statuses.push((await get(i % 2 === 0 ? a : b, `sk_test_guess${i}${'x'.repeat(24)}`)).status);
    // Failed authentications of other tests in this file may share the address's window.
    expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(30);
    expect(statuses.at(-1)).toBe(429);
  });
});

/**
 * Portal sign-in guesses for one email from one address, alternating between two processes: each
 * process alone sees 5, yet the 11th attempt (the right password) is refused by both.
 */
async function expectSignInCountedTogether(a: ServeProcess, b: ServeProcess, email: string, password: string): Promise<void> {
  const signIn = (server: ServeProcess, pw: string) =>
    fetch(`${server.url}/portal/api/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: server.url },
      body: JSON.stringify({ email, password: pw }),
    });
  const statuses: number[] = [];
  for (let i = 0; i < 10; i++) statuses.push((await signIn(i % 2 === 0 ? a : b, `guess-${i}`)).status);
  expect(statuses).toEqual(Array(10).fill(401));
  for (const server of [a, b]) {
    const refused = await signIn(server, password);
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('rate_limited');
  }
}

describe('portal sign-in limits shared by every API process', () => {
  it(
    'through Redis (PAYHOOKS_REDIS_URL): guesses spread over two processes are counted together',
    async () => {
      const env = { ...dbEnv, PAYHOOKS_REDIS_URL: REDIS_URL };
      const [a, b] = await Promise.all([startServe(['--no-worker'], env, 80_000), startServe(['--no-worker'], env, 80_000)]);
      try {
        const user = JSON.parse(
          (await runPayhooks(['admin', 'create-platform', '--name', 'Redis sign-in', '--json'], dbEnv, 80_000)).stdout,
        );
        await expectSignInCountedTogether(a, b, user.portal.email, user.portal.password);
      } finally {
        await Promise.all([a.stop(), b.stop()]);
      }
    },
    SPAWN_TIMEOUT * 2,
  );

  it(
    'through PostgreSQL without Redis: guesses spread over two processes are counted together',
    async () => {
      const [a, b] = await Promise.all([startServe(['--no-worker'], dbEnv, 80_000), startServe(['--no-worker'], dbEnv, 80_000)]);
      try {
        await expectSignInCountedTogether(a, b, platform.portal.email, platform.portal.password);
      } finally {
        await Promise.all([a.stop(), b.stop()]);
      }
    },
    SPAWN_TIMEOUT * 2,
  );
});

describe('Redis unreachable', () => {
  it(
    'at start: serve exits 1 with one line naming PAYHOOKS_REDIS_URL and what to do, no stack trace',
    async () => {
      const port = await freePort();
      const r = await runPayhooks(
        ['serve', '--no-worker'],
        { ...dbEnv, PAYHOOKS_PORT: '0', PAYHOOKS_REDIS_URL: `redis://:hunter2@127.0.0.1:${port}` },
        80_000,
      );
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`^payhooks: Cannot reach Redis at redis://127\\.0\\.0\\.1:${port} \\(PAYHOOKS_REDIS_URL\\)`));
      expect(r.stderr).toContain('unset it to rate-limit each API process on its own');
      expect(r.stderr).not.toContain('hunter2');
      expect(r.stderr).not.toMatch(/\n\s+at /);
    },
    SPAWN_TIMEOUT,
  );

  it(
    'while running: requests are served without the limit and the log says why; the limit is back with Redis',
    async () => {
      const port = await freePort();
      const startRedis = async (): Promise<ChildProcess> => {
        const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
          stdio: 'ignore',
        });
        // Ready when it answers PING (it takes a moment to bind).
        await until(
          async () => {
            const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null });
            probe.on('error', () => {});
            try {
              await probe.connect();
              return (await probe.ping()) === 'PONG';
            } finally {
              probe.disconnect();
            }
          },
          { interval: 100, message: `redis-server on port ${port} to answer PING` },
        );
        return child;
      };
      const stopRedis = (child: ChildProcess) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null) resolve();
          else {
            child.once('exit', () => resolve());
            child.kill('SIGKILL');
          }
        });
      let redis = await startRedis();
      const server = await startServe(
        ['--no-worker'],
        { ...dbEnv, PAYHOOKS_RATE_LIMIT: '1', PAYHOOKS_RATE_LIMIT_BURST: '2', PAYHOOKS_REDIS_URL: `redis://127.0.0.1:${port}` },
        80_000,
      );
      try {
        const key = platform.keys.live;
        // Fresh Redis: this key's window here is empty.
        expect([(await get(server, key)).status, (await get(server, key)).status, (await get(server, key)).status]).toEqual([
          200, 200, 429,
        ]);
        await stopRedis(redis);
        const during: number[] = [];
        for (let i = 0; i < 5; i++) during.push((await get(server, key)).status);
        expect(during).toEqual([200, 200, 200, 200, 200]);
        expect(server.stdout()).toContain('rate limit not applied: its Redis store failed');
        redis = await startRedis();
        // ioredis reconnects with backoff; once it has, the (new, empty) window counts again.
        const statuses = await until(
          async () => {
            const three = [(await get(server, key)).status, (await get(server, key)).status, (await get(server, key)).status];
            return three.includes(429) && three;
          },
          { timeout: 30_000, interval: 200, message: 'a 429 once Redis is back' },
        );
        expect(statuses).toContain(429);
      } finally {
        await server.stop();
        await stopRedis(redis);
      }
    },
    SPAWN_TIMEOUT * 2,
  );
});

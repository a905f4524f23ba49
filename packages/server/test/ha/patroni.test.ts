import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/db/client.ts';
import { createPlatform, type CreatedPlatform } from '../../src/tenancy/platforms.ts';
import { killAllPayhooks, runPayhooks, startServe, type ServeProcess } from '../helpers/cli.ts';
import { freePort } from '../helpers/pg-server.ts';
import { startPublishing } from '../helpers/publishing-traffic.ts';
import { apiClient } from '../helpers/service.ts';
import { spawnPayhooks, type Spawned } from '../helpers/spawn.ts';

/**
 * `npm run test:ha`: the reference HA deployment of deploy/ha (etcd, two PostgreSQL nodes under
 * Patroni with synchronous replication, HAProxy to the primary), brought up by its own up.sh,
 * with two API processes and a worker on HAProxy's address. Under publishing traffic the
 * primary's machine "dies" (its Patroni and PostgreSQL are SIGKILLed): Patroni promotes the
 * synchronous standby, HAProxy follows, payhooks reconnects. Every event that got a 201 must be
 * delivered. Not in `npm test`: it needs patroni, etcd-server and haproxy and takes a minute.
 */
const run = promisify(execFile);
const DEPLOY = join(import.meta.dirname, '..', '..', '..', '..', 'deploy', 'ha');
const TOKEN = 'ha-internal-token-0123456789abcdef0123456789';
const dir = join(tmpdir(), `payhooks-ha-test-${randomBytes(4).toString('hex')}`);
let ports: Record<string, string>;
let database: Database;
let p: CreatedPlatform;
let worker: Spawned;
let a: ServeProcess;
let b: ServeProcess;
let receiver: Server;
const received = new Map<string, number>();

const haEnv = () => ({ ...process.env, PAYHOOKS_HA_DIR: dir, ...ports });
const rest = (n: 1 | 2) => `http://127.0.0.1:${ports[`PAYHOOKS_HA_REST${n}_PORT`]}`;

async function until<T>(fn: () => Promise<T | undefined | false>, what: string, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  ports = {
    PAYHOOKS_HA_ETCD_PORT: String(await freePort()),
    PAYHOOKS_HA_PORT: String(await freePort()),
    PAYHOOKS_HA_PG1_PORT: String(await freePort()),
    PAYHOOKS_HA_PG2_PORT: String(await freePort()),
    PAYHOOKS_HA_REST1_PORT: String(await freePort()),
    PAYHOOKS_HA_REST2_PORT: String(await freePort()),
  };
  await run(join(DEPLOY, 'up.sh'), [], { env: haEnv(), timeout: 240_000 });
  const url = `postgres://postgres@127.0.0.1:${ports.PAYHOOKS_HA_PORT}/payhooks`;
  const env = {
    DATABASE_URL: url,
    PAYHOOKS_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    PAYHOOKS_INTERNAL_TOKEN: TOKEN,
    PAYHOOKS_ALLOW_PRIVATE_URLS: 'true',
    PAYHOOKS_ALLOW_HTTP_URLS: 'true',
    PAYHOOKS_POLL_INTERVAL: '200ms',
    PAYHOOKS_ATTEMPT_TIMEOUT: '2s',
    PAYHOOKS_LEASE: '6s',
    PAYHOOKS_LOG_LEVEL: 'info',
  };
  const migrated = await runPayhooks(['migrate'], env, 120_000);
  expect(migrated.code, migrated.stdout + migrated.stderr).toBe(0);
  database = await openDatabase({ databaseUrl: url });
  p = await createPlatform(database.db, 'HA');
  receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = String(req.headers['service-event-id']);
      received.set(id, (received.get(id) ?? 0) + 1);
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  worker = spawnPayhooks(['worker'], env);
  await worker.waitFor('workers started', 60_000);
  a = await startServe(['--no-worker'], env, 60_000);
  b = await startServe(['--no-worker'], env, 60_000);
  const created = await apiClient(a.url)(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
    url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/webhooks`,
    enabled_events: ['payment.succeeded'],
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
}, 360_000);

afterAll(async () => {
  await killAllPayhooks();
  worker?.child.kill('SIGKILL');
  await database?.close();
  await new Promise<void>((r) => (receiver ? receiver.close(() => r()) : r()));
  await run(join(DEPLOY, 'down.sh'), [], { env: haEnv(), timeout: 120_000 });
}, 180_000);

describe('deploy/ha: Patroni, etcd and HAProxy', () => {
  it('the primary machine dies under publishing traffic: Patroni promotes the synchronous standby, HAProxy follows, nothing acknowledged is lost', async () => {
    const cluster = async (n: 1 | 2) =>
      (await (await fetch(`${rest(n)}/cluster`)).json()) as { members: Array<{ name: string; role: string }> };
    const leader = (await cluster(1)).members.find((m) => m.role === 'leader')!.name as 'node1' | 'node2';
    const survivor: 1 | 2 = leader === 'node1' ? 2 : 1;
    expect((await cluster(1)).members.map((m) => m.role).sort()).toEqual(['leader', 'sync_standby']);

    const traffic = startPublishing({ apis: [a.url, b.url], token: TOKEN, merchantId: p.merchant_id, publishers: 8 });
    await until(async () => traffic.acknowledged.size >= 150, '150 events acknowledged before the failover');
    // The machine dies: Patroni and PostgreSQL killed at once, nothing shut down cleanly.
    const killedAt = Date.now();
    const postmaster = readFileSync(join(dir, leader, 'postmaster.pid'), 'utf8').split('\n')[0]!;
    const patroni = readFileSync(join(dir, `${leader}.pid`), 'utf8').trim();
    process.kill(Number(patroni), 'SIGKILL');
    process.kill(Number(postmaster), 'SIGKILL');
    const before = traffic.acknowledged.size;
    const promoted = await until(
      async () => (await cluster(survivor)).members.find((m) => m.role === 'leader')?.name === `node${survivor}` && Date.now(),
      'the standby to be promoted',
    );
    await until(async () => traffic.acknowledged.size >= before + 150, '150 more events acknowledged after the failover');
    await traffic.stopAt(traffic.acknowledged.size);

    const missing = () => [...traffic.acknowledged.keys()].filter((id) => !received.has(id));
    await until(async () => missing().length === 0, 'every acknowledged event to be delivered', 180_000);
    await until(async () => {
      const r = await database.query<{ state: string }>(`SELECT DISTINCT state FROM webhook_deliveries`, []);
      return r.length === 1 && r[0]!.state === 'delivered';
    }, 'every delivery recorded as delivered');
    const [events] = await database.query<{ n: string }>('SELECT count(*) AS n FROM events', []);
    expect(Number(events!.n)).toBe(traffic.acknowledged.size);
    for (const proc of [a, b]) expect(proc.child.exitCode).toBeNull();
    expect(worker.child.exitCode).toBeNull();

    const firstAfterPromotion = traffic.firstAckAfter(promoted) ?? Number.NaN;
    const figures = {
      published: traffic.acknowledged.size,
      delivered: traffic.acknowledged.size - missing().length,
      lost: missing().length,
      duplicate_successes: [...received.values()].reduce((sum, n) => sum + (n - 1), 0),
      promotion_after_kill_s: Number(((promoted - killedAt) / 1000).toFixed(2)),
      first_201_after_promotion_s: Number(((firstAfterPromotion - promoted) / 1000).toFixed(2)),
      publishes_retried_through_failure: traffic.retriedThroughFailure(),
      answers: Object.fromEntries(traffic.statuses),
    };
    console.log(`ha failover figures ${JSON.stringify(figures)}`);
    expect(figures.lost).toBe(0);
  }, 600_000);
});

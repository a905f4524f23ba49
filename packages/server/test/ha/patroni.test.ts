import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFailoverFleet, type FailoverFleet } from '../helpers/failover.ts';
import { startPublishing } from '../helpers/publishing-traffic.ts';
import { freePort, until } from '../helpers/wait.ts';

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
let fleet: FailoverFleet;

const haEnv = () => ({ ...process.env, PAYHOOKS_HA_DIR: dir, ...ports });
const rest = (n: 1 | 2) => `http://127.0.0.1:${ports[`PAYHOOKS_HA_REST${n}_PORT`]}`;

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
  fleet = await startFailoverFleet({
    databaseUrl: `postgres://postgres@127.0.0.1:${ports.PAYHOOKS_HA_PORT}/payhooks`,
    token: TOKEN,
    platformName: 'HA',
  });
}, 360_000);

afterAll(async () => {
  await fleet?.close();
  await run(join(DEPLOY, 'down.sh'), [], { env: haEnv(), timeout: 120_000 });
}, 180_000);

describe('deploy/ha: Patroni, etcd and HAProxy', () => {
  it('the primary machine dies under publishing traffic: Patroni promotes the synchronous standby, HAProxy follows, nothing acknowledged is lost', async () => {
    const cluster = async (n: 1 | 2) =>
      (await (await fetch(`${rest(n)}/cluster`)).json()) as { members: Array<{ name: string; role: string }> };
    const leader = (await cluster(1)).members.find((m) => m.role === 'leader')!.name as 'node1' | 'node2';
    const survivor: 1 | 2 = leader === 'node1' ? 2 : 1;
    expect((await cluster(1)).members.map((m) => m.role).sort()).toEqual(['leader', 'sync_standby']);

    const { a, b, worker, database, platform } = fleet;
    const wait = { timeout: 120_000, interval: 100 };
    const traffic = startPublishing({ apis: [a.url, b.url], token: TOKEN, merchantId: platform.merchant_id, publishers: 8 });
    await until(() => traffic.acknowledged.size >= 150, { ...wait, message: '150 events acknowledged before the failover' });
    // The machine dies: Patroni and PostgreSQL killed at once, nothing shut down cleanly.
    const killedAt = Date.now();
    const postmaster = readFileSync(join(dir, leader, 'postmaster.pid'), 'utf8').split('\n')[0]!;
    const patroni = readFileSync(join(dir, `${leader}.pid`), 'utf8').trim();
    process.kill(Number(patroni), 'SIGKILL');
    process.kill(Number(postmaster), 'SIGKILL');
    const before = traffic.acknowledged.size;
    const promoted = await until(
      async () => (await cluster(survivor)).members.find((m) => m.role === 'leader')?.name === `node${survivor}` && Date.now(),
      { ...wait, message: 'the standby to be promoted' },
    );
    await until(() => traffic.acknowledged.size >= before + 150, { ...wait, message: '150 more events acknowledged after the failover' });
    await traffic.stopAt(traffic.acknowledged.size);

    const missing = () => fleet.missing(traffic.acknowledged.keys());
    await until(() => missing().length === 0, { ...wait, timeout: 180_000, message: 'every acknowledged event to be delivered' });
    await until(
      async () => {
        const r = await database.query<{ state: string }>(`SELECT DISTINCT state FROM webhook_deliveries`, []);
        return r.length === 1 && r[0]!.state === 'delivered';
      },
      { ...wait, message: 'every delivery recorded as delivered' },
    );
    const [events] = await database.query<{ n: string }>('SELECT count(*) AS n FROM events', []);
    expect(Number(events!.n)).toBe(traffic.acknowledged.size);
    for (const proc of [a, b]) expect(proc.child.exitCode).toBeNull();
    expect(worker.child.exitCode).toBeNull();

    const firstAfterPromotion = traffic.firstAckAfter(promoted) ?? Number.NaN;
    const figures = {
      published: traffic.acknowledged.size,
      delivered: traffic.acknowledged.size - missing().length,
      lost: missing().length,
      duplicate_successes: fleet.duplicateSuccesses(),
      promotion_after_kill_s: Number(((promoted - killedAt) / 1000).toFixed(2)),
      first_201_after_promotion_s: Number(((firstAfterPromotion - promoted) / 1000).toFixed(2)),
      publishes_retried_through_failure: traffic.retriedThroughFailure(),
      answers: Object.fromEntries(traffic.statuses),
    };
    console.log(`ha failover figures ${JSON.stringify(figures)}`);
    expect(figures.lost).toBe(0);
  }, 600_000);
});

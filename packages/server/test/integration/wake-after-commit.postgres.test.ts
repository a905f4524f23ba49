import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { startService, type TestService } from '../helpers/service.ts';
import { publishEvent } from '../../src/events/publish.ts';
import { WAKE_CHANNEL } from '../../src/delivery/wake-channel.ts';
import type { Tx } from '../../src/db/client.ts';
import { payment } from '../helpers/publish.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import { until } from '../helpers/wait.ts';

/**
 * Issue 11 (latency at half load): a publishing transaction on PostgreSQL no longer NOTIFYs
 * itself. A NOTIFY inside it would take PostgreSQL's one notification lock at commit and hold it
 * through the commit's flush, serialising every publisher's commit behind the others. The
 * wake-up is sent after the commit, from a transaction of its own (db/after-commit.ts).
 *
 * The tests tell the two apart by order: PostgreSQL delivers a transaction's notifications in
 * the order they were made, at its commit. Each publishing transaction here also NOTIFYs a
 * marker after publishing; a wake-up made inside the transaction arrives before the marker, one
 * sent after the commit arrives after it.
 */
let svc: TestService;
let p: CreatedPlatform;
let listener: pg.Client;
const received: string[] = [];

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true });
  p = await svc.platform();
  expect(
    (await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url: 'http://127.0.0.1:9/a', enabled_events: ['*'] })).status,
  ).toBe(201);
  listener = new pg.Client({ connectionString: svc.testDb.databaseUrl });
  await listener.connect();
  listener.on('notification', (msg) => {
    if (msg.channel === WAKE_CHANNEL) received.push(msg.payload || 'wake-up');
  });
  await listener.query(`LISTEN ${WAKE_CHANNEL}`);
});
afterAll(async () => {
  await listener?.end();
  await svc?.close();
});
beforeEach(() => {
  received.length = 0;
});

const publish = (tx: Tx, id: string) =>
  publishEvent(tx, { type: 'payment.succeeded', merchantId: p.merchant_id, environment: 'sandbox', object: payment({ id }) }, new Date());

const marker = (tx: Tx) => tx.execute(sql`SELECT pg_notify(${WAKE_CHANNEL}, 'marker')`);

it('a committed publish wakes the workers by a NOTIFY sent after its commit, not inside its transaction', async () => {
  await svc.ctx.database.db.transaction(async (tx) => {
    // Three publishes in one transaction: one wake-up.
    for (const id of ['pay_a', 'pay_b', 'pay_c']) expect(await publish(tx, id)).toMatchObject({ deliveries: 1 });
    await marker(tx);
  });
  await until(() => received.length >= 2, { interval: 20, message: 'the wake-up' });
  await new Promise((r) => setTimeout(r, 200));
  expect(received).toEqual(['marker', 'wake-up']);
});

it('a rolled-back publish wakes no one; the next committed one does', async () => {
  await expect(
    svc.ctx.database.db.transaction(async (tx) => {
      await publish(tx, 'pay_rolled_back');
      throw new Error('the caller gives up');
    }),
  ).rejects.toThrow('the caller gives up');
  await new Promise((r) => setTimeout(r, 300));
  expect(received).toHaveLength(0);
  await svc.ctx.database.db.transaction((tx) => publish(tx, 'pay_committed'));
  await until(() => received.length > 0, { interval: 20, message: 'the wake-up' });
});

it('a publish inside a savepoint, which cannot defer its wake-up, NOTIFYs inside its transaction (delivered at the top-level commit)', async () => {
  await svc.ctx.database.db.transaction(async (tx) => {
    await tx.transaction((savepoint) => publish(savepoint, 'pay_in_savepoint'));
    await marker(tx);
  });
  await until(() => received.length >= 2, { interval: 20, message: 'the wake-up' });
  expect(received).toEqual(['wake-up', 'marker']);
});

it('many concurrent publishers: a wake-up arrives after the last commit, and never more NOTIFYs than commits', async () => {
  // Each commit is followed by a NOTIFY that starts after it (one at a time; commits landing
  // meanwhile share the next). The last publish's wake-up must arrive after it committed.
  const commits = 60;
  await Promise.all(Array.from({ length: commits }, (_, i) => svc.ctx.database.db.transaction((tx) => publish(tx, `pay_concurrent_${i}`))));
  const committedAt = received.length;
  await until(() => received.length > committedAt, { interval: 20, message: 'a wake-up after the last commit' });
  await new Promise((r) => setTimeout(r, 200));
  expect(received.length).toBeLessThanOrEqual(commits);
});

it('the wake-up connection, killed while idle, is replaced: the next publish still wakes the workers', async () => {
  await svc.ctx.database.db.transaction((tx) => publish(tx, 'pay_before_kill'));
  await until(() => received.length > 0, { interval: 20, message: 'the wake-up' });
  const admin = new pg.Client({ connectionString: svc.testDb.databaseUrl });
  await admin.connect();
  try {
    const killed = await admin.query(
      `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
       WHERE datname = current_database() AND query LIKE '%pg_notify($1%' AND pid <> pg_backend_pid()`,
    );
    expect(killed.rows).toEqual([{ ok: true }]);
  } finally {
    await admin.end();
  }
  received.length = 0;
  await svc.ctx.database.db.transaction((tx) => publish(tx, 'pay_after_kill'));
  await until(() => received.length > 0, { interval: 20, message: 'the wake-up on a new connection' });
});

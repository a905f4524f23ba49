import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { verifyWebhook } from '../../../receiver/src/index.ts';
import { sharedPostgres, type SharedPostgres } from '../helpers/shared-postgres.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { createPlatform, type CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';

/**
 * A payment core in any language publishes through the outbox with plain SQL, in its own
 * transaction. Here the client is `psql` itself, running the script docs/api.md shows:
 * the core's own write and the event commit together, a refusal rolls both back, and a running
 * worker delivers the event, signed. (publish-sql.test.ts holds the rest: bytes, checks, wake-up.)
 */
let db: SharedPostgres;
let p: CreatedPlatform;
let receiver: TestReceiver;
let worker: DeliveryWorker;
let secret: string;

function psql(script: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile('psql', ['-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', db.url], (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin!.end(script);
  });
}

beforeAll(async () => {
  db = await sharedPostgres();
  p = await createPlatform(db.database.db, 'SQL core');
  receiver = await startReceiver();
  const scope = { platformId: p.platform_id, environment: 'sandbox' as const, actor: { type: 'operator' as const, id: 'test' } };
  const created = await db.ctx.endpoints.create(scope, {
    url: receiver.url,
    enabled_events: ['payment.succeeded', 'payment.failed', 'payment.expired', 'checkout_session.completed'],
  });
  secret = created.secret;
  // The core's own table, in the same database.
  await db.database.query('CREATE TABLE core_payments (id text PRIMARY KEY, status text NOT NULL)', []);
  await db.database.query(`INSERT INTO core_payments VALUES ('pay_123', 'processing')`, []);
  worker = db.ctx.createWorker();
  await worker.start();
});
afterAll(async () => {
  await worker?.stop();
  await receiver?.close();
  await db?.close();
});

const object = (status: string) =>
  `{"id":"pay_123","object":"payment","status":"${status}","amount":"25.00","asset_code":"USDC.ETH","metadata":{"order":"42"}}`;

it('from psql: the payment update and payment.succeeded commit together, the worker delivers it signed, the same key replays it', async () => {
  const script = `
BEGIN;
UPDATE core_payments SET status = 'succeeded' WHERE id = 'pay_123';
SELECT id, deliveries, replayed FROM payhooks.publish_event(
  'payment.succeeded', '${p.merchant_id}', 'sandbox', '${object('succeeded')}', 'pay_123:succeeded');
COMMIT;
`;
  const r = await psql(script);
  expect(r.code, r.stderr).toBe(0);
  const [id, deliveries, replayed] = r.stdout.trim().split('|');
  expect(id).toMatch(/^evt_[0-9A-Za-z]{24}$/);
  expect([deliveries, replayed]).toEqual(['1', 'f']);
  await receiver.waitFor(1);
  const event = verifyWebhook({ body: receiver.requests[0]!.raw, headers: receiver.requests[0]!.headers, secret });
  expect(event).toMatchObject({ id, type: 'payment.succeeded', environment: 'sandbox', merchant_id: p.merchant_id });
  expect(event.data.object).toEqual(JSON.parse(object('succeeded')));

  // The script run again (a retry after a lost answer): the first event, nothing new.
  const again = await psql(script);
  expect(again.stdout.trim()).toBe(`${id}|0|t`);
  expect(await db.database.query(`SELECT id FROM events WHERE idempotency_key = 'pay_123:succeeded'`, [])).toEqual([{ id }]);
});

it("from psql: a refused event aborts the caller's transaction, so its own write is rolled back too; the error names the code and param", async () => {
  const r = await psql(`
BEGIN;
UPDATE core_payments SET status = 'failed' WHERE id = 'pay_123';
SELECT id FROM payhooks.publish_event('payment.failed', '${p.merchant_id}', 'sandbox', '${object('succeeded')}', 'pay_123:failed');
COMMIT;
`);
  expect(r.code).toBe(3); // psql's code for a script stopped by ON_ERROR_STOP
  expect(r.stderr).toContain(
    `ERROR:  A payment.failed event carries a Payment whose status is 'failed'; data.object.status is "succeeded".`,
  );
  expect(r.stderr).toContain('DETAIL:  {"code" : "parameter_invalid", "param" : "data.object.status"}');
  expect(await db.database.query(`SELECT status FROM core_payments WHERE id = 'pay_123'`, [])).toEqual([{ status: 'succeeded' }]);
  expect(await db.database.query(`SELECT id FROM events WHERE idempotency_key = 'pay_123:failed'`, [])).toEqual([]);
});

it("a payment core's own role needs only EXECUTE on the function: it publishes, and can't read payhooks' tables", async () => {
  const role = `core_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: db.url });
  await admin.connect();
  try {
    await admin.query(`CREATE ROLE ${role} LOGIN`);
    // What docs/api.md tells the operator to grant, and nothing else.
    await admin.query(`GRANT USAGE ON SCHEMA payhooks TO ${role}`);
    await admin.query(`GRANT EXECUTE ON FUNCTION payhooks.publish_event(text, text, text, json, text) TO ${role}`);
    const url = new URL(db.url);
    url.username = role;
    const core = new pg.Client({ connectionString: url.toString() });
    await core.connect();
    try {
      const r = await core.query('SELECT id, deliveries FROM payhooks.publish_event($1, $2, $3, $4::json, $5)', [
        'payment.succeeded',
        p.merchant_id,
        'sandbox',
        object('succeeded').replace('pay_123', 'pay_124'),
        null,
      ]);
      expect(r.rows[0]).toMatchObject({ id: expect.stringMatching(/^evt_/), deliveries: 1 });
      await expect(core.query('SELECT secret_ciphertext FROM webhook_endpoints')).rejects.toMatchObject({ code: '42501' });
      await expect(core.query('SELECT body FROM events')).rejects.toMatchObject({ code: '42501' });
      // The helpers are not callable on their own either.
      await expect(core.query(`SELECT payhooks.new_id('evt_')`)).rejects.toMatchObject({ code: '42501' });
    } finally {
      await core.end();
    }
  } finally {
    await admin.query(`DROP OWNED BY ${role}`).catch(() => {});
    await admin.query(`DROP ROLE IF EXISTS ${role}`).catch(() => {});
    await admin.end();
  }
});

import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureDist } from '../../../packages/receiver/test/helpers/build.ts';
import { DATABASE_URL } from '../../../packages/receiver/test/helpers/db.ts';
import { SECRET, delivery, paymentEvent } from '../../../packages/receiver/test/helpers/events.ts';
import { post } from '../../../packages/receiver/test/helpers/http.ts';
import { until } from '../../../packages/server/test/helpers/wait.ts';

const EXAMPLE_DIR = fileURLToPath(new URL('..', import.meta.url));
// The example runs in a database of its own, as a merchant's app would.
const database = `rcv_example_${process.pid}_${randomBytes(4).toString('hex')}`;
const exampleUrl = DATABASE_URL.replace(/\/[^/]*$/, `/${database}`);
let admin: pg.Pool;
let pool: pg.Pool;
let server: Server;
let url: string;
let receiver: { webhooks: { drain(): Promise<void>; close(): Promise<void> } };
const errors: unknown[] = [];

beforeAll(async () => {
  await ensureDist(); // the example imports @payhooks/receiver as published: from dist
  admin = new pg.Pool({ connectionString: DATABASE_URL, max: 1 });
  await admin.query(`CREATE DATABASE "${database}"`);
  pool = new pg.Pool({ connectionString: exampleUrl, max: 5 });
  const { createReceiver } = await import('../src/app.js');
  receiver = await createReceiver({ pool, secret: SECRET, onError: (e: unknown) => errors.push(e) });
  server = (receiver as unknown as { app: { listen(port: number, host: string): Server } }).app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 120_000);

afterAll(async () => {
  server?.closeAllConnections();
  server?.close();
  await receiver?.webhooks.close();
  await pool?.end();
  // pool.end() can resolve before the server side of its connections has gone: retry briefly.
  for (let i = 0; ; i++) {
    try {
      await admin?.query(`DROP DATABASE IF EXISTS "${database}"`);
      break;
    } catch (error) {
      if (i >= 50) throw error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  await admin?.end();
});

const ledger = async (account: string) =>
  (await pool.query('SELECT payment_id, amount::text, asset_code FROM ledger_entries WHERE account = $1', [account])).rows;

describe('examples/receiver-express', () => {
  it('spec 6.2.3: a payment.succeeded webhook credits the account once, through duplicates and a replay', async () => {
    const account = `acct_${randomBytes(4).toString('hex')}`;
    const event = paymentEvent({}, { amount: '25.50', metadata: { account } });
    const d = delivery(event);
    const first = await post(`${url}/webhooks/payhooks`, d.body, d.headers);
    expect(first.status).toBe(200);
    // At-least-once delivery: the same event again, concurrently and later (a Portal replay is re-signed).
    const again = await Promise.all([
      post(`${url}/webhooks/payhooks`, d.body, d.headers),
      post(`${url}/webhooks/payhooks`, d.body, delivery(event, { timestamp: Math.floor(Date.now() / 1000) + 2 }).headers),
    ]);
    expect(again.map((r) => r.status)).toEqual([200, 200]);
    await receiver.webhooks.drain();
    await until(async () => (await ledger(account)).length === 1, { message: 'the credit' });
    expect(await ledger(account)).toEqual([{ payment_id: event.data.object.id, amount: '25.50', asset_code: 'USDC.ETH' }]);
    const balance = await (await fetch(`${url}/accounts/${account}/balance`)).json();
    expect(balance).toEqual({ account, balances: [{ asset_code: 'USDC.ETH', balance: '25.50' }] });
  });

  it('spec 6.2.3: a status poll for an already credited payment credits nothing', async () => {
    const account = `acct_${randomBytes(4).toString('hex')}`;
    const event = paymentEvent({}, { metadata: { account } });
    await post(`${url}/webhooks/payhooks`, delivery(event).body, delivery(event).headers);
    await receiver.webhooks.drain();
    const { creditPayment } = receiver as unknown as { creditPayment(p: unknown): Promise<{ credited: boolean }> };
    expect(await creditPayment(event.data.object)).toEqual({ credited: false });
    expect(await ledger(account)).toHaveLength(1);
  });

  it('spec 5.1.7: a forged delivery is answered 400 and credits nothing', async () => {
    const account = `acct_${randomBytes(4).toString('hex')}`;
    const event = paymentEvent({}, { metadata: { account } });
    const d = delivery(event, { secret: 'whsec_guessed_by_an_attacker' });
    const response = await post(`${url}/webhooks/payhooks`, d.body, d.headers);
    expect(response.status).toBe(400);
    expect(response.json().error).toBe('bad_signature');
    await receiver.webhooks.drain();
    expect(await ledger(account)).toEqual([]);
  });

  it('spec 6.1.1: other event types are acknowledged with 200 and ignored', async () => {
    const account = `acct_${randomBytes(4).toString('hex')}`;
    for (const type of ['payment.failed', 'checkout_session.completed', 'payment.some_future_type']) {
      const d = delivery(paymentEvent({ type }, { metadata: { account } }));
      const response = await post(`${url}/webhooks/payhooks`, d.body, d.headers);
      expect(response.status).toBe(200);
      expect(response.json()).toEqual({ received: true, ignored: true });
    }
    await receiver.webhooks.drain();
    expect(await ledger(account)).toEqual([]);
  });

  it('spec 1: the browser returning from checkout credits nothing', async () => {
    const account = `acct_${randomBytes(4).toString('hex')}`;
    const response = await fetch(`${url}/checkout/return?payment=pay_123&account=${account}&status=succeeded`);
    expect(response.status).toBe(200);
    expect(await ledger(account)).toEqual([]);
  });

  it('spec 8: the work for a payment that cannot be attributed is not lost: it stays in payhooks_events with its error, for retries', async () => {
    const event = paymentEvent({}, { metadata: {} });
    const d = delivery(event);
    expect((await post(`${url}/webhooks/payhooks`, d.body, d.headers)).status).toBe(200);
    await receiver.webhooks.drain();
    const { rows } = await pool.query('SELECT state, last_error FROM payhooks_events WHERE event_id = $1', [event.id]);
    expect(rows[0].state).toBe('pending'); // retried from the table on the schedule, then kept as `failed`
    expect(rows[0].last_error).toMatch(/no metadata.account/);
  });

  it("payhooks check-receiver's made-up payments (metadata.payhooks_check) are settled at once, credited to no one", async () => {
    const event = paymentEvent({}, { metadata: { payhooks_check: true } });
    const errorsBefore = errors.length;
    const d = delivery(event);
    expect((await post(`${url}/webhooks/payhooks`, d.body, d.headers)).status).toBe(200);
    await receiver.webhooks.drain();
    const { rows } = await pool.query('SELECT state, last_error FROM payhooks_events WHERE event_id = $1', [event.id]);
    expect(rows).toEqual([{ state: 'done', last_error: null }]);
    expect(errors.slice(errorsBefore)).toEqual([]);
  });

  it('`npm start` (node server.js) serves a receiver that verifies and credits', async () => {
    const child: ChildProcess = spawn(process.execPath, ['server.js'], {
      cwd: EXAMPLE_DIR,
      env: { ...process.env, NODE_OPTIONS: '', PORT: '0', DATABASE_URL: exampleUrl, PAYHOOKS_WEBHOOK_SECRET: `whsec_old,${SECRET}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let output = '';
      child.stdout!.on('data', (c) => (output += c));
      child.stderr!.on('data', (c) => (output += c));
      await until(() => /listening on/.test(output), { message: 'the example server to start' });
      const webhookUrl = output.match(/http:\/\/localhost:(\d+)\/webhooks\/payhooks/)![0];
      const account = `acct_${randomBytes(4).toString('hex')}`;
      const d = delivery(paymentEvent({}, { metadata: { account } }));
      expect((await post(webhookUrl, d.body, d.headers)).status).toBe(200);
      await until(async () => (await ledger(account)).length === 1, { message: 'the credit' });
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  });

  it('`npm start` uses a database of its own: by default receiver_express, never `postgres`; a missing one is created', async () => {
    const { DEFAULT_DATABASE_URL } = await import('../src/database.js');
    expect(new URL(DEFAULT_DATABASE_URL).pathname).toBe('/receiver_express');
    const fresh = `${database}_new`;
    const freshUrl = DATABASE_URL.replace(/\/[^/]*$/, `/${fresh}`);
    const child: ChildProcess = spawn(process.execPath, ['server.js'], {
      cwd: EXAMPLE_DIR,
      env: { ...process.env, NODE_OPTIONS: '', PORT: '0', DATABASE_URL: freshUrl, PAYHOOKS_WEBHOOK_SECRET: SECRET },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const freshPool = new pg.Pool({ connectionString: freshUrl, max: 1 });
    try {
      let output = '';
      child.stdout!.on('data', (c) => (output += c));
      child.stderr!.on('data', (c) => (output += c));
      await until(() => /listening on/.test(output), { message: 'the example server to start' });
      expect(output).toContain(`created database ${fresh}`);
      const webhookUrl = output.match(/http:\/\/localhost:(\d+)\/webhooks\/payhooks/)![0];
      const account = `acct_${randomBytes(4).toString('hex')}`;
      const d = delivery(paymentEvent({}, { metadata: { account } }));
      expect((await post(webhookUrl, d.body, d.headers)).status).toBe(200);
      // The credit and the receiver's tables are in the new database.
      await until(async () => (await freshPool.query('SELECT 1 FROM ledger_entries WHERE account = $1', [account])).rowCount === 1, {
        message: 'the credit',
      });
      const { rows } = await freshPool.query(
        `SELECT count(*)::int AS n FROM information_schema.tables WHERE table_name IN ('payhooks_events', 'payhooks_credits', 'ledger_entries')`,
      );
      expect(rows[0].n).toBe(3);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      await freshPool.end();
      for (let i = 0; ; i++) {
        try {
          await admin.query(`DROP DATABASE IF EXISTS "${fresh}"`);
          break;
        } catch (error) {
          // biome-ignore lint/correctness/noUnsafeFinally: a database that cannot be dropped after 50 tries must fail the run
          if (i >= 50) throw error;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    }
  });
});

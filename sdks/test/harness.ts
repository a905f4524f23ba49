/**
 * One check for every example receiver (examples/receiver-<language>/), whatever its language.
 * Each example keeps the same contract:
 *
 * - an executable `start` in its folder that runs it on `PORT`, with `DATABASE_URL` (a PostgreSQL
 *   database it creates when missing) and `PAYHOOKS_WEBHOOK_SECRET` (several, comma-separated,
 *   during a rotation);
 * - `POST /webhooks/payhooks`: verify (spec 5.1), deduplicate on the evt_ id (6.2.1), acknowledge
 *   (6.2.2), then credit `payment.succeeded` to `metadata.account` once per payment id (6.2.3);
 *   other types, and payments without an account, are acknowledged and left alone (6.1.1);
 * - `GET /accounts/:account/balance` -> `{"account", "balances": [{"asset_code", "balance"}]}`.
 *
 * `describeExampleReceiver` runs `payhooks check-receiver` against it and a real payhooks
 * delivering a sandbox payment twice (the sandbox's double delivery), then once more (a resend
 * from the delivery log), signed while the example holds two secrets (a rotation).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_URL } from '../../packages/server/test/helpers/database.ts';
import { runPayhooks } from '../../packages/server/test/helpers/cli.ts';
import { startService, type TestService } from '../../packages/server/test/helpers/service.ts';
import { freePort, until } from '../../packages/server/test/helpers/wait.ts';
import type { CreatedPlatform } from '../../packages/server/src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../packages/server/src/delivery/worker.ts';

export const REPO_ROOT = join(import.meta.dirname, '..', '..');

export interface RunningExample {
  /** http://127.0.0.1:<port> */
  baseUrl: string;
  webhookUrl: string;
  /** What the example printed so far (stdout and stderr). */
  output(): string;
  balance(account: string): Promise<{ account: string; balances: Array<{ asset_code: string; balance: string }> }>;
  stop(): Promise<void>;
}

/**
 * Starts `<dir>/start` on `port` with a database that does not exist yet (the example creates
 * it), and waits until its balance route answers. The database is dropped by `stop()`.
 */
export async function startExample(
  dir: string,
  options: { port: number; secrets: string[]; timeoutMs?: number; env?: Record<string, string> },
): Promise<RunningExample> {
  const database = `rcv_${randomBytes(6).toString('hex')}`;
  const databaseUrl = new URL(ADMIN_URL);
  databaseUrl.pathname = `/${database}`;
  let output = '';
  const child: ChildProcess = spawn(join(dir, 'start'), [], {
    cwd: dir,
    env: {
      PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
      HOME: process.env.HOME ?? '/tmp',
      TMPDIR: process.env.TMPDIR ?? '/tmp',
      LANG: 'C.UTF-8',
      PORT: String(options.port),
      DATABASE_URL: databaseUrl.toString(),
      PAYHOOKS_WEBHOOK_SECRET: options.secrets.join(','),
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group, so stop() also ends what `start` spawned
  });
  child.stdout!.on('data', (b: Buffer) => (output += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (output += b.toString()));
  // Node may report the exit before it has read the last lines the process wrote (a worker's
  // "stopped" line, say): stopped means exited and its output ended ('close'), or, should a
  // process it started outlive it holding the pipes, exited and 10 s gone by.
  const exited = new Promise<void>((resolve) => {
    child.once('close', () => resolve());
    child.once('exit', () => setTimeout(resolve, 10_000).unref());
  });
  const baseUrl = `http://127.0.0.1:${options.port}`;
  const balance = async (account: string) => {
    const res = await fetch(`${baseUrl}/accounts/${encodeURIComponent(account)}/balance`);
    if (res.status !== 200) throw new Error(`GET balance answered ${res.status}: ${await res.text()}`);
    return (await res.json()) as Awaited<ReturnType<RunningExample['balance']>>;
  };
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        // already gone
      }
      const timer = setTimeout(() => {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          // already gone
        }
      }, 10_000);
      await exited;
      clearTimeout(timer);
    }
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    try {
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    } finally {
      await admin.end();
    }
  };
  try {
    await until(
      async () => {
        if (child.exitCode !== null) throw new Error(`start exited with ${child.exitCode}`);
        const body = await balance('probe');
        return body.account === 'probe' && Array.isArray(body.balances);
      },
      { timeout: options.timeoutMs ?? 120_000, interval: 100, message: `${dir}/start to answer GET /accounts/probe/balance` },
    );
  } catch (error) {
    await stop();
    throw new Error(`${(error as Error).message}\n--- output of ${dir}/start ---\n${output}`);
  }
  return { baseUrl, webhookUrl: `${baseUrl}/webhooks/payhooks`, output: () => output, balance, stop };
}

/**
 * The shared checks of one example receiver: check-receiver, then a real payhooks delivering a
 * sandbox payment with a duplicate and a resend. `dir` is the example's folder.
 */
export function describeExampleReceiver(name: string, dir: string, options: { startTimeoutMs?: number } = {}): void {
  describe(`examples/receiver-${name} (the shared receiver checks)`, () => {
    let svc: TestService;
    let p: CreatedPlatform;
    let worker: DeliveryWorker;
    let example: RunningExample;
    let secret: string;
    let endpointId: string;

    beforeAll(
      async () => {
        svc = await startService({ allowPrivateUrls: true, allowHttpUrls: true });
        p = await svc.platform(`Receiver ${name}`);
        worker = svc.ctx.createWorker();
        const port = await freePort();
        const created = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
          url: `http://127.0.0.1:${port}/webhooks/payhooks`,
          enabled_events: ['*'],
        });
        expect(created.status, JSON.stringify(created.body)).toBe(201);
        secret = created.body.secret;
        endpointId = created.body.id;
        // Mid-rotation: the example holds a newer secret first, then the endpoint's current one.
        const newer = `whsec_${randomBytes(24).toString('base64url')}`;
        example = await startExample(dir, { port, secrets: [newer, secret], timeoutMs: options.startTimeoutMs });
      },
      (options.startTimeoutMs ?? 120_000) + 30_000,
    );

    afterAll(async () => {
      await example?.stop();
      await svc?.close();
    });

    it('payhooks check-receiver: every duty holds (spec 4.2, 5.1, 6.1.1, 6.2)', async () => {
      const result = await runPayhooks(['check-receiver', example.webhookUrl, '--secret', secret, '--json'], {}, 120_000);
      const report = JSON.parse(result.stdout) as { ok: boolean; duties: Array<{ id: string; ok: boolean; observed: string }> };
      const failed = report.duties.filter((d) => !d.ok);
      expect(failed, `${JSON.stringify(failed, null, 2)}\n--- example output ---\n${example.output()}`).toEqual([]);
      expect(report.ok).toBe(true);
      expect(result.code).toBe(0);
    }, 150_000);

    it('spec 6.2: a sandbox payment delivered twice (double delivery) and resent from the log is credited once', async () => {
      const account = `acct_${randomBytes(4).toString('hex')}`;
      const created = await svc.api(p.keys.sandbox, 'POST', '/api/v1/payments', {
        amount: '12.34',
        asset_code: 'USDC.ETH',
        metadata: { account, note: 'café ✓' },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const payment = created.body;
      const processing = await svc.api(p.keys.sandbox, 'POST', `/api/v1/sandbox/payments/${payment.id}/simulate`, { status: 'processing' });
      expect(processing.status, JSON.stringify(processing.body)).toBe(200);
      const moved = await svc.api(p.keys.sandbox, 'POST', `/api/v1/sandbox/payments/${payment.id}/simulate`, {
        status: 'succeeded',
        double_delivery: true,
      });
      expect(moved.status, JSON.stringify(moved.body)).toBe(200);
      await worker.drain();
      const events = await svc.api(p.keys.sandbox, 'GET', `/api/v1/events?limit=100`);
      const succeeded = events.body.data.find(
        (e: { type: string; data: { object: { id: string } } }) => e.type === 'payment.succeeded' && e.data.object.id === payment.id,
      );
      expect(succeeded).toBeDefined();
      const deliveries = await until(
        async () => {
          const list = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?event_id=${succeeded.id}`);
          const data = list.body.data as Array<{ id: string; state: string; endpoint_id: string }>;
          return data.length === 2 && data.every((d) => d.state === 'delivered') ? data : false;
        },
        { timeout: 60_000, interval: 100, message: 'both copies delivered' },
      );
      expect(deliveries.every((d) => d.endpoint_id === endpointId)).toBe(true);
      // A resend from the delivery log: the same evt_ id, signed again.
      const scope = { platformId: p.platform_id, environment: 'sandbox' as const, actor: { type: 'operator' as const, id: 'test' } };
      const resent = await svc.ctx.deliveries.resend(scope, deliveries[0]!.id);
      const manual = resent.attempts.filter((a) => a.trigger === 'manual');
      expect(
        manual.map((a) => a.succeeded),
        JSON.stringify(resent),
      ).toEqual([true]);

      const credited = { account, balances: [{ asset_code: 'USDC.ETH', balance: '12.34' }] };
      let seen: unknown;
      await until(
        async () => {
          seen = await example.balance(account);
          return JSON.stringify(seen) === JSON.stringify(credited);
        },
        {
          timeout: 60_000,
          interval: 100,
          message: () =>
            `the example to credit ${account} once\nlast balance: ${JSON.stringify(seen)}\n--- example output ---\n${example.output()}`,
        },
      );
      // A later payment to another account, credited after the copies and the resend were handled:
      // by then a second credit of the first payment would show.
      const marker = `acct_${randomBytes(4).toString('hex')}`;
      const second = await svc.api(p.keys.sandbox, 'POST', '/api/v1/payments', {
        amount: '1.00',
        asset_code: 'USDC.ETH',
        metadata: { account: marker },
      });
      for (const status of ['processing', 'succeeded']) {
        await svc.api(p.keys.sandbox, 'POST', `/api/v1/sandbox/payments/${second.body.id}/simulate`, { status });
      }
      await worker.drain();
      await until(async () => (await example.balance(marker)).balances.length === 1, {
        timeout: 60_000,
        interval: 100,
        message: `the example to credit ${marker}`,
      });
      expect(await example.balance(account)).toEqual(credited);
      // Unknown and uncredited types were acknowledged (every delivery of this endpoint is delivered).
      const all = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?limit=100`);
      expect(all.body.data.filter((d: { state: string }) => d.state !== 'delivered')).toEqual([]);
      // Quiet: check-receiver's made-up payments and everything since left no stack trace behind.
      expect(example.output()).not.toMatch(/^\s+at \S/m);
    }, 120_000);
  });
}

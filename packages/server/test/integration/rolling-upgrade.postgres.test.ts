import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createPgDatabase } from '../helpers/database.ts';
import { killAllPayhooks, runPayhooks, startServe, type ServeProcess } from '../helpers/cli.ts';
import { spawnPayhooks, type Spawned } from '../helpers/spawn.ts';
import { apiClient } from '../helpers/service.ts';
import { payment } from '../helpers/publish.ts';
import { buildPreviousRelease, type PreviousRelease } from '../helpers/previous-release.ts';
import { until } from '../helpers/wait.ts';

/**
 * Issue 23 item 6: rolling upgrades. A release's migrations must leave the previous release
 * working (expand now, contract one release later), so an upgrade is: migrate, then roll the API
 * and worker processes one at a time, old and new side by side meanwhile. This runs the previous
 * release for real (built from the commit before the newest migration, found in git's history)
 * against the schema this release migrates to, beside this release's processes.
 */
const TOKEN = 'rolling-upgrade-internal-token-0123456789';

let prev: PreviousRelease;
let db: { url: string; drop(): Promise<void> };
let receiver: Server;
let receiverUrl = '';
const arrived = new Set<string>();
/** Worker processes this file started, killed at the end whatever happened. */
const workers: Spawned[] = [];

const env = {
  PAYHOOKS_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
  PAYHOOKS_INTERNAL_TOKEN: TOKEN,
  PAYHOOKS_ALLOW_PRIVATE_URLS: 'true',
  PAYHOOKS_ALLOW_HTTP_URLS: 'true',
  PAYHOOKS_POLL_INTERVAL: '200ms',
};
const envOf = () => ({ ...env, DATABASE_URL: db.url });

beforeAll(async () => {
  [prev, db] = await Promise.all([buildPreviousRelease(), createPgDatabase()]);
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      arrived.add((JSON.parse(Buffer.concat(chunks).toString()) as { id: string }).id);
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
}, 180_000);
afterAll(async () => {
  await killAllPayhooks();
  for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
  await new Promise<void>((r) => receiver?.close(() => r()));
  await db?.drop();
  await prev?.remove();
});

async function publishThrough(api: ServeProcess, merchant: string, tag: string): Promise<string> {
  const r = await apiClient(api.url)(TOKEN, 'POST', '/internal/v1/events', {
    type: 'payment.succeeded',
    merchant_id: merchant,
    environment: 'sandbox',
    data: { object: payment({ id: `pay_${tag}` }) },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.id as string;
}

async function delivered(id: string): Promise<void> {
  await until(() => arrived.has(id), { timeout: 30_000, message: `event ${id} to be delivered` });
}

function startWorker(bin?: string): Promise<Spawned> {
  const w = spawnPayhooks(['worker'], { ...envOf(), PAYHOOKS_LOG_LEVEL: 'info' }, bin);
  workers.push(w);
  return w.waitFor('workers started').then(() => w);
}

it('the previous release keeps delivering on the migrated schema while API and workers are rolled one at a time', async () => {
  // The previous release, as deployed: its schema, its API and its worker.
  expect((await runPayhooks(['migrate'], envOf(), 60_000, prev.bin)).code).toBe(0);
  const created = await runPayhooks(['admin', 'create-platform', '--name', 'Rolling', '--json'], envOf(), 60_000, prev.bin);
  expect(created.code, created.stderr).toBe(0);
  const platform = JSON.parse(created.stdout) as { merchant_id: string; keys: { sandbox: string } };
  const oldApi = await startServe(['--no-worker'], envOf(), 60_000, prev.bin);
  const endpoint = await apiClient(oldApi.url)(platform.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
    url: receiverUrl,
    enabled_events: ['*'],
  });
  expect(endpoint.status).toBe(201);
  let oldWorker = await startWorker(prev.bin);
  await delivered(await publishThrough(oldApi, platform.merchant_id, 'before'));

  // 1. Migrate. Deploy scripts ask first: exit 3 and the pending names, nothing applied.
  const check = await runPayhooks(['migrate', '--check'], envOf());
  expect(check.code, check.stdout + check.stderr).toBe(3);
  expect(check.stdout).toContain(prev.newest.replace(/\.sql$/, ''));
  const migrated = await runPayhooks(['migrate'], envOf());
  expect(migrated.code, migrated.stderr).toBe(0);
  expect(migrated.stdout).toContain(prev.newest.replace(/\.sql$/, ''));
  expect((await runPayhooks(['migrate', '--check'], envOf())).code).toBe(0);

  // The previous release on the new schema: its API publishes, its worker delivers, and a
  // previous-release worker started now (a restart during the roll) starts and delivers too.
  await delivered(await publishThrough(oldApi, platform.merchant_id, 'migrated'));
  oldWorker.child.kill('SIGTERM');
  await oldWorker.exited;
  oldWorker = await startWorker(prev.bin);
  await delivered(await publishThrough(oldApi, platform.merchant_id, 'restarted'));

  // 2. Roll the API: a new API process beside the old one; the old worker delivers what it publishes.
  const newApi = await startServe(['--no-worker'], envOf());
  await delivered(await publishThrough(newApi, platform.merchant_id, 'newapi'));
  // The old API reads the log the new schema holds (each outcome is recorded just after its arrival).
  // Any answer but 200 ends the wait and fails the test at once.
  const list = await until(
    async () => {
      const l = await apiClient(oldApi.url)(platform.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?endpoint_id=${endpoint.body.id}`);
      const states = l.status === 200 ? l.body.data.map((d: { state: string }) => d.state).join() : '';
      return l.status !== 200 || states === 'delivered,delivered,delivered,delivered' ? l : undefined;
    },
    { timeout: 30_000, message: 'the four deliveries to be recorded as delivered' },
  );
  expect(list.status).toBe(200);
  await oldApi.stop();

  // 3. Roll the workers: a new one beside the old, then the old one stops.
  const newWorker = await startWorker();
  oldWorker.child.kill('SIGTERM');
  expect(await oldWorker.exited).toBe(0);
  await delivered(await publishThrough(newApi, platform.merchant_id, 'after'));
  newWorker.child.kill('SIGTERM');
  await newWorker.exited;
  await newApi.stop();
}, 120_000);

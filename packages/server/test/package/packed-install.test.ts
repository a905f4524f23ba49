import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import semver from 'semver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureDist as ensureReceiverDist } from '../../../receiver/test/helpers/build.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';

/*
 * What a user gets from the registry: the three publishable packages packed with `npm pack`,
 * installed from the tarballs into an empty directory outside the workspace (only the registry's
 * own dependencies come from the network, through the npm cache), then `npx payhooks serve --dev`
 * there. Nothing from the workspace (sources, tsx, node_modules) can be reached from that
 * directory, so a file missing from a package's `files`, a dependency missing from its
 * package.json or a path that only works in the repository fails here.
 */

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const SERVER = join(ROOT, 'packages/server');
const PACKAGES = ['packages/contract', 'packages/server', 'packages/receiver'];

let dir: string;
let serve: ChildProcess | null = null;
let output = '';
let receiver: TestReceiver;

/** A clean environment: nothing of the test runner's PAYHOOKS_* or NODE_OPTIONS. */
function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', TMPDIR: process.env.TMPDIR ?? '/tmp', ...extra };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'payhooks-packed-'));
  receiver = await startReceiver();
  // The build `npm test` ran (the server's is refreshed by the global setup); packing skips the
  // lifecycle scripts so no package's dist/ is rebuilt under the feet of other running tests,
  // and the server's prepack step that matters here, bundling the portal, is run as it is.
  await ensureReceiverDist();
  await run(process.execPath, [join(SERVER, 'scripts/copy-assets.js'), '--portal'], { cwd: SERVER });
  const packed = await run(
    'npm',
    ['pack', '--ignore-scripts', '--json', '--pack-destination', dir, ...PACKAGES.flatMap((p) => ['-w', p])],
    { cwd: ROOT, env: { ...process.env, npm_config_loglevel: 'error' } },
  );
  const tarballs = (JSON.parse(packed.stdout) as Array<{ filename: string }>).map((t) => `./${t.filename}`);
  expect(tarballs).toHaveLength(3);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'payhooks-packed-install-test', private: true, type: 'module' }));
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', ...tarballs], {
    cwd: dir,
    env: env(),
    timeout: 300_000,
  });
}, 360_000);

afterAll(async () => {
  if (serve && serve.exitCode === null) {
    // npx runs payhooks in a child: stop the whole process group.
    try {
      process.kill(-serve.pid!, 'SIGTERM');
    } catch {
      // already gone
    }
    await new Promise((r) => serve!.once('exit', r));
  }
  await receiver?.close();
  // The server npx started may still be writing its data directory for a moment after npx exits.
  if (dir) rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
});

describe('the packed packages, installed from their tarballs outside the workspace', () => {
  it('carry compiled code, migrations, the portal and licenses, and no TypeScript sources', () => {
    const server = join(dir, 'node_modules/@payhooks/server');
    expect(existsSync(join(server, 'dist/cli/run.js'))).toBe(true);
    expect(existsSync(join(server, 'dist/db/migrations/0001_tenancy_and_endpoints.sql'))).toBe(true);
    expect(existsSync(join(server, 'dist/portal-ui/index.html'))).toBe(true);
    expect(existsSync(join(server, 'src'))).toBe(false);
    for (const name of ['server', 'contract', 'receiver']) {
      const pkg = JSON.parse(readFileSync(join(dir, `node_modules/@payhooks/${name}/package.json`), 'utf8')) as Record<string, unknown>;
      expect(pkg.private, name).toBeUndefined();
      expect(pkg.license, name).toBe('MIT');
      expect(existsSync(join(dir, `node_modules/@payhooks/${name}/LICENSE`)), `${name} LICENSE`).toBe(true);
    }
    expect(existsSync(join(dir, 'node_modules/tsx')), 'tsx is not a run-time dependency').toBe(false);
  });

  it('carry no install-time script, and nothing installed refuses the Node.js version the README names (20.19)', () => {
    for (const name of ['server', 'contract', 'receiver']) {
      const pkg = JSON.parse(readFileSync(join(dir, `node_modules/@payhooks/${name}/package.json`), 'utf8')) as {
        scripts?: Record<string, string>;
      };
      for (const hook of ['preinstall', 'install', 'postinstall', 'prepare'])
        expect(pkg.scripts?.[hook], `${name} ${hook}`).toBeUndefined();
    }
    const refusing: string[] = [];
    let checked = 0;
    const walk = (modules: string) => {
      if (!existsSync(modules)) return;
      for (const entry of readdirSync(modules)) {
        if (entry.startsWith('.')) continue;
        const names = entry.startsWith('@') ? readdirSync(join(modules, entry)).map((n) => join(entry, n)) : [entry];
        for (const n of names) {
          const manifest = join(modules, n, 'package.json');
          if (!existsSync(manifest)) continue;
          const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { name: string; version: string; engines?: { node?: string } };
          checked++;
          if (pkg.engines?.node && !semver.satisfies('20.19.0', pkg.engines.node))
            refusing.push(`${pkg.name}@${pkg.version} (${pkg.engines.node})`);
          walk(join(modules, n, 'node_modules'));
        }
      }
    };
    walk(join(dir, 'node_modules'));
    expect(checked).toBeGreaterThan(50);
    expect(refusing).toEqual([]);
  });

  it('export publishEvent and publishEvents for in-process code, which publish on the embedded database', async () => {
    // A payment core in the same process: open the database, publish in its transaction.
    const script = `
      import { openDatabase, migrate, createPlatform, publishEvent, publishEvents } from '@payhooks/server';
      const database = await openDatabase({});
      await migrate(database);
      const p = await createPlatform(database.db, 'in-process');
      const object = { id: 'pay_1', object: 'payment', status: 'succeeded', amount: '1.00', asset_code: 'USDC.ETH', metadata: {} };
      const one = await database.db.transaction((tx) =>
        publishEvent(tx, { type: 'payment.succeeded', merchantId: p.merchant_id, environment: 'sandbox', object }, new Date()));
      const many = await database.db.transaction((tx) =>
        publishEvents(tx, [{ type: 'payment.succeeded', merchantId: p.merchant_id, environment: 'sandbox', object }], new Date()));
      console.log(JSON.stringify({ one: one.event.id, many: many[0].ok && many[0].result.event.id }));
      await database.close();
    `;
    const out = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: dir, env: env() });
    const ids = JSON.parse(out.stdout.trim().split('\n').at(-1)!) as { one: string; many: string };
    expect(ids.one).toMatch(/^evt_/);
    expect(ids.many).toMatch(/^evt_/);
  });

  it('npx payhooks --version and --help run', async () => {
    const version = await run('npx', ['--no-install', 'payhooks', '--version'], { cwd: dir, env: env() });
    expect(version.stdout.trim()).toBe(JSON.parse(readFileSync(join(SERVER, 'package.json'), 'utf8')).version);
    const help = await run('npx', ['--no-install', 'payhooks', '--help'], { cwd: dir, env: env() });
    expect(help.stdout).toContain('PAYHOOKS_PORT');
  });

  it('npx payhooks serve --dev answers /readyz, serves the portal, and delivers an event signed for @payhooks/receiver', async () => {
    const dataDir = join(dir, 'data');
    serve = spawn('npx', ['--no-install', 'payhooks', 'serve', '--dev'], {
      cwd: dir,
      env: env({ PAYHOOKS_PORT: '0', PAYHOOKS_DATA_DIR: dataDir, PAYHOOKS_LOG_LEVEL: 'info' }),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    serve.stdout!.on('data', (b: Buffer) => (output += b.toString()));
    serve.stderr!.on('data', (b: Buffer) => (output += b.toString()));
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no dev banner in 60 s:\n${output}`)), 60_000);
      const check = () => {
        const m = /Health\s+(http:\/\/\S+)\/readyz/.exec(output);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      };
      serve!.stdout!.on('data', check);
      serve!.once('exit', (code) => reject(new Error(`payhooks serve exited (${code}):\n${output}`)));
    });

    let ready = 0;
    for (let i = 0; i < 100 && ready !== 200; i++) {
      ready = await fetch(`${url}/readyz`).then(
        (r) => r.status,
        () => 0,
      );
      if (ready !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(ready).toBe(200);
    const portal = await fetch(`${url}/portal/`);
    expect(portal.status).toBe(200);
    expect(await portal.text()).toContain('<div id="root"');

    const { keys } = JSON.parse(readFileSync(join(dataDir, 'dev-platform.json'), 'utf8')) as { keys: { sandbox: string } };
    const created = await fetch(`${url}/api/v1/webhook_endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.sandbox}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `${receiver.url}/hooks`, enabled_events: ['payment.succeeded'] }),
    });
    expect(created.status).toBe(201);
    const { secret } = (await created.json()) as { secret: string };

    const triggered = await run(
      'npx',
      ['--no-install', 'payhooks', 'trigger', 'payment.succeeded', '--api-key', keys.sandbox, '--url', url, '--json'],
      { cwd: dir, env: env() },
    );
    const { events } = JSON.parse(triggered.stdout) as { events: Array<{ id: string; type: string }> };
    const succeeded = events.find((e) => e.type === 'payment.succeeded')!;

    await receiver.waitFor(1, 30_000);
    const delivery = receiver.requests[0]!;
    // The installed receiver package verifies what the installed server signed.
    const sdk = (await import(pathToFileURL(join(dir, 'node_modules/@payhooks/receiver/dist/index.js')).href)) as {
      verifyWebhook(input: { body: string; headers: Record<string, unknown>; secret: string }): { id: string; type: string };
    };
    const event = sdk.verifyWebhook({ body: delivery.raw.toString('utf8'), headers: delivery.headers, secret });
    expect(event.id).toBe(succeeded.id);
    expect(event.type).toBe('payment.succeeded');
  }, 120_000);
});

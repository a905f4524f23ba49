import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECRET, delivery, paymentEvent } from '../../packages/receiver/test/helpers/events.ts';
import { ADMIN_URL } from '../../packages/server/test/helpers/database.ts';
import { freePort, until } from '../../packages/server/test/helpers/wait.ts';
import { REPO_ROOT, describeExampleReceiver, startExample, type RunningExample } from './harness.ts';

const SDK = join(REPO_ROOT, 'sdks', 'php');
const vectors = JSON.parse(readFileSync(join(REPO_ROOT, 'packages/contract/test-vectors/webhook-signatures.json'), 'utf8')) as {
  vectors: Array<{ name: string }>;
};
const reports = mkdtempSync(join(tmpdir(), 'payhooks-php-'));
afterAll(() => rmSync(reports, { recursive: true, force: true }));

describe("sdks/php: the library's own tests (PHPUnit, real PostgreSQL, Redis, php -S and php-fpm)", () => {
  it('spec 5.1, 6.2: pass, and run every shared signature vector', () => {
    const junit = join(reports, 'junit.xml');
    // Debian's phpunit and PHP; no `composer install` (tests/bootstrap.php autoloads).
    const run = spawnSync('/usr/bin/phpunit', ['--log-junit', junit], {
      cwd: SDK,
      encoding: 'utf8',
      timeout: 240_000,
      env: { ...process.env, PAYHOOKS_TEST_DATABASE_URL: ADMIN_URL },
    });
    const output = `${run.stdout}\n${run.stderr}`;
    expect(run.status, output).toBe(0);
    expect(output).toMatch(/^OK \(\d+ tests, \d+ assertions\)$/m);
    // Each vector is one data set of VectorsTest::testVector, named after the vector.
    const report = readFileSync(junit, 'utf8');
    const ran = [...report.matchAll(/<testcase name="testVector with data set &quot;([a-z0-9_]+)&quot;"[^>]*\/>/g)].map((m) => m[1]);
    expect(ran.sort(), output).toEqual(vectors.vectors.map((v) => v.name).sort());
  }, 240_000);
});

describe('sdks/php: the package a merchant installs (composer validate, composer install from a path repository)', () => {
  // Debian's composer, offline: no Packagist, a throw-away COMPOSER_HOME.
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: reports,
    LANG: 'C.UTF-8',
    COMPOSER_HOME: join(reports, 'composer-home'),
    COMPOSER_DISABLE_NETWORK: '1',
    COMPOSER_NO_INTERACTION: '1',
  };
  const run = (command: string, args: string[], cwd: string) => {
    const r = spawnSync(command, args, { cwd, encoding: 'utf8', env, timeout: 120_000 });
    return { status: r.status, output: `${r.stdout}\n${r.stderr}` };
  };

  it('composer.json: composer validate --strict is clean, with no version field (the tag is the version)', () => {
    const manifest = JSON.parse(readFileSync(join(SDK, 'composer.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest).not.toHaveProperty('version');
    const r = run('/usr/bin/composer', ['validate', '--strict', '--no-check-publish'], SDK);
    expect(r.status, r.output).toBe(0);
    expect(r.output).toContain('./composer.json is valid');
    expect(r.output).not.toMatch(/warning/i);
  });

  it('every file of src/ and bin/ parses (php -l; Debian ships no PHPStan or Psalm)', () => {
    const files = [
      ...readdirSync(join(SDK, 'src'), { recursive: true, encoding: 'utf8' })
        .filter((f) => f.endsWith('.php'))
        .map((f) => join(SDK, 'src', f)),
      join(SDK, 'bin', 'payhooks-worker'),
    ];
    expect(files.length).toBeGreaterThan(20);
    for (const file of files) {
      const r = run('/usr/bin/php', ['-l', file], SDK);
      expect(r.status, r.output).toBe(0);
    }
  });

  it("composer install into a merchant's project loads it through vendor/autoload.php, without the tests", () => {
    const app = join(reports, 'merchant-app');
    mkdirSync(app);
    writeFileSync(
      join(app, 'composer.json'),
      JSON.stringify({
        name: 'merchant/app',
        type: 'project',
        repositories: [{ type: 'path', url: SDK, options: { symlink: false } }, { 'packagist.org': false }],
        require: { 'payhooks/receiver': '*@dev' },
      }),
    );
    const install = run('/usr/bin/composer', ['install', '--no-progress'], app);
    expect(install.status, install.output).toBe(0);
    const installed = join(app, 'vendor', 'payhooks', 'receiver');
    // .gitattributes' export-ignore: the package is the library, its licence, README and worker.
    expect(readdirSync(installed).sort()).toEqual(['LICENSE', 'README.md', 'autoload.php', 'bin', 'composer.json', 'src']);
    writeFileSync(
      join(app, 'check.php'),
      `<?php
declare(strict_types=1);
require __DIR__ . '/vendor/autoload.php';
use Payhooks\\Receiver\\Store\\MemoryStore;
use Payhooks\\Receiver\\Webhook;
use Payhooks\\Receiver\\WebhookHandler;
$file = (new ReflectionClass(Webhook::class))->getFileName();
if (!str_starts_with($file, __DIR__ . '/vendor/payhooks/receiver/src/')) { fwrite(STDERR, "loaded from $file\\n"); exit(1); }
$event = ['id' => 'evt_1', 'object' => 'event', 'type' => 'payment.succeeded', 'data' => ['object' => ['id' => 'pay_1', 'object' => 'payment']]];
['body' => $body, 'headers' => $headers] = Webhook::signTestDelivery($event, 'whsec_install_check');
if (Webhook::verify($body, $headers, 'whsec_install_check')->id !== 'evt_1') { exit(1); }
$handler = new WebhookHandler(secret: 'whsec_install_check', store: new MemoryStore(), onEvent: static function (): void {});
$answer = $handler->receive($body, $headers);
echo "payhooks/receiver answered {$answer->status}\\n";
`,
    );
    const check = run('/usr/bin/php', ['check.php'], app);
    expect(check.status, check.output).toBe(0);
    expect(check.output).toContain('payhooks/receiver answered 200');
    // The worker is linked into vendor/bin and finds the project's autoloader.
    expect(run(join(app, 'vendor', 'bin', 'payhooks-worker'), [], app).output).toContain('usage: payhooks-worker <bootstrap.php');
  }, 150_000);
});

const EXAMPLE = join(REPO_ROOT, 'examples', 'receiver-php');

describeExampleReceiver('php', EXAMPLE);

describe('examples/receiver-php: the work after the answer, the worker, the ledger, stopping', () => {
  // The example's database is named here (DATABASE_URL), so the test can read payhooks_events.
  const database = `rcv_php_${randomBytes(5).toString('hex')}`;
  const databaseUrl = Object.assign(new URL(ADMIN_URL), { pathname: `/${database}` }).toString();
  let example: RunningExample;
  let pool: pg.Pool;

  beforeAll(async () => {
    example = await startExample(EXAMPLE, { port: await freePort(), secrets: [SECRET], env: { DATABASE_URL: databaseUrl } });
    pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  }, 150_000);

  afterAll(async () => {
    if (pool && !pool.ended) await pool.end();
    await example?.stop();
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).finally(() => admin.end());
  });

  const post = (d: { body: string; headers: Record<string, string> }) =>
    fetch(example.webhookUrl, { method: 'POST', body: d.body, headers: d.headers });
  const row = async (id: string) =>
    (await pool.query('SELECT state, attempts, last_error FROM payhooks_events WHERE event_id = $1', [id])).rows[0] as
      | { state: string; attempts: number; last_error: string | null }
      | undefined;

  it('spec 6.2.3: balances are one entry per asset, sorted, with two decimals', async () => {
    const account = `acct_${randomBytes(4).toString('hex')}`;
    for (const [amount, asset_code] of [
      ['10.50', 'USDC.ETH'],
      ['0.25', 'USDC.ETH'],
      ['1', 'BTC'],
    ]) {
      const res = await post(delivery(paymentEvent({}, { amount, asset_code, metadata: { account } })));
      expect(res.status).toBe(200);
    }
    await until(
      async () =>
        (await example.balance(account)).balances.length === 2 && (await example.balance(account)).balances[1]!.balance === '10.75',
      { timeout: 60_000, interval: 100, message: 'three credits' },
    );
    expect(await example.balance(account)).toEqual({
      account,
      balances: [
        { asset_code: 'BTC', balance: '1.00' },
        { asset_code: 'USDC.ETH', balance: '10.75' },
      ],
    });
  });

  it('spec 8: a payment without metadata.account is kept with its error and retried by the worker, one log line per attempt', async () => {
    const event = paymentEvent({}, { metadata: {} });
    const res = await post(delivery(event));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ received: true });
    // The first attempt runs after the answer, in the web request; the second (after 1 s) in the worker.
    const retried = await until(
      async () => {
        const r = await row(event.id);
        return r && r.attempts >= 2 && r.state === 'pending' ? r : false;
      },
      { timeout: 60_000, interval: 100, message: 'the worker to retry it' },
    );
    expect(retried.last_error).toMatch(/no metadata\.account/);
    const lines = example
      .output()
      .split('\n')
      .filter((l) => l.includes(event.id));
    expect(lines.slice(0, 2)).toEqual([
      expect.stringMatching(
        new RegExp(`process error for ${event.id} \\(attempt 1\\): payment \\S+ has no metadata\\.account; will retry$`),
      ),
      expect.stringMatching(new RegExp(`process error for ${event.id} \\(attempt 2\\): .*; will retry$`)),
    ]);
    expect(example.output()).not.toMatch(/Stack trace|^#\d /m);
  });

  it('spec 5.1.7: a forged delivery is answered 400 with the reason, logged in one line, and credits nothing', async () => {
    const account = `acct_${randomBytes(4).toString('hex')}`;
    const d = delivery(paymentEvent({}, { metadata: { account } }), { secret: `whsec_${randomBytes(16).toString('hex')}` });
    const res = await post(d);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('bad_signature');
    // The line is written by a PHP process after it answered: wait for it rather than race it.
    await until(() => /rejected a delivery with 400: bad_signature/.test(example.output()), {
      timeout: 60_000,
      interval: 100,
      message: 'the rejection log line',
    });
    expect(example.output().match(/rejected a delivery with 400: bad_signature/g)).toHaveLength(1);
    expect(await example.balance(account)).toEqual({ account, balances: [] });
  });

  it('stops on SIGTERM: the web server and the worker end, the port is closed', async () => {
    // Closed first: stopping drops the example's database, which would end its connections under it.
    await pool.end();
    await example.stop();
    expect(example.output()).toContain('[payhooks-worker] stopped');
    await expect(fetch(`${example.baseUrl}/accounts/probe/balance`)).rejects.toThrow();
  });
});

import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listMigrations } from '../../src/db/migrate.ts';
import { backend, createPgDatabase } from '../helpers/database.ts';
import { killAllPayhooks, runPayhooks, startServe, type ServeProcess } from '../helpers/cli.ts';
import { apiClient } from '../helpers/variant.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { portalSignIn } from '../helpers/portal.ts';

/**
 * The `payhooks` CLI as a real process: migrate, the admin commands, serve (on this run's
 * backend: DATABASE_URL on postgres, a PAYHOOKS_DATA_DIR on pglite), serve --dev, and the
 * start-up errors. Spawns cost 1-2 s each, so they are few and ordered to share work.
 */

const COLLECTION = '/api/v1/webhook_endpoints';
/** A spawn is 1-2 s alone, but a fresh embedded database takes several more on a busy machine. */
const SPAWN_TIMEOUT = 90_000;
/** How long one spawned command may take before it is killed (below SPAWN_TIMEOUT, so the test reports it). */
const RUN_TIMEOUT = 80_000;

/** Environment that points the CLI at this run's database. */
let dbEnv: Record<string, string>;
let dropDb = async () => {};
const tmpDirs: string[] = [];

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-cli-'));
  tmpDirs.push(dir);
  return dir;
}

beforeAll(async () => {
  if (backend === 'postgres') {
    const db = await createPgDatabase();
    dropDb = db.drop;
    dbEnv = { DATABASE_URL: db.url, PAYHOOKS_ENCRYPTION_KEY: randomBytes(32).toString('hex') };
  } else {
    dbEnv = { PAYHOOKS_DATA_DIR: tempDir() };
  }
});

afterAll(async () => {
  await killAllPayhooks();
  await dropDb();
  for (const dir of tmpDirs) rmSync(dir, { recursive: true, force: true });
});

function expectCleanFailure(r: { code: number | null; stderr: string }, ...fragments: string[]) {
  expect(r.code, r.stderr).toBe(1);
  for (const f of fragments) expect(r.stderr).toContain(f);
  expect(r.stderr).toMatch(/^payhooks: /);
  expect(r.stderr, 'no stack trace').not.toMatch(/\n\s+at /);
}

describe(`payhooks CLI on ${backend}`, () => {
  let platform: {
    platform_id: string;
    merchant_id: string;
    keys: { sandbox: string; live: string };
    portal: { email: string; password: string };
  };
  let portalUser: { id: string; platform_id: string; email: string; password: string };
  let extraLiveKey: { id: string; environment: string; key: string };

  it(
    'payhooks admin create-platform --json on an empty database migrates it and prints one JSON object; logs go to stderr',
    async () => {
      const r = await runPayhooks(
        ['admin', 'create-platform', '--name', 'Acme Payments', '--json'],
        { ...dbEnv, PAYHOOKS_LOG_LEVEL: 'info' },
        RUN_TIMEOUT,
      );
      expect(r.code, r.stderr).toBe(0);
      const lines = r.stdout.trim().split('\n');
      expect(lines).toHaveLength(1);
      platform = JSON.parse(lines[0]!);
      expect(platform).toEqual({
        platform_id: expect.stringMatching(/^plt_[0-9A-Za-z]{24}$/),
        merchant_id: expect.stringMatching(/^mch_[0-9A-Za-z]{24}$/),
        keys: { sandbox: expect.stringMatching(/^sk_test_[0-9A-Za-z]{32}$/), live: expect.stringMatching(/^sk_live_[0-9A-Za-z]{32}$/) },
        // The first Merchant Portal user, with its one-time password.
        portal: {
          email: `admin+${platform.platform_id.toLowerCase()}@payhooks.local`,
          password: expect.stringMatching(/^[0-9A-Za-z]{20}$/),
        },
      });
      // The empty database was migrated on the way, and said so on stderr.
      expect(r.stderr).toContain('migrations applied');
      for (const m of listMigrations()) expect(r.stderr).toContain(m.name);
    },
    SPAWN_TIMEOUT,
  );

  it(
    'payhooks admin create-user --platform ID --email E --json prints the user and a one-time password; a taken email or unknown Platform exits 1',
    async () => {
      const r = await runPayhooks(
        ['admin', 'create-user', '--platform', platform.platform_id, '--email', 'Ops@Acme.example', '--json'],
        dbEnv,
        RUN_TIMEOUT,
      );
      expect(r.code, r.stderr).toBe(0);
      portalUser = JSON.parse(r.stdout.trim());
      expect(portalUser).toEqual({
        id: expect.stringMatching(/^usr_/),
        platform_id: platform.platform_id,
        email: 'ops@acme.example',
        role: 'developer',
        password: expect.stringMatching(/^[0-9A-Za-z]{20}$/),
      });
      const taken = await runPayhooks(['admin', 'create-user', '--platform', platform.platform_id, '--email', 'ops@acme.example'], dbEnv);
      expectCleanFailure(taken, 'ops@acme.example', "is already on this Platform's team");
      const noPlatform = await runPayhooks(['admin', 'create-user', '--platform', 'plt_nope', '--email', 'x@acme.example'], dbEnv);
      expectCleanFailure(noPlatform, 'plt_nope');
    },
    SPAWN_TIMEOUT,
  );

  it(
    'payhooks migrate finds the database up to date',
    async () => {
      const r = await runPayhooks(['migrate'], dbEnv, RUN_TIMEOUT);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.trim()).toBe('database is up to date');
    },
    SPAWN_TIMEOUT,
  );

  it(
    'payhooks admin create-key --platform ID --environment live prints a new live key; an unknown Platform exits 1',
    async () => {
      const good = () => runPayhooks(['admin', 'create-key', '--platform', platform.platform_id, '--environment', 'live', '--json'], dbEnv);
      const bad = () => runPayhooks(['admin', 'create-key', '--platform', 'plt_nope', '--environment', 'live'], dbEnv);
      // PostgreSQL takes both at once; the embedded database one process at a time.
      const [ok, noPlatform] = backend === 'postgres' ? await Promise.all([good(), bad()]) : [await good(), await bad()];
      expect(ok.code, ok.stderr).toBe(0);
      extraLiveKey = JSON.parse(ok.stdout.trim());
      expect(extraLiveKey).toEqual({
        id: expect.stringMatching(/^key_/),
        environment: 'live',
        key: expect.stringMatching(/^sk_live_[0-9A-Za-z]{32}$/),
      });
      expect(extraLiveKey.key).not.toBe(platform.keys.live);
      expectCleanFailure(noPlatform, 'plt_nope');
    },
    SPAWN_TIMEOUT,
  );

  it(
    'payhooks admin revoke-key KEY_PREFIX revokes that key',
    async () => {
      const prefix = platform.keys.live.slice(0, 12);
      const r = await runPayhooks(['admin', 'revoke-key', prefix], dbEnv);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^revoked key_[0-9A-Za-z]+ \\(${prefix}…\\)`));
    },
    SPAWN_TIMEOUT,
  );

  describe('payhooks serve', () => {
    let server: ServeProcess;
    beforeAll(async () => {
      server = await startServe([], dbEnv, RUN_TIMEOUT);
    }, SPAWN_TIMEOUT);
    afterAll(async () => {
      await server?.stop();
    });

    it('answers /healthz and /readyz with its database', async () => {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const ready = await fetch(`${server.url}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ status: 'ready', database: backend });
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    });

    it('spec 4.1: the keys from admin create-platform work against the API', async () => {
      const api = apiClient(server.url);
      const created = await api(platform.keys.sandbox, 'POST', COLLECTION, {
        url: 'https://merchant.example.com/hooks',
        enabled_events: ['payment.succeeded'],
      });
      expect(created.status).toBe(201);
      expect(created.body.secret).toMatch(/^whsec_/);
      const list = await api(platform.keys.sandbox, 'GET', COLLECTION);
      expect(list.status).toBe(200);
      expect(list.body.data.map((e: { id: string }) => e.id)).toEqual([created.body.id]);
    });

    it('the portal users from create-platform and create-user sign in to the Merchant Portal of that Platform', async () => {
      for (const user of [platform.portal, portalUser]) {
        const portal = await portalSignIn(server.url, user.email, user.password);
        expect(portal.session.platform.id).toBe(platform.platform_id);
      }
      expect((await fetch(`${server.url}/portal/`)).status).toBe(200);
    });

    it('the key from admin create-key works; the revoked key is 401 api_key_revoked', async () => {
      const api = apiClient(server.url);
      const live = await api(extraLiveKey.key, 'POST', COLLECTION, { url: 'https://merchant.example.com/live', enabled_events: ['*'] });
      expect(live.status).toBe(201);
      expect(live.body.environment).toBe('live');
      const revoked = await api(platform.keys.live, 'GET', COLLECTION);
      expect(revoked.status).toBe(401);
      expect(revoked.body.error).toMatchObject({ type: 'authentication_error', code: 'api_key_revoked' });
    });

    it('a plain serve refuses private URLs and http for live (no dev defaults)', async () => {
      const api = apiClient(server.url);
      const local = await api(platform.keys.sandbox, 'POST', COLLECTION, { url: 'http://127.0.0.1:4000/h', enabled_events: ['*'] });
      expect(local.status).toBe(422);
      expect(local.body.error.code).toBe('url_not_allowed');
    });

    it(
      backend === 'pglite'
        ? 'the embedded database is one process at a time: a second process on the data dir exits 1 with a clear error'
        : 'PostgreSQL is shared: an admin command works while serve runs, and its key works on the server at once',
      async () => {
        if (backend === 'pglite') {
          const second = await runPayhooks(['migrate'], dbEnv);
          expectCleanFailure(second, 'in use by process', String(server.child.pid), 'DATABASE_URL');
        } else {
          const second = await runPayhooks(
            ['admin', 'create-key', '--platform', platform.platform_id, '--environment', 'sandbox', '--json'],
            dbEnv,
          );
          expect(second.code, second.stderr).toBe(0);
          const { key } = JSON.parse(second.stdout) as { key: string };
          expect((await apiClient(server.url)(key, 'GET', COLLECTION)).status).toBe(200);
        }
        // Either way the running server was not disturbed.
        expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
      },
      SPAWN_TIMEOUT,
    );

    it('stops on SIGTERM with exit code 0', async () => {
      const { code } = await server.stop();
      expect(code).toBe(0);
      // The data dir lock is released: the next test's process opens it.
    });
  });

  it(
    'serve --dev prints the banner with the URL and a sk_test_ and sk_live_ key that work',
    async () => {
      // On pglite the same data dir (free again); on postgres the same database, plus a
      // directory for the dev Platform file.
      const dev = await startServe(['--dev'], backend === 'pglite' ? dbEnv : { ...dbEnv, PAYHOOKS_DATA_DIR: tempDir() }, RUN_TIMEOUT);
      try {
        const out = dev.stdout();
        expect(out).toContain('DEVELOPMENT MODE');
        expect(out).toContain(`${dev.url}/api/v1`);
        const sandbox = /Sandbox key\s+(sk_test_[0-9A-Za-z]{32})/.exec(out)?.[1];
        const live = /Live key\s+(sk_live_[0-9A-Za-z]{32})/.exec(out)?.[1];
        expect(sandbox, out).toBeDefined();
        expect(live, out).toBeDefined();
        // The demo portal user's credentials, and the portal's address, are in the banner too.
        expect(out).toContain(`Merchant Portal ${dev.url}/portal/`);
        const email = /Email\s+(\S+@\S+)/.exec(out)?.[1];
        const password = /Password\s+([0-9A-Za-z]{20})/.exec(out)?.[1];
        expect(email, out).toBe('demo@payhooks.local');
        expect((await portalSignIn(dev.url, email!, password!)).session.platform.name).toBe('Demo Platform');
        // The internal-API token, as kept in the data dir, publishes.
        const token = /Internal token (\S+)\s+\(kept in (\S+internal-token);/.exec(out);
        expect(token, out).not.toBeNull();
        expect(readFileSync(token![2]!, 'utf8').trim()).toBe(token![1]);
        const api = apiClient(dev.url);
        // Development mode admits local plain-http receivers, for live keys too.
        const created = await api(live!, 'POST', COLLECTION, { url: 'http://127.0.0.1:4000/webhooks', enabled_events: ['*'] });
        expect(created.status).toBe(201);
        const list = await api(sandbox!, 'GET', COLLECTION);
        expect(list.status).toBe(200);
        expect(list.body.data).toEqual([]);

        // The banner's next steps work as printed: an endpoint, then a published event that the
        // in-process worker signs and delivers to a real receiver (spec 4.2, 5.1).
        const receiver = await startReceiver();
        try {
          const ep = await api(sandbox!, 'POST', COLLECTION, { url: receiver.url, enabled_events: ['*'] });
          expect(ep.status).toBe(201);
          const printed = /npx payhooks (trigger payment\.succeeded --api-key \S+ --url \S+)/.exec(out)?.[1];
          expect(printed, out).toBeDefined();
          const triggered = await runPayhooks([...printed!.split(' '), '--json'], {});
          expect(triggered.code, triggered.stderr).toBe(0);
          const succeeded = (JSON.parse(triggered.stdout).events as Array<{ id: string; type: string }>).find(
            (e) => e.type === 'payment.succeeded',
          )!;
          await receiver.waitFor(3); // payment.created, payment.processing, payment.succeeded
          const req = receiver.requests.find((r) => r.headers['service-event-id'] === succeeded.id);
          expect(req, 'payment.succeeded delivered').toBeDefined();
          const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(req!.headers['service-signature']))!;
          expect(v1).toBe(createHmac('sha256', ep.body.secret).update(`${t}.`).update(req!.raw).digest('hex'));
        } finally {
          await receiver.close();
        }
      } finally {
        expect((await dev.stop()).code).toBe(0);
      }
    },
    SPAWN_TIMEOUT,
  );
});

describe('start-up errors', () => {
  it(
    'a bad setting exits 1 naming the variable; DATABASE_URL without PAYHOOKS_ENCRYPTION_KEY exits 1 saying how to make one',
    async () => {
      // Both fail before any database is opened.
      const [badPort, noKey] = await Promise.all([
        runPayhooks(['serve'], { PAYHOOKS_PORT: 'abc', PAYHOOKS_DATA_DIR: tempDir() }),
        runPayhooks(['serve'], { DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/postgres' }),
      ]);
      expectCleanFailure(badPort, 'PAYHOOKS_PORT', 'abc');
      expectCleanFailure(noKey, 'PAYHOOKS_ENCRYPTION_KEY', 'DATABASE_URL', 'openssl rand -hex 32');
    },
    SPAWN_TIMEOUT,
  );
});

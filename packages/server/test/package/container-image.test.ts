import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebhookHandler, memoryStore, toNodeHandler, type WebhookEvent, type WebhookHandler } from '../../../receiver/src/index.ts';
import { openDatabase, type Database } from '../../src/db/client.ts';
import { publishEvents } from '../../src/events/publish.ts';
import { buildImage, compose, LIMITS, podman, script } from '../helpers/containers.ts';
import { createPgDatabase } from '../helpers/database.ts';
import { freePort, until } from '../helpers/wait.ts';

/**
 * The container image (Containerfile), built by scripts/build-image.sh from the packed packages on
 * a Node 20 base made from Debian's packages (scripts/container-base.sh; no registry here), and
 * run with Debian's podman: as a non-root user on a read-only root file system, on its embedded
 * database in a volume and on this machine's PostgreSQL (migrated by the image's `migrate`), its
 * `serve` and `worker` containers delivering to a receiver on the host that verifies with the
 * SDK, and a worker stopped with SIGTERM mid-backlog losing nothing.
 */

const TAG = `localhost/payhooks-test:${process.pid}`;
let base: string;
let image: string;
const started: string[] = [];
const volumes: string[] = [];
let db: { url: string; drop(): Promise<void> } | undefined;
let database: Database | undefined;

beforeAll(async () => {
  ({ base, image } = await buildImage(TAG));
}, 600_000);
afterAll(async () => {
  for (const id of started) await podman(['rm', '-f', '-v', '-t', '0', id]).catch(() => {});
  for (const v of volumes) await podman(['volume', 'rm', '-f', v]).catch(() => {});
  await podman(['rmi', '-f', TAG]).catch(() => {});
  // The image's VOLUME gives each container that mounts nothing there an anonymous volume, and
  // the build leaves its install stage: neither is used by anything once the containers are gone.
  await podman(['volume', 'prune', '-f']).catch(() => {});
  await podman(['image', 'prune', '-f']).catch(() => {});
  await database?.close();
  await db?.drop();
});

/** `podman run` of the image on the host's network, read-only root, /tmp a tmpfs, with `env`. */
const runArgs = (mode: '-d' | '--rm', args: string[], env: Record<string, string>, extra: string[] = []) => [
  'run',
  mode,
  '--network',
  'host',
  '--read-only',
  '--tmpfs',
  '/tmp',
  ...LIMITS,
  ...extra,
  ...Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]),
  image,
  ...args,
];

/** A container left running (removed after the tests); its id. */
async function start(args: string[], env: Record<string, string>, extra: string[] = []): Promise<string> {
  const id = await podman(runArgs('-d', args, env, extra));
  started.push(id);
  return id;
}

/** A one-off command in the image (migrate, admin…), its stdout. */
const once = (args: string[], env: Record<string, string>) => podman(runArgs('--rm', args, env));

async function ready(port: number): Promise<number> {
  const t0 = performance.now();
  await until(
    async () => {
      const r = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => null);
      return r?.ok === true;
    },
    { timeout: 60_000, interval: 100, message: `/readyz on ${port}` },
  );
  return Math.round(performance.now() - t0);
}

/** SIGTERM, as `podman stop` sends it; the exit code. */
async function stop(id: string): Promise<number> {
  await podman(['stop', '-t', '60', id]);
  return Number(await podman(['inspect', id, '--format', '{{.State.ExitCode}}']));
}

describe('the container image', () => {
  it('adds at most 150 MiB to its base, runs as a non-root user with the payhooks command, OCI labels and /readyz as its health check', async () => {
    const size = async (ref: string) => Number(await podman(['image', 'inspect', ref, '--format', '{{.Size}}']));
    const added = (await size(image)) - (await size(base));
    console.log(`image: ${(await size(image)) / 2 ** 20} MiB, of which payhooks adds ${(added / 2 ** 20).toFixed(1)} MiB`);
    expect(added).toBeLessThanOrEqual(150 * 2 ** 20);
    const config = JSON.parse(await podman(['image', 'inspect', image, '--format', '{{json .Config}}'])) as {
      User: string;
      Entrypoint: string[];
      Cmd: string[];
      Labels: Record<string, string>;
      Volumes: Record<string, unknown>;
    };
    expect(config.User).toBe('10001:10001');
    expect(config.Entrypoint).toEqual(['payhooks']);
    expect(config.Cmd).toEqual(['serve']);
    expect(config.Labels).toMatchObject({
      'org.opencontainers.image.source': 'https://github.com/payhooks/payhooks',
      'org.opencontainers.image.version': '0.1.0',
      'org.opencontainers.image.licenses': 'MIT',
    });
    const health = JSON.parse(await podman(['image', 'inspect', image, '--format', '{{json .HealthCheck}}'])) as { Test: string[] };
    expect(health.Test.join(' ')).toContain('/readyz');
    expect(Object.keys(config.Volumes)).toEqual(['/var/lib/payhooks']);
    // The runtime stage has no compilers and no dev dependencies.
    const probe = await once(['--version'], {});
    expect(probe).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('the embedded default: serve on PGlite in its volume, read-only root, not root, healthy, and SIGTERM ends it with 0', async () => {
    const volume = `payhooks-test-data-${process.pid}`;
    volumes.push(volume);
    const port = await freePort();
    const id = await start(['serve'], { PAYHOOKS_PORT: String(port) }, ['-v', `${volume}:/var/lib/payhooks`]);
    const ms = await ready(port);
    console.log(`embedded: /readyz answered ${ms} ms after the container started`);
    expect(await (await fetch(`http://127.0.0.1:${port}/readyz`)).json()).toMatchObject({ status: 'ready', database: 'pglite' });
    expect(await podman(['healthcheck', 'run', id]).then(() => 'healthy')).toBe('healthy');
    expect(await podman(['exec', id, 'id', '-u'])).toBe('10001');
    await expect(podman(['exec', id, 'sh', '-c', 'echo x > /opt/payhooks/x'])).rejects.toThrow(/Read-only file system/);
    expect(await podman(['exec', id, 'sh', '-c', 'ls /var/lib/payhooks'])).toContain('encryption.key');
    expect(await stop(id)).toBe(0);
  });

  describe('on PostgreSQL: migrate, then serve and worker containers', () => {
    const env: Record<string, string> = {};
    let apiPort: number;
    let apiKey: string;
    let merchantId: string;
    let receiver: Server;
    let receiverUrl: string;
    let handler: WebhookHandler | null = null;
    const received = new Map<string, WebhookEvent>();
    let slowMs = 0;
    let worker: string;

    beforeAll(async () => {
      db = await createPgDatabase();
      Object.assign(env, {
        DATABASE_URL: db.url,
        PAYHOOKS_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
        PAYHOOKS_ALLOW_PRIVATE_URLS: 'true',
        PAYHOOKS_LOG_LEVEL: 'warn',
      });
      receiver = createServer((req, res) => {
        if (!handler) return void res.writeHead(503).end();
        const answer = () => toNodeHandler(handler!)(req, res);
        if (slowMs > 0) setTimeout(answer, slowMs);
        else answer();
      });
      await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
      receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/webhooks`;
    }, 120_000);
    afterAll(async () => {
      await handler?.close();
      await new Promise<void>((r) => (receiver ? receiver.close(() => r()) : r()));
    });

    it("the image's migrate migrates; admin create-platform makes the keys; serve answers /readyz", async () => {
      expect(await once(['migrate'], env)).toBeDefined();
      const created = JSON.parse(await once(['admin', 'create-platform', '--name', 'Container Shop', '--json'], env)) as {
        merchant_id: string;
        keys: { sandbox: string };
      };
      apiKey = created.keys.sandbox;
      merchantId = created.merchant_id;
      expect(apiKey).toMatch(/^sk_test_/);
      apiPort = await freePort();
      await start(['serve', '--no-worker'], { ...env, PAYHOOKS_PORT: String(apiPort) });
      const ms = await ready(apiPort);
      console.log(`PostgreSQL: /readyz answered ${ms} ms after the container started`);
    });

    it('a worker container delivers a published event to the receiver on the host, which verifies it with the SDK', async () => {
      const r = await fetch(`http://127.0.0.1:${apiPort}/api/v1/webhook_endpoints`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: receiverUrl, enabled_events: ['*'] }),
      });
      expect(r.status).toBe(201);
      const { secret } = (await r.json()) as { secret: string };
      handler = createWebhookHandler({ secret, store: memoryStore(), onEvent: (e) => void received.set(e.id, e) });
      worker = await start(['worker'], env);
      const triggered = await once(
        ['trigger', 'payment.succeeded', '--api-key', apiKey, '--url', `http://127.0.0.1:${apiPort}`, '--json'],
        env,
      );
      expect(triggered).toContain('payment.succeeded');
      await until(() => [...received.values()].some((e) => e.type === 'payment.succeeded'), {
        timeout: 60_000,
        message: 'the event, verified by the SDK',
      });
    });

    it('SIGTERM to the worker mid-backlog drains its attempts and exits 0; a new worker delivers the rest: nothing is lost', async () => {
      database = await openDatabase({ databaseUrl: db!.url, poolSize: 2 });
      const before = received.size;
      const EVENTS = 300;
      slowMs = 20;
      const ids: string[] = [];
      for (let i = 0; i < EVENTS; i += 100) {
        const outcomes = await database.db.transaction((tx) =>
          publishEvents(
            tx,
            Array.from({ length: 100 }, (_, k) => ({
              type: 'payment.succeeded' as const,
              merchantId,
              environment: 'sandbox' as const,
              object: {
                id: `pay_box_${i + k}`,
                object: 'payment',
                status: 'succeeded',
                amount: '1.00',
                asset_code: 'USDC.ETH',
                metadata: {},
              },
            })),
            new Date(),
          ),
        );
        for (const o of outcomes) {
          if (!o.ok) throw o.error;
          ids.push(o.result.event.id);
        }
      }
      await until(() => received.size >= before + 20, { timeout: 60_000, message: 'some of the backlog delivered' }).catch(async (err) => {
        const states = await database!.query('SELECT state, count(*) FROM webhook_deliveries GROUP BY state', []);
        const logs = await podman(['logs', '--tail', '20', worker]).catch((e: Error) => e.message);
        throw new Error(`${(err as Error).message}; received ${received.size}; ${JSON.stringify(states)}; worker: ${logs}`);
      });
      expect(await stop(worker)).toBe(0);
      const afterStop = received.size;
      expect(afterStop - before).toBeLessThan(EVENTS);
      slowMs = 0;
      await start(['worker'], env);
      await until(() => ids.every((id) => received.has(id)), { timeout: 120_000, message: 'every event of the backlog delivered' });
      const notDelivered = async () =>
        Number(
          (
            await database!.query<{ n: string }>(
              "SELECT count(*) AS n FROM webhook_deliveries WHERE event_id = ANY($1) AND state <> 'delivered'",
              [ids],
            )
          )[0]!.n,
        );
      await until(async () => (await notDelivered()) === 0, { timeout: 60_000, message: 'every delivery recorded as delivered' });
    });
  });

  describe('the compose stack (deploy/compose): PostgreSQL, migrate, api and worker, with podman-compose', () => {
    const project = `phtest${process.pid}`;
    let environment: NodeJS.ProcessEnv;
    let apiPort: number;
    let receiver: Server;
    let handler: WebhookHandler | null = null;
    const received: WebhookEvent[] = [];

    beforeAll(async () => {
      // PostgreSQL 15 from Debian's packages with the official image's environment (no registry here).
      const postgresImage = await script('container-postgres.sh');
      apiPort = await freePort();
      environment = {
        ...process.env,
        POSTGRES_PASSWORD: randomBytes(12).toString('hex'),
        PAYHOOKS_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
        PAYHOOKS_IMAGE: image,
        POSTGRES_IMAGE: postgresImage,
        PAYHOOKS_API_PORT: String(apiPort),
        PAYHOOKS_ALLOW_PRIVATE_URLS: 'true',
        PAYHOOKS_LOG_LEVEL: 'warn',
      };
      // On every address: the containers reach the host at host.containers.internal.
      receiver = createServer((req, res) => (handler ? toNodeHandler(handler)(req, res) : res.writeHead(503).end()));
      await new Promise<void>((r) => receiver.listen(0, '0.0.0.0', r));
      await compose(project, ['up', '-d'], environment);
    }, 300_000);
    afterAll(async () => {
      await compose(project, ['down', '-v'], environment).catch(() => {});
      // podman-compose 1.0 leaves the project's network and its containers' anonymous volumes.
      await podman(['network', 'rm', '-f', `${project}_default`]).catch(() => {});
      await handler?.close();
      await new Promise<void>((r) => (receiver ? receiver.close(() => r()) : r()));
    });

    it('comes up healthy, and an event published through its API is delivered by its worker to a receiver on the host', async () => {
      const ms = await ready(apiPort);
      console.log(`compose: the API answered /readyz ${ms} ms after up -d returned`);
      expect(await (await fetch(`http://127.0.0.1:${apiPort}/readyz`)).json()).toMatchObject({ database: 'postgres' });
      const api = `${project}_api_1`;
      const created = JSON.parse(
        (await podman(['exec', api, 'payhooks', 'admin', 'create-platform', '--name', 'Compose Shop', '--json'])).split('\n')[0]!,
      ) as { keys: { sandbox: string } };
      const key = created.keys.sandbox;
      const port = (receiver.address() as AddressInfo).port;
      const r = await fetch(`http://127.0.0.1:${apiPort}/api/v1/webhook_endpoints`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: `http://host.containers.internal:${port}/webhooks`, enabled_events: ['payment.succeeded'] }),
      });
      expect(r.status).toBe(201);
      handler = createWebhookHandler({
        secret: ((await r.json()) as { secret: string }).secret,
        store: memoryStore(),
        onEvent: (e) => void received.push(e),
      });
      await podman(['exec', api, 'payhooks', 'trigger', 'payment.succeeded', '--api-key', key, '--url', 'http://127.0.0.1:8080']);
      await until(() => received.some((e) => e.type === 'payment.succeeded'), {
        timeout: 60_000,
        message: 'the event, verified by the SDK',
      });
      const states = await podman([
        'ps',
        '-a',
        '--filter',
        `label=io.podman.compose.project=${project}`,
        '--format',
        '{{.Names}} {{.Status}}',
      ]);
      expect(states).toMatch(new RegExp(`${project}_migrate_1 Exited \\(0\\)`));
      expect(states).toMatch(new RegExp(`${project}_worker_1 Up`));
    });
  });
});

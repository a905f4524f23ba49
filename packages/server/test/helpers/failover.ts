import { randomBytes } from 'node:crypto';
import { appendFileSync, chownSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { expect } from 'vitest';
import { openDatabase, type Database } from '../../src/db/client.ts';
import { createPlatform, type CreatedPlatform } from '../../src/tenancy/platforms.ts';
import { killAllPayhooks, runPayhooks, startServe, type ServeProcess } from './cli.ts';
import { asPostgres, binDir, postgresIds } from './pg-server.ts';
import { apiClient } from './service.ts';
import { spawnPayhooks, type Spawned } from './spawn.ts';
import { freePort, until } from './wait.ts';

/**
 * The failover rig: a database that loses its primary, and the payhooks fleet on it. Used by
 * test/integration/failover.postgres.test.ts (a pair built here with initdb and pg_basebackup)
 * and test/ha/patroni.test.ts (deploy/ha's Patroni cluster behind HAProxy): each kills the
 * primary under publishing traffic (publishing-traffic.ts) and checks nothing acknowledged is lost.
 */

/**
 * A primary and a synchronous standby built from scratch, as an operator would: initdb, a
 * replication-ready primary with `synchronous_standby_names`, `pg_basebackup -R` for the standby.
 * A commit returns only once the standby has it, so promoting the standby after the primary is
 * killed loses nothing that was acknowledged.
 */
export interface PgPair {
  primaryPort: number;
  standbyPort: number;
  /** postgres://postgres@127.0.0.1:P1,127.0.0.1:P2/<db>?target_session_attrs=read-write */
  multiHostUrl(database: string): string;
  /** The primary's URL for `database`. */
  primaryUrl(database: string): string;
  /** `pg_ctl stop -m immediate` on the primary: the process dies, no shutdown checkpoint. */
  killPrimary(): Promise<void>;
  /** `pg_ctl promote -w` on the standby. */
  promoteStandby(): Promise<void>;
  destroy(): Promise<void>;
}

export async function startPgPair(): Promise<PgPair> {
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-pair-'));
  if (process.getuid?.() === 0) {
    const { uid, gid } = await postgresIds();
    chownSync(dir, uid, gid);
  }
  const primary = join(dir, 'primary');
  const standby = join(dir, 'standby');
  const [primaryPort, standbyPort] = [await freePort(), await freePort()];
  const running = new Set<string>();
  const ctl = async (data: string, args: string[]) => asPostgres(join(bin, 'pg_ctl'), ['-D', data, ...args]);
  const start = async (data: string) => {
    await ctl(data, ['-l', join(dir, `${data === primary ? 'primary' : 'standby'}.log`), '-w', '-t', '60', 'start']);
    running.add(data);
  };
  const common = (port: number) =>
    [
      `port = ${port}`,
      `listen_addresses = '127.0.0.1'`,
      `unix_socket_directories = '${dir}'`,
      // Flushes are skipped (the machine does not crash in this test; the primary process does).
      'fsync = off',
      'max_connections = 200',
      'shared_buffers = 32MB',
      '',
    ].join('\n');

  await asPostgres(join(bin, 'initdb'), ['-D', primary, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C']);
  appendFileSync(
    join(primary, 'postgresql.conf'),
    `${common(primaryPort)}wal_level = replica\nmax_wal_senders = 5\nsynchronous_commit = on\nsynchronous_standby_names = 'standby1'\n`,
  );
  await start(primary);
  await asPostgres(join(bin, 'pg_basebackup'), [
    '-h',
    '127.0.0.1',
    '-p',
    String(primaryPort),
    '-U',
    'postgres',
    '-D',
    standby,
    '-R',
    '-X',
    'stream',
    '--no-sync',
  ]);
  // -R wrote primary_conninfo; the standby names itself so the primary counts it as synchronous.
  appendFileSync(
    join(standby, 'postgresql.auto.conf'),
    `primary_conninfo = 'host=127.0.0.1 port=${primaryPort} user=postgres application_name=standby1'\n`,
  );
  // Promoted, it has no standby of its own: waiting for one would hang every commit (Patroni
  // clears the setting the same way when the last standby is gone).
  appendFileSync(join(standby, 'postgresql.conf'), `${common(standbyPort)}synchronous_standby_names = ''\n`);
  await start(standby);

  const url = (port: number, database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`;
  const check = new pg.Client({ connectionString: url(primaryPort, 'postgres') });
  await check.connect();
  try {
    await until(
      async () => {
        const { rows } = await check.query<{ sync_state: string }>(
          `SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1'`,
        );
        return rows[0]?.sync_state === 'sync';
      },
      { timeout: 60_000, interval: 100, message: 'the standby to become synchronous' },
    );
  } finally {
    await check.end();
  }
  return {
    primaryPort,
    standbyPort,
    multiHostUrl: (database) =>
      `postgres://postgres@127.0.0.1:${primaryPort},127.0.0.1:${standbyPort}/${database}?target_session_attrs=read-write`,
    primaryUrl: (database) => url(primaryPort, database),
    async killPrimary() {
      await ctl(primary, ['-m', 'immediate', '-w', '-t', '60', 'stop']);
      running.delete(primary);
    },
    async promoteStandby() {
      await ctl(standby, ['-w', '-t', '60', 'promote']);
    },
    async destroy() {
      for (const data of running) await ctl(data, ['-m', 'immediate', '-w', '-t', '60', 'stop']).catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The payhooks fleet of the failover tests on `databaseUrl` (a database that exists and is
 * empty): `payhooks migrate`, a Platform, a receiver that answers 200 and counts the answers per
 * Service-Event-Id, a `payhooks worker` and two `payhooks serve --no-worker` (A and B, as behind a
 * load balancer), and an endpoint for payment.succeeded. Leases and attempt deadlines are short,
 * so what a dead primary's sessions held is taken over within the test.
 */
export interface FailoverFleet {
  /** The environment every process of the fleet runs with. */
  env: Record<string, string>;
  /** The test's own connection, on `databaseUrl`. */
  database: Database;
  platform: CreatedPlatform;
  worker: Spawned;
  a: ServeProcess;
  b: ServeProcess;
  /** 2xx answers per Service-Event-Id at the receiver. */
  received: Map<string, number>;
  /** The event ids of `acknowledged` the receiver has not had (yet). */
  missing(acknowledged: Iterable<string>): string[];
  /** Successful deliveries beyond the first of each event. */
  duplicateSuccesses(): number;
  /** Kills every process and closes the connection and the receiver (not the database). */
  close(): Promise<void>;
}

export async function startFailoverFleet(options: { databaseUrl: string; token: string; platformName: string }): Promise<FailoverFleet> {
  const env = {
    DATABASE_URL: options.databaseUrl,
    PAYHOOKS_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    PAYHOOKS_INTERNAL_TOKEN: options.token,
    PAYHOOKS_ALLOW_PRIVATE_URLS: 'true',
    PAYHOOKS_ALLOW_HTTP_URLS: 'true',
    PAYHOOKS_POLL_INTERVAL: '200ms',
    // Leases held when the primary died expire soon, so the takeover shows within the test.
    PAYHOOKS_ATTEMPT_TIMEOUT: '2s',
    PAYHOOKS_LEASE: '6s',
    PAYHOOKS_LOG_LEVEL: 'info',
  };
  const received = new Map<string, number>();
  let database: Database | undefined;
  let worker: Spawned | undefined;
  const receiver: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = String(req.headers['service-event-id']);
      received.set(id, (received.get(id) ?? 0) + 1);
      res.writeHead(200).end('ok');
    });
  });
  const close = async () => {
    await killAllPayhooks();
    worker?.child.kill('SIGKILL');
    await database?.close();
    await new Promise<void>((r) => (receiver.listening ? receiver.close(() => r()) : r()));
  };
  try {
    const migrated = await runPayhooks(['migrate'], env, 120_000);
    expect(migrated.code, migrated.stdout + migrated.stderr).toBe(0);
    database = await openDatabase({ databaseUrl: options.databaseUrl });
    const platform = await createPlatform(database.db, options.platformName);
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    worker = spawnPayhooks(['worker'], env);
    await worker.waitFor('workers started', 60_000);
    const a = await startServe(['--no-worker'], env, 60_000);
    const b = await startServe(['--no-worker'], env, 60_000);
    const created = await apiClient(a.url)(platform.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/webhooks`,
      enabled_events: ['payment.succeeded'],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return {
      env,
      database,
      platform,
      worker,
      a,
      b,
      received,
      missing: (acknowledged) => [...acknowledged].filter((id) => !received.has(id)),
      duplicateSuccesses: () => [...received.values()].reduce((sum, n) => sum + (n - 1), 0),
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

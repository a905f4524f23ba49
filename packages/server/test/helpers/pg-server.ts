import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, appendFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './wait.ts';

const run = promisify(execFile);

/**
 * A throwaway PostgreSQL server of its own (not the shared one on 5432), so a test can restart
 * it, stop it for an outage, or start it late. initdb and pg_ctl come from the machine's
 * PostgreSQL and run as the `postgres` OS user (the server refuses to run as root). Data and
 * unix sockets live in a temporary directory; fsync is off; clients use TCP on a free port.
 */
export interface PgServer {
  /** postgres://postgres@127.0.0.1:PORT/postgres (trust auth). */
  url: string;
  port: number;
  start(): Promise<void>;
  /** `pg_ctl stop -m fast`: open sessions are terminated (SQLSTATE 57P01), as in a real restart. */
  stop(): Promise<void>;
  restart(): Promise<void>;
  /** Stops the server (if running) and deletes its directory. */
  destroy(): Promise<void>;
}

export function binDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'pg_ctl'))) : [];
  if (versions.length === 0) throw new Error('No PostgreSQL server binaries under /usr/lib/postgresql/<version>/bin');
  versions.sort((a, b) => Number(b) - Number(a));
  return join(root, versions[0]!, 'bin');
}

/** Runs a PostgreSQL binary as the `postgres` user (we may be root; the server refuses root). */
export async function asPostgres(bin: string, args: string[]): Promise<void> {
  const asRoot = process.getuid?.() === 0;
  const [cmd, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  try {
    await run(cmd, argv, { timeout: 60_000 });
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; message: string };
    throw new Error(`${bin} ${args.join(' ')} failed: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
}

export async function startPgServer(options: { start?: boolean; maxConnections?: number } = {}): Promise<PgServer> {
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-pg-'));
  const data = join(dir, 'data');
  const log = join(dir, 'server.log');
  if (process.getuid?.() === 0) {
    const { uid, gid } = await postgresIds();
    chownSync(dir, uid, gid);
  }
  await asPostgres(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C']);
  const port = await freePort();
  appendFileSync(
    join(data, 'postgresql.conf'),
    [
      `port = ${port}`,
      `listen_addresses = '127.0.0.1'`,
      `unix_socket_directories = '${dir}'`,
      'fsync = off',
      'synchronous_commit = off',
      'full_page_writes = off',
      `max_connections = ${options.maxConnections ?? 200}`,
      'shared_buffers = 32MB',
      '',
    ].join('\n'),
  );
  let running = false;
  const server: PgServer = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async start() {
      await asPostgres(join(bin, 'pg_ctl'), ['-D', data, '-l', log, '-w', '-t', '60', 'start']);
      running = true;
    },
    async stop() {
      await asPostgres(join(bin, 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', '-t', '60', 'stop']);
      running = false;
    },
    async restart() {
      await server.stop();
      await server.start();
    },
    async destroy() {
      if (running) await server.stop().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
  if (options.start !== false) await server.start();
  return server;
}

export async function postgresIds(): Promise<{ uid: number; gid: number }> {
  const { stdout } = await run('id', ['postgres']);
  const uid = /uid=(\d+)/.exec(stdout);
  const gid = /gid=(\d+)/.exec(stdout);
  if (!uid || !gid) throw new Error(`cannot read the postgres user's ids from: ${stdout}`);
  return { uid: Number(uid[1]), gid: Number(gid[1]) };
}

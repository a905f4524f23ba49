import { appendFileSync, chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { asPostgres, binDir, freePort, postgresIds } from './pg-server.ts';

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
    const deadline = Date.now() + 60_000;
    for (;;) {
      const { rows } = await check.query<{ sync_state: string }>(
        `SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1'`,
      );
      if (rows[0]?.sync_state === 'sync') break;
      if (Date.now() > deadline) throw new Error('the standby did not become synchronous within 60 s');
      await new Promise((r) => setTimeout(r, 100));
    }
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

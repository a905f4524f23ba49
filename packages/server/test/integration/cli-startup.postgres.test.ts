import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SETTINGS } from '../../src/config.ts';
import { ADMIN_URL, createPgDatabase } from '../helpers/database.ts';
import { killAllPayhooks, runPayhooks, type CliResult } from '../helpers/cli.ts';

/**
 * The compiled `payhooks` as a user runs it: --help and --version, and each start-up failure a
 * person can hit (a bad flag, PostgreSQL down, a database or role that doesn't exist, a port in
 * use, an address this machine doesn't have) against the real PostgreSQL server. Each is one
 * line saying which setting to change, exit code 1, no stack trace; the port and address are
 * checked before the database is migrated.
 */

const key = randomBytes(32).toString('hex');
const admin = new URL(ADMIN_URL);
let scratch: { url: string; drop(): Promise<void> };
let busy: Server;
let busyPort: number;
const dirs: string[] = [];

beforeAll(async () => {
  scratch = await createPgDatabase(ADMIN_URL, 'payhooks_startup');
  busy = createServer();
  await new Promise<void>((resolve) => busy.listen({ host: '127.0.0.1', port: 0 }, resolve));
  busyPort = (busy.address() as { port: number }).port;
});

afterAll(async () => {
  await killAllPayhooks();
  await new Promise((r) => busy?.close(r));
  await scratch?.drop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** One line on stderr starting `payhooks: `, exit code 1, no stack trace. */
function expectOneLine(r: CliResult, ...fragments: string[]) {
  expect(r.code, r.stderr).toBe(1);
  expect(r.stderr).toMatch(/^payhooks: [^\n]+\n$/);
  for (const f of fragments) expect(r.stderr).toContain(f);
  expect(r.stderr, 'no stack trace').not.toMatch(/\n\s+at /);
}

/** True when `url`'s database has been migrated (the migrations table exists). */
async function migrated(url: string): Promise<boolean> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const { rows } = await c.query<{ t: string | null }>("SELECT to_regclass('public.payhooks_migrations')::text AS t");
    return rows[0]!.t !== null;
  } finally {
    await c.end();
  }
}

function pgUrl(change: (u: URL) => void): string {
  const u = new URL(ADMIN_URL);
  change(u);
  return u.toString();
}

describe('payhooks --help and --version', () => {
  it('--help lists the commands and every environment variable of the configuration', async () => {
    const r = await runPayhooks(['--help'], {});
    expect(r.code).toBe(0);
    for (const command of ['serve', 'worker', 'migrate', 'trigger', 'listen', 'check-receiver', 'admin'])
      expect(r.stdout).toContain(command);
    for (const s of SETTINGS) expect(r.stdout, s.env).toMatch(new RegExp(`^  ${s.env} `, 'm'));
    expect(r.stdout).toContain('(default: 8080)');
  });

  it('--version prints the package version', async () => {
    const r = await runPayhooks(['--version'], {});
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe('start-up failures: one line naming the setting, exit 1, no stack', () => {
  it('a bad flag is named as the flag, not as its variable', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-startup-'));
    dirs.push(dir);
    const r = await runPayhooks(['serve', '--port', 'abc'], { PAYHOOKS_DATA_DIR: dir });
    expectOneLine(r, '--port abc is not valid', 'a whole number from 0 to 65535');
    expect(r.stderr).not.toContain('PAYHOOKS_PORT');
  });

  it('PostgreSQL not reachable (127.0.0.1:1): names DATABASE_URL and where it pointed', async () => {
    const r = await runPayhooks(['serve'], {
      DATABASE_URL: pgUrl((u) => (u.port = '1')),
      PAYHOOKS_ENCRYPTION_KEY: key,
      PAYHOOKS_DB_WAIT: '0s',
      PAYHOOKS_LOG_LEVEL: 'error',
    });
    expectOneLine(
      r,
      'PostgreSQL at 127.0.0.1:1 (DATABASE_URL) is not reachable (ECONNREFUSED)',
      'start PostgreSQL or correct the host and port in DATABASE_URL',
    );
  });

  it('a database that does not exist: says how to create it, with a createdb command that works', async () => {
    const name = `payhooks_missing_${randomBytes(4).toString('hex')}`;
    const url = pgUrl((u) => (u.pathname = `/${name}`));
    const r = await runPayhooks(['serve'], { DATABASE_URL: url, PAYHOOKS_ENCRYPTION_KEY: key, PAYHOOKS_PORT: '0' });
    const createdb = `createdb -h ${admin.hostname} -p ${admin.port || '5432'} -U ${admin.username} ${name}`;
    expectOneLine(
      r,
      `Database "${name}" does not exist on PostgreSQL at ${admin.hostname}:${admin.port || '5432'} (DATABASE_URL)`,
      `create it with \`${createdb}\``,
    );
    // What the message says to run is right: the database it names, on that server, as that user.
    const c = new pg.Client({ connectionString: ADMIN_URL });
    await c.connect();
    try {
      await c.query(`CREATE DATABASE ${name} TEMPLATE template0`);
      const again = await runPayhooks(['migrate'], { DATABASE_URL: url, PAYHOOKS_ENCRYPTION_KEY: key });
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toContain('applied: 0001_');
    } finally {
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    }
  });

  it('authentication failed (a role that does not exist): names the user and DATABASE_URL, never the password', async () => {
    const role = `payhooks_nobody_${randomBytes(4).toString('hex')}`;
    const r = await runPayhooks(['migrate'], {
      DATABASE_URL: pgUrl((u) => {
        u.username = role;
        u.password = 'hunter2-secret';
      }),
    });
    expectOneLine(r, `refused user "${role}" (DATABASE_URL)`, 'the role does not exist or may not connect');
    expect(r.stderr).not.toContain('hunter2-secret');
  });

  it('a port in use (--port): exit 1 naming the flag, before anything is migrated', async () => {
    const r = await runPayhooks(['serve', '--port', String(busyPort)], { DATABASE_URL: scratch.url, PAYHOOKS_ENCRYPTION_KEY: key });
    expectOneLine(r, `Port ${busyPort} (--port ${busyPort}) is already in use on 127.0.0.1`, 'choose another port');
    expect(await migrated(scratch.url), 'nothing migrated').toBe(false);
  });

  it('a port in use (PAYHOOKS_PORT) names the variable; at debug level the cause and its stack follow', async () => {
    const r = await runPayhooks(['serve'], {
      DATABASE_URL: scratch.url,
      PAYHOOKS_ENCRYPTION_KEY: key,
      PAYHOOKS_PORT: String(busyPort),
      PAYHOOKS_LOG_LEVEL: 'debug',
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`Port ${busyPort} (PAYHOOKS_PORT=${busyPort}) is already in use`);
    expect(r.stderr).toMatch(/payhooks: \(debug\) Error: listen EADDRINUSE[^\n]*\n\s+at /);
    expect(await migrated(scratch.url), 'nothing migrated').toBe(false);
  });

  it('an address this machine does not have (--host 203.0.113.1): exit 1 naming the flag, before anything is migrated', async () => {
    const r = await runPayhooks(['serve', '--host', '203.0.113.1', '--port', '0'], {
      DATABASE_URL: scratch.url,
      PAYHOOKS_ENCRYPTION_KEY: key,
    });
    expectOneLine(r, 'Address 203.0.113.1 (--host 203.0.113.1) is not an address of this machine');
    expect(await migrated(scratch.url), 'nothing migrated').toBe(false);
  });
});

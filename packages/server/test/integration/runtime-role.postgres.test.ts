import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_URL, createMigratedPgDatabase } from '../helpers/database.ts';
import { runPayhooks } from '../helpers/cli.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { payment } from '../helpers/publish.ts';
import { loadConfig } from '../../src/config.ts';
import { openRuntime, type Runtime } from '../../src/runtime.ts';
import { createPlatform } from '../../src/tenancy/platforms.ts';
import { publishEvent } from '../../src/events/publish.ts';

/**
 * The audit trail is append-only for the role serve and worker run as, when that role is the
 * runtime role `payhooks admin runtime-role` makes: every way an owner or a superuser has to
 * change or remove entries (an audit tried six) is refused to it, while the service works as
 * usual. A service connected as the owner or a superuser says at start that the promise does
 * not bind it. PostgreSQL only: roles are PostgreSQL's.
 */

const TIMEOUT = 60_000;
const ROLE = `payhooks_rt_${randomBytes(4).toString('hex')}`;
let ownerUrl: string;
let runtimeUrl: string;
let drop = async () => {};
let env: Record<string, string>;
let owner: pg.Client;
let runtime: pg.Client;
let receiver: TestReceiver;
const opened: Runtime[] = [];

beforeAll(async () => {
  const db = await createMigratedPgDatabase();
  ownerUrl = db.url;
  drop = db.drop;
  env = { DATABASE_URL: ownerUrl, PAYHOOKS_ENCRYPTION_KEY: randomBytes(32).toString('hex') };
  owner = new pg.Client({ connectionString: ownerUrl });
  await owner.connect();
  receiver = await startReceiver();
});
afterAll(async () => {
  for (const r of opened) await r.close();
  await runtime?.end();
  await owner?.end();
  await receiver?.close();
  await drop();
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`DROP ROLE IF EXISTS ${ROLE}`);
  await admin.end();
});

/** A service process's start, in this process: its log lines, and the runtime it opened. */
async function start(databaseUrl: string): Promise<{ rt: Runtime; lines: { level: number; msg: string }[] }> {
  const lines: { level: number; msg: string }[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      done();
    },
  });
  const config = loadConfig({ PAYHOOKS_ENCRYPTION_KEY: env.PAYHOOKS_ENCRYPTION_KEY }, { databaseUrl, allowPrivateUrls: true });
  const rt = await openRuntime({ config, logger: pino({ level: 'info' }, sink) });
  opened.push(rt);
  return { rt, lines };
}

const entries = async () =>
  (
    await owner.query<{ n: number; digest: string }>(
      `SELECT count(*)::int AS n, md5(string_agg(id || action, ',' ORDER BY id)) AS digest FROM audit_events`,
    )
  ).rows[0]!;

describe('payhooks admin runtime-role', () => {
  it('creates a role with only the runtime grants (password shown once), brings them up to date when run again, and --check finds it right', async () => {
    const created = await runPayhooks(['admin', 'runtime-role', ROLE], env, TIMEOUT);
    expect(created.code, created.stderr).toBe(0);
    const password = /Created role \S+ with the password (\S+)/.exec(created.stdout)?.[1];
    expect(password, created.stdout).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(created.stdout).toContain(`${ROLE} is a proper runtime role`);
    const again = await runPayhooks(['admin', 'runtime-role', ROLE], env, TIMEOUT);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('its password is unchanged');
    expect(again.stdout).not.toContain(password);
    const check = await runPayhooks(['admin', 'runtime-role', ROLE, '--check'], env, TIMEOUT);
    expect([check.code, check.stdout]).toEqual([0, expect.stringContaining('is a proper runtime role')]);

    const url = new URL(ownerUrl);
    url.username = ROLE;
    url.password = password!;
    runtimeUrl = url.toString();
    runtime = new pg.Client({ connectionString: runtimeUrl });
    await runtime.connect();
    expect((await runtime.query('SELECT current_user AS u')).rows[0].u).toBe(ROLE);
  });

  it('--check reports a superuser (the default connection) and a role with UPDATE on the audit trail, exit 1; a bad name is refused', async () => {
    const su = await runPayhooks(['admin', 'runtime-role', 'postgres', '--check'], env, TIMEOUT);
    expect(su.code).toBe(1);
    expect(su.stdout).toContain('postgres is a superuser');
    await owner.query(`GRANT UPDATE ON audit_events TO ${ROLE}`);
    const loose = await runPayhooks(['admin', 'runtime-role', ROLE, '--check'], env, TIMEOUT);
    expect(loose.code).toBe(1);
    expect(loose.stdout).toContain(`${ROLE} may change or delete rows of audit_events`);
    // Running it without --check takes the extra grant back.
    expect((await runPayhooks(['admin', 'runtime-role', ROLE], env, TIMEOUT)).code).toBe(0);
    expect((await runPayhooks(['admin', 'runtime-role', ROLE, '--check'], env, TIMEOUT)).code).toBe(0);
    const bad = await runPayhooks(['admin', 'runtime-role', 'x; DROP TABLE events'], env, TIMEOUT);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('a role name is 1 to 63 lower-case letters');
  });
});

describe('the service as the runtime role', () => {
  it('starts without the warning, leaves partition maintenance to payhooks maintain, and publishes, delivers and audits as usual', async () => {
    const { rt, lines } = await start(runtimeUrl);
    expect(rt.maintenance).toBe(false);
    expect(lines.filter((l) => l.level >= 40).map((l) => l.msg)).toEqual([]);
    expect(lines.map((l) => l.msg)).toContainEqual(expect.stringContaining('left to `payhooks maintain`'));

    const p = await createPlatform(rt.ctx.database.db, 'Runtime role');
    const scope = { platformId: p.platform_id, environment: 'sandbox' as const, actor: { type: 'operator' as const, id: 'test' } };
    const ep = await rt.ctx.endpoints.create(scope, { url: receiver.url, enabled_events: ['*'] });
    await rt.ctx.database.db.transaction((tx) =>
      publishEvent(tx, { type: 'payment.succeeded', merchantId: p.merchant_id, environment: 'sandbox', object: payment() }, new Date()),
    );
    await rt.ctx.createWorker().drain();
    const [delivery] = (await rt.ctx.deliveries.list(scope, { limit: 10, endpointId: ep.id })).data;
    expect(delivery!.state).toBe('delivered');
    const trail = await rt.ctx.audit.list(rt.ctx.database.db, p.platform_id, {}, { limit: 10 });
    expect(trail.data.map((e) => e.action)).toContain('webhook_endpoint.create');
  });

  it('the six ways an owner or a superuser changes or removes audit entries are refused to it, and so are UPDATE, DELETE and TRUNCATE', async () => {
    const before = await entries();
    expect(before.n).toBeGreaterThan(0);
    const [{ partition }] = (
      await owner.query<{ partition: string }>(
        `SELECT c.relname AS partition FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent = 'audit_events'::regclass ORDER BY c.relname LIMIT 1`,
      )
    ).rows as [{ partition: string }];
    const attacks = [
      'ALTER TABLE audit_events DISABLE TRIGGER USER',
      'SET LOCAL session_replication_role = replica',
      'DROP TRIGGER audit_events_append_only ON audit_events',
      `ALTER TABLE audit_events DETACH PARTITION ${partition}`,
      `ALTER TABLE audit_events ALTER COLUMN action TYPE text USING 'rewritten'`,
      `DROP TABLE ${partition}`,
      `UPDATE audit_events SET action = 'rewritten'`,
      'DELETE FROM audit_events',
      'TRUNCATE audit_events',
    ];
    for (const attack of attacks) {
      await runtime.query('BEGIN');
      const err = await runtime.query(attack).then(
        () => null,
        (e: { code?: string; message: string }) => e,
      );
      // Had the attack passed, this is what it was for.
      await runtime.query('DELETE FROM audit_events').catch(() => {});
      await runtime.query('ROLLBACK');
      expect(err?.message, attack).toMatch(/must be owner|permission denied|append-only/);
    }
    expect(await entries()).toEqual(before);
  });

  it('as the owner (here a superuser) the triggers do not hold, as docs/operations.md says, and the service warns at start', async () => {
    const before = await entries();
    await owner.query('BEGIN');
    await owner.query('SET LOCAL session_replication_role = replica');
    const removed = await owner.query('DELETE FROM audit_events');
    await owner.query('ROLLBACK');
    expect(removed.rowCount).toBe(before.n);
    expect(await entries()).toEqual(before);

    const { rt, lines } = await start(ownerUrl);
    expect(rt.maintenance).toBe(true);
    const warnings = lines.filter((l) => l.level === 40).map((l) => l.msg);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('connected to PostgreSQL as postgres, a superuser');
    expect(warnings[0]).toContain('payhooks admin runtime-role NAME');
  });
});

describe('payhooks maintain', () => {
  it("runs the partition maintenance as the owner; the runtime role is told to use the owner's DATABASE_URL", async () => {
    const asOwner = await runPayhooks(['maintain'], env, TIMEOUT);
    expect(asOwner.code, asOwner.stderr).toBe(0);
    expect(asOwner.stdout).toMatch(/weeks created: \d+, dropped: \d+, partitions rebuilt: \d+/);
    const asRuntime = await runPayhooks(['maintain'], { ...env, DATABASE_URL: runtimeUrl }, TIMEOUT);
    expect(asRuntime.code).not.toBe(0);
    expect(asRuntime.stderr).toContain('may not create or drop partitions');
  });
});

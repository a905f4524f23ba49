import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDatabase, type Database } from '../../src/db/client.ts';
import { listMigrations, listRepeatables, migrate } from '../../src/db/migrate.ts';

/** Which backend this run of the integration suite uses (set per vitest project). */
export const backend: 'postgres' | 'pglite' = process.env.PAYHOOKS_TEST_DB === 'pglite' ? 'pglite' : 'postgres';

/** The PostgreSQL server tests use; each test file gets its own database on it. */
export const ADMIN_URL = process.env.PAYHOOKS_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  database: Database;
  /** Set on the postgres backend: a URL other processes can connect to. */
  databaseUrl: string | undefined;
  dispose(): Promise<void>;
}

/** A fresh, empty PostgreSQL database (real server), dropped by `drop()`. */
export async function createPgDatabase(
  adminUrl = ADMIN_URL,
  prefix = 'payhooks_test',
  template = 'template0',
): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
    // CREATE DATABASE copies a template's contents, not its ALTER DATABASE … SET settings
    // (migrations set some, e.g. jit = off): the copy gets them as migrating would have set them.
    const { rows } = await admin.query<{ setting: string }>(
      `SELECT unnest(s.setconfig) AS setting FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase
        WHERE d.datname = $1 AND s.setrole = 0`,
      [template],
    );
    for (const { setting } of rows) {
      const eq = setting.indexOf('=');
      await admin.query(`ALTER DATABASE ${name} SET ${setting.slice(0, eq)} = ${admin.escapeLiteral(setting.slice(eq + 1))}`);
    }
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

let pgTemplate: Promise<string> | undefined;

/**
 * PostgreSQL: the name of a database migrated once and kept on the server as a template, so a
 * test database is `CREATE DATABASE … TEMPLATE` it (a file copy, about 0.35 s here) instead of
 * an empty one migrated again (1 to 1.7 s). Named by a hash of the migrations, so a changed or
 * added migration gets a template of its own, and by the day; an advisory lock makes concurrent
 * workers (and runs on the same server) build it once. Nothing connects to it once it is built.
 */
function migratedPgTemplate(adminUrl: string): Promise<string> {
  pgTemplate ??= (async () => {
    const hash = createHash('sha256');
    for (const m of listMigrations()) hash.update(`${m.name}\n${m.sql}\n`);
    for (const r of listRepeatables()) hash.update(`${r.name}\n${r.sql}\n`);
    // And by the day: migrations create the weekly partitions around now().
    const day = (offset: number) => new Date(Date.now() - offset * 86_400_000).toISOString().slice(0, 10).replaceAll('-', '');
    const name = `payhooks_template_${hash.digest('hex').slice(0, 16)}_${day(0)}`;
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    try {
      await admin.query('SELECT pg_advisory_lock(727275)');
      if ((await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount) return name;
      // Templates of two days ago and before are no run's any more.
      const { rows } = await admin.query<{ datname: string }>(
        `SELECT datname FROM pg_database WHERE datname ~ '^payhooks_template_[0-9a-f]{16}_[0-9]{8}$' AND right(datname, 8) < $1`,
        [day(1)],
      );
      for (const old of rows) await admin.query(`DROP DATABASE IF EXISTS ${old.datname}`).catch(() => {});
      const building = await createPgDatabase(adminUrl, 'payhooks_template_building');
      const client = new pg.Client({ connectionString: building.url });
      try {
        await client.connect();
        await client.query('BEGIN');
        await migrate({
          script: (fn) => fn(async (text) => [await client.query(text)].flat().at(-1)?.rows ?? []),
        } as Pick<Database, 'script'> as Database);
        await client.query('COMMIT');
      } catch (err) {
        await client.end().catch(() => {});
        await building.drop().catch(() => {});
        throw err;
      }
      await client.end();
      // Published under its name only once complete; the closed connection's backend may take a moment to go.
      const built = new URL(building.url).pathname.slice(1);
      for (let attempt = 0; ; attempt++) {
        try {
          await admin.query(`ALTER DATABASE ${built} RENAME TO ${name}`);
          return name;
        } catch (err) {
          if (attempt >= 50) throw err;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    } finally {
      await admin.query('SELECT pg_advisory_unlock(727275)').catch(() => {});
      await admin.end();
    }
  })();
  pgTemplate.catch(() => {
    pgTemplate = undefined;
  });
  return pgTemplate;
}

/** A PostgreSQL database of its own, already migrated (a copy of the run's template), dropped by `drop()`. */
export async function createMigratedPgDatabase(adminUrl = ADMIN_URL): Promise<{ url: string; drop(): Promise<void> }> {
  return createPgDatabase(adminUrl, undefined, await migratedPgTemplate(adminUrl));
}

let pgliteSnapshot: Promise<Blob> | undefined;

/**
 * A dump of one in-memory PGlite database, migrated, made once per test worker. A new PGlite
 * database starts from it: loading a dump skips the cluster's creation (initdb in WebAssembly)
 * and the migrations, which were most of the time a PGlite test file took to start. The copy's
 * state is the one `migrate` leaves (the same migrations, applied by the same function).
 */
function migratedPglite(): Promise<Blob> {
  pgliteSnapshot ??= (async () => {
    const { PGlite } = await import('@electric-sql/pglite');
    const client = new PGlite();
    try {
      // `migrate` needs only `script`, implemented as openDatabase's PGlite handle does it.
      const script: Database['script'] = (fn) =>
        client.transaction((tx) => fn(async (text) => ((await tx.exec(text)).at(-1)?.rows ?? []) as Record<string, unknown>[]));
      await migrate({ script } as Database);
      // The cluster's template databases are never used on PGlite (one database, no CREATE
      // DATABASE), and restoring them was a quarter of each copy's start (28 MB to unpack, not 43).
      await client.exec("UPDATE pg_database SET datistemplate = false WHERE datname IN ('template0', 'template1')");
      await client.exec('DROP DATABASE template0');
      await client.exec('DROP DATABASE template1');
      return (await client.dumpDataDir('none')) as Blob;
    } finally {
      await client.close();
    }
  })();
  pgliteSnapshot.catch(() => {
    pgliteSnapshot = undefined;
  });
  return pgliteSnapshot;
}

/** A migrated database on this run's backend: real PostgreSQL, or in-memory PGlite. */
export async function createTestDatabase(options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  let databaseUrl: string | undefined;
  let drop = async () => {};
  const migrated = options.migrate !== false;
  if (backend === 'postgres') {
    const created = migrated ? await createMigratedPgDatabase() : await createPgDatabase();
    databaseUrl = created.url;
    drop = created.drop;
  }
  // PGlite: a copy of the worker's one migrated database (see migratedPglite).
  const snapshot = backend === 'pglite' && migrated ? await migratedPglite() : undefined;
  const database = await openDatabase({ databaseUrl, dataDir: undefined, pgliteSnapshot: snapshot });
  return {
    database,
    databaseUrl,
    async dispose() {
      await database.close();
      await drop();
    },
  };
}

/** What `migrate` applies to a database migrated up to (not including) migration `id`: the rest, then the repeatable files. */
export function migrationNamesFrom(id: number): string[] {
  return [
    ...listMigrations()
      .filter((m) => m.id >= id)
      .map((m) => m.name),
    ...listRepeatables().map((r) => r.name),
  ];
}

import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDatabase, type Database } from '../../src/db/client.ts';
import { migrate } from '../../src/db/migrate.ts';

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
export async function createPgDatabase(adminUrl = ADMIN_URL, prefix = 'payhooks_test'): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name} TEMPLATE template0`);
  await admin.end();
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
  if (backend === 'postgres') {
    const created = await createPgDatabase();
    databaseUrl = created.url;
    drop = created.drop;
  }
  const migrated = options.migrate !== false;
  // PGlite: a copy of the worker's one migrated database (see migratedPglite).
  const snapshot = backend === 'pglite' && migrated ? await migratedPglite() : undefined;
  const database = await openDatabase({ databaseUrl, dataDir: undefined, pgliteSnapshot: snapshot });
  if (migrated && !snapshot) await migrate(database);
  return {
    database,
    databaseUrl,
    async dispose() {
      await database.close();
      await drop();
    },
  };
}

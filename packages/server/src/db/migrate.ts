import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Database } from './client.ts';

const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'migrations');

export interface Migration {
  id: number;
  name: string;
  sql: string;
}

/** The numbered SQL files (`0001_name.sql`), in order. */
export function listMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((file) => ({ id: Number(file.slice(0, 4)), name: file.replace(/\.sql$/, ''), sql: readFileSync(join(dir, file), 'utf8') }));
}

/**
 * Applies pending migrations in one transaction. A transaction-level advisory lock makes
 * concurrent starters (several workers booting at once) apply each migration exactly once;
 * the second starter waits, then finds nothing left to do. Returns the names applied.
 */
export async function migrate(database: Database): Promise<string[]> {
  return database.script(async (run) => {
    await run('SELECT pg_advisory_xact_lock(727274)');
    await run(`CREATE TABLE IF NOT EXISTS payhooks_migrations (
      id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const have = new Set((await run('SELECT id FROM payhooks_migrations')).map((r) => Number(r.id)));
    const applied: string[] = [];
    for (const m of listMigrations()) {
      if (have.has(m.id)) continue;
      await run(m.sql);
      await run(`INSERT INTO payhooks_migrations (id, name) VALUES (${m.id}, '${m.name}')`);
      applied.push(m.name);
    }
    return applied;
  });
}

export interface MigrationStatus {
  /** Migrations of this release the database has not had yet, in order. */
  pending: string[];
  /** Ids the database has that this release does not know: a newer release migrated it. */
  newer: number[];
}

/**
 * What `migrate` would do, without doing it or taking its lock (`payhooks migrate --check`,
 * for deploy scripts). A database never migrated has everything pending.
 */
export async function migrationStatus(database: Database): Promise<MigrationStatus> {
  return database.script(async (run) => {
    const [exists] = await run(`SELECT to_regclass('payhooks_migrations') IS NOT NULL AS present`);
    const have = new Set(exists?.present === true ? (await run('SELECT id FROM payhooks_migrations')).map((r) => Number(r.id)) : []);
    const known = listMigrations();
    const knownIds = new Set(known.map((m) => m.id));
    return {
      pending: known.filter((m) => !have.has(m.id)).map((m) => m.name),
      newer: [...have].filter((id) => !knownIds.has(id)).sort((x, y) => x - y),
    };
  });
}

import { createHash } from 'node:crypto';
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
 * The repeatable files (`R_name.sql`): each holds the whole current text of an object that
 * changes over releases (a function), applied after the numbered migrations whenever it differs
 * from the text applied last, so a change edits the one file instead of copying the object into a
 * new numbered migration (Flyway's repeatable migrations). Each must be idempotent (CREATE OR
 * REPLACE) and fit the schema the numbered migrations leave.
 */
export function listRepeatables(dir = MIGRATIONS_DIR): Array<{ name: string; sql: string; checksum: string }> {
  return readdirSync(dir)
    .filter((f) => /^R_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((file) => {
      const sql = readFileSync(join(dir, file), 'utf8');
      return { name: file.replace(/\.sql$/, ''), sql, checksum: createHash('sha256').update(sql).digest('hex') };
    });
}

type Run = (sqlText: string) => Promise<Record<string, unknown>[]>;

/** The checksum of each repeatable file as last applied, by name. */
async function appliedChecksums(run: Run): Promise<Map<string, string>> {
  return new Map((await run('SELECT name, checksum FROM payhooks_repeatable')).map((r) => [String(r.name), String(r.checksum)]));
}

const REPEATABLE_TABLE = `CREATE TABLE IF NOT EXISTS payhooks_repeatable (
  name text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`;

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
    await run(REPEATABLE_TABLE);
    const checksums = await appliedChecksums(run);
    for (const r of listRepeatables()) {
      if (checksums.get(r.name) === r.checksum) continue;
      await run(r.sql);
      await run(
        `INSERT INTO payhooks_repeatable (name, checksum) VALUES ('${r.name}', '${r.checksum}')
         ON CONFLICT (name) DO UPDATE SET checksum = excluded.checksum, applied_at = now()`,
      );
      applied.push(r.name);
    }
    return applied;
  });
}

export interface MigrationStatus {
  /** Migrations of this release the database has not had yet, in order, then repeatable files whose text changed. */
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
    const [exists] = await run(
      `SELECT to_regclass('payhooks_migrations') IS NOT NULL AS present,
              to_regclass('payhooks_repeatable') IS NOT NULL AS repeatable,
              to_regclass('payhooks_repeatable') IS NOT NULL AND has_table_privilege('payhooks_repeatable', 'SELECT') AS readable`,
    );
    const have = new Set(exists?.present === true ? (await run('SELECT id FROM payhooks_migrations')).map((r) => Number(r.id)) : []);
    // No ledger yet: every repeatable file is pending. One this role can't read (a runtime role
    // granted before the ledger existed): checking them is the owner's `payhooks migrate`.
    const checksums = exists?.readable === true ? await appliedChecksums(run) : null;
    const repeatables = exists?.repeatable === true && checksums === null ? [] : listRepeatables();
    const known = listMigrations();
    const knownIds = new Set(known.map((m) => m.id));
    return {
      pending: [
        ...known.filter((m) => !have.has(m.id)).map((m) => m.name),
        ...repeatables.filter((r) => checksums?.get(r.name) !== r.checksum).map((r) => r.name),
      ],
      newer: [...have].filter((id) => !knownIds.has(id)).sort((x, y) => x - y),
    };
  });
}

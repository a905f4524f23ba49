import { getTableConfig, PgTable } from 'drizzle-orm/pg-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend, createTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { openDatabase, type Database } from '../../src/db/client.ts';
import { listMigrations, listRepeatables, migrate, migrationStatus } from '../../src/db/migrate.ts';
import * as schema from '../../src/db/schema.ts';
import { attemptKeys, keyedByDelivery } from '../helpers/attempt-keys.ts';

/** docs/architecture.md, "Storage": numbered SQL migrations, applied at start and by `payhooks migrate`. */

let testDb: TestDatabase;

const query = (database: Database, text: string) => database.script((run) => run(text));

async function publicColumns(database: Database): Promise<Map<string, Map<string, { type: string; nullable: boolean }>>> {
  const rows = await query(
    database,
    `SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position`,
  );
  const out = new Map<string, Map<string, { type: string; nullable: boolean }>>();
  for (const r of rows) {
    const table = String(r.table_name);
    if (!out.has(table)) out.set(table, new Map());
    out.get(table)!.set(String(r.column_name), { type: String(r.data_type), nullable: r.is_nullable === 'YES' });
  }
  return out;
}

const drizzleTables = () =>
  (Object.values(schema) as unknown[]).filter((v): v is PgTable => v instanceof PgTable).map((t) => getTableConfig(t));

beforeAll(async () => {
  testDb = await createTestDatabase({ migrate: false });
});
afterAll(async () => testDb?.dispose());

describe('migrations', () => {
  it('the migration files are numbered 0001, 0002, … without gaps', () => {
    const ids = listMigrations().map((m) => m.id);
    expect(ids.length).toBeGreaterThan(0);
    expect(ids).toEqual(ids.map((_, i) => i + 1));
  });

  it('from an empty database, concurrent migrators apply every migration exactly once', async () => {
    expect((await publicColumns(testDb.database)).size).toBe(0);
    // Two processes booting at once: on PostgreSQL two connections pools, on PGlite (one
    // process by design) two callers on the one handle.
    const second = backend === 'postgres' ? await openDatabase({ databaseUrl: testDb.databaseUrl }) : testDb.database;
    try {
      const results = await Promise.all([migrate(testDb.database), migrate(second), migrate(second)]);
      const all = [...listMigrations().map((m) => m.name), ...listRepeatables().map((r) => r.name)];
      expect(results.filter((r) => r.length > 0)).toEqual([all]);
      expect(results.flat().sort()).toEqual([...all].sort());
    } finally {
      if (second !== testDb.database) await second.close();
    }
    const recorded = await query(testDb.database, 'SELECT id, name FROM payhooks_migrations ORDER BY id');
    expect(recorded.map((r) => [Number(r.id), r.name])).toEqual(listMigrations().map((m) => [m.id, m.name]));
  });

  it('running again applies nothing and changes nothing', async () => {
    const before = await publicColumns(testDb.database);
    expect(await migrate(testDb.database)).toEqual([]);
    expect(await publicColumns(testDb.database)).toEqual(before);
  });

  it('a repeatable file (R_*.sql, the whole current text of a function) runs after the numbered ones, and again only when its text changed', async () => {
    const repeatables = listRepeatables();
    expect(repeatables.map((r) => r.name)).toContain('R_publish_event');
    const recorded = await query(testDb.database, 'SELECT name, checksum FROM payhooks_repeatable ORDER BY name');
    expect(recorded.map((r) => [r.name, r.checksum])).toEqual(repeatables.map((r) => [r.name, r.checksum]));
    expect((await migrationStatus(testDb.database)).pending).toEqual([]);
    // A release whose file differs (here: the record says another text was applied): the status
    // names it, migrate runs it again and records the new text.
    await query(testDb.database, `UPDATE payhooks_repeatable SET checksum = 'an older text' WHERE name = 'R_publish_event'`);
    expect((await migrationStatus(testDb.database)).pending).toEqual(['R_publish_event']);
    expect(await migrate(testDb.database)).toEqual(['R_publish_event']);
    expect(await migrate(testDb.database)).toEqual([]);
    // The function is the file's: its body is the text between the file's dollar quotes.
    const file = repeatables.find((r) => r.name === 'R_publish_event')!.sql;
    const [fn] = await query(
      testDb.database,
      `SELECT prosrc FROM pg_proc WHERE proname = 'publish_event' AND pronamespace = 'payhooks'::regnamespace`,
    );
    expect(file).toContain(String(fn!.prosrc));
  });

  it('the tables of issue 2 exist (spec 2.3, 5.2: Platforms, keys, endpoints)', async () => {
    const tables = await publicColumns(testDb.database);
    for (const t of ['platforms', 'merchants', 'api_keys', 'webhook_endpoints', 'idempotency_keys', 'payhooks_migrations']) {
      expect(tables.has(t), t).toBe(true);
    }
    expect([...tables.get('webhook_endpoints')!.keys()]).toEqual(
      expect.arrayContaining(['platform_id', 'environment', 'secret_ciphertext', 'deleted_at']),
    );
    // Secrets are stored encrypted and API keys hashed: no column holds them in clear.
    expect(tables.get('webhook_endpoints')!.has('secret')).toBe(false);
    expect(tables.get('api_keys')!.has('key')).toBe(false);
  });

  it('the drizzle schema matches the SQL the migrations created (names, nullability)', async () => {
    const tables = await publicColumns(testDb.database);
    const configs = drizzleTables();
    expect(configs.length).toBeGreaterThan(0);
    for (const t of configs) {
      const actual = tables.get(t.name);
      expect(actual, `table ${t.name} exists`).toBeDefined();
      for (const c of t.columns) {
        const col = actual!.get(c.name);
        expect(col, `${t.name}.${c.name} exists`).toBeDefined();
        expect(col!.nullable, `${t.name}.${c.name} nullable`).toBe(!c.notNull);
      }
      // Every NOT NULL column without a default in SQL is known to drizzle (inserts would fail).
      const known = new Set(t.columns.map((c) => c.name));
      for (const [name, col] of actual!) {
        if (!col.nullable) expect(known.has(name), `${t.name}.${name} is in schema.ts`).toBe(true);
      }
    }
  });

  it("the partitioned tables' keys and indexes exist under the names schema.ts gives them, partitions carry their parent's names, and none keeps 0007's `_new`", async () => {
    const constraints = await query(testDb.database, `SELECT conrelid::regclass::text AS rel, conname FROM pg_constraint`);
    const indexes = await query(testDb.database, `SELECT tablename, indexname FROM pg_indexes WHERE schemaname = 'public'`);
    const names = new Set([...constraints.map((r) => String(r.conname)), ...indexes.map((r) => String(r.indexname))]);
    const partitioned = drizzleTables().filter((t) => ['events', 'webhook_deliveries', 'delivery_attempts'].includes(t.name));
    expect(partitioned).toHaveLength(3);
    for (const t of partitioned) {
      for (const name of [
        ...t.primaryKeys.map((k) => k.getName()),
        ...t.uniqueConstraints.map((u) => u.getName()),
        ...t.indexes.map((i) => i.config.name),
      ]) {
        if (name) expect(names.has(name), `${t.name}: ${name}`).toBe(true);
      }
    }
    expect([...names].filter((n) => /(^|_)new_/.test(n) && /^(events|webhook_deliveries|delivery_attempts)/.test(n))).toEqual([]);
    // Partitions carry the parent's CHECK and foreign keys under the parent's names.
    const partitionFks = constraints.filter((r) => /^webhook_deliveries_p\d{8}$/.test(String(r.rel)) && /fkey$/.test(String(r.conname)));
    expect(partitionFks.length).toBeGreaterThan(0);
    for (const fk of partitionFks) expect(fk.conname).toBe('webhook_deliveries_endpoint_id_fkey');
  });

  it("delivery_attempts' primary key is (delivery_id, attempt_number, delivery_created_at) on the parent and every partition, each partition's under its own `_pkey` name, and no other key or index is left (0029)", async () => {
    const keys = await attemptKeys(testDb.database);
    expect(keys.map((k) => k.rel)).toEqual(expect.arrayContaining(['delivery_attempts', 'delivery_attempts_default']));
    expect(keys.filter((k) => /^delivery_attempts_p\d{8}$/.test(k.rel)).length).toBeGreaterThanOrEqual(3);
    expect(keys).toEqual(keys.map((k) => keyedByDelivery(k.rel)));
    const [table] = drizzleTables().filter((t) => t.name === 'delivery_attempts');
    expect(table!.primaryKeys.map((k) => [k.getName(), k.columns.map((c) => c.name).join(',')])).toEqual([
      ['delivery_attempts_pkey', 'delivery_id,attempt_number,delivery_created_at'],
    ]);
    expect(table!.uniqueConstraints).toEqual([]);
  });

  it('CHECK constraints refuse values outside the model', async () => {
    await query(testDb.database, `INSERT INTO platforms (id, name) VALUES ('plt_mig', 'm')`);
    await expect(
      query(
        testDb.database,
        `INSERT INTO api_keys (id, platform_id, environment, prefix, key_hash) VALUES ('key_mig', 'plt_mig', 'staging', 'sk_x', 'h1')`,
      ),
    ).rejects.toThrow();
    await expect(
      query(
        testDb.database,
        `INSERT INTO api_keys (id, platform_id, environment, prefix, key_hash) VALUES ('key_mig', 'plt_nope', 'live', 'sk_x', 'h1')`,
      ),
    ).rejects.toThrow();
    await query(
      testDb.database,
      `INSERT INTO api_keys (id, platform_id, environment, prefix, key_hash) VALUES ('key_mig', 'plt_mig', 'live', 'sk_x', 'h1')`,
    );
    // Key hashes are unique: one key can't belong to two Platforms.
    await expect(
      query(
        testDb.database,
        `INSERT INTO api_keys (id, platform_id, environment, prefix, key_hash) VALUES ('key_mig2', 'plt_mig', 'live', 'sk_x', 'h1')`,
      ),
    ).rejects.toThrow();
  });
});

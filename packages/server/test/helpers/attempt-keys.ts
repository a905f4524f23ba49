import type { Database } from '../../src/db/client.ts';

export interface AttemptRelationKeys {
  /** `delivery_attempts` or one of its partitions. */
  rel: string;
  /** Its primary key's name, columns and the parent's constraint it is attached to (null: none). */
  pkey: string | null;
  columns: string | null;
  parent: string | null;
  /** Its unique constraints other than the primary key, and all of its indexes, by name. */
  unique: string[];
  indexes: string[];
}

/** The keys and indexes of `delivery_attempts` and of each of its partitions, parent first. */
export async function attemptKeys(database: Database): Promise<AttemptRelationKeys[]> {
  const rows = await database.script((run) =>
    run(`
      WITH rels AS (
        SELECT 'delivery_attempts'::regclass::oid AS oid
        UNION ALL SELECT inhrelid FROM pg_inherits WHERE inhparent = 'delivery_attempts'::regclass
      )
      SELECT c.relname AS rel,
             (SELECT k.conname FROM pg_constraint k WHERE k.conrelid = c.oid AND k.contype = 'p') AS pkey,
             (SELECT string_agg(a.attname, ',' ORDER BY u.ord)
                FROM pg_constraint k, unnest(k.conkey) WITH ORDINALITY u(attnum, ord)
                JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = u.attnum
               WHERE k.conrelid = c.oid AND k.contype = 'p') AS columns,
             (SELECT p.conname FROM pg_constraint k JOIN pg_constraint p ON p.oid = k.conparentid
               WHERE k.conrelid = c.oid AND k.contype = 'p') AS parent,
             coalesce((SELECT string_agg(k.conname, ',' ORDER BY k.conname) FROM pg_constraint k
                        WHERE k.conrelid = c.oid AND k.contype = 'u'), '') AS unique_keys,
             coalesce((SELECT string_agg(i.relname, ',' ORDER BY i.relname) FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
                        WHERE x.indrelid = c.oid), '') AS indexes
      FROM rels JOIN pg_class c ON c.oid = rels.oid
      ORDER BY c.relkind <> 'p', c.relname`),
  );
  const list = (v: unknown) => (v ? String(v).split(',') : []);
  return rows.map((r) => ({
    rel: String(r.rel),
    pkey: (r.pkey as string | null) ?? null,
    columns: (r.columns as string | null) ?? null,
    parent: (r.parent as string | null) ?? null,
    unique: list(r.unique_keys),
    indexes: list(r.indexes),
  }));
}

/** What 0029 leaves on a relation: its own `_pkey` on the delivery's columns, attached to the parent's, and no other key or index. */
export function keyedByDelivery(rel: string, isParent = rel === 'delivery_attempts'): AttemptRelationKeys {
  return {
    rel,
    pkey: `${rel}_pkey`,
    columns: 'delivery_id,attempt_number,delivery_created_at',
    parent: isParent ? null : 'delivery_attempts_pkey',
    unique: [],
    indexes: [`${rel}_pkey`],
  };
}

import { and, desc, eq, lte, sql, type SQL } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { Queryable } from './client.ts';
import { AppError } from '../errors.ts';

export interface ListPage<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
}

/**
 * Keyset pagination, newest first, on (created_at DESC, id DESC), Stripe's `limit` +
 * `starting_after`. The cursor row must itself be visible under `where` (the caller's tenant
 * scope), so another tenant's id can't be used to probe.
 */
export async function pageOf<TRow extends Record<string, unknown>>(
  db: Queryable,
  table: PgTable & { id: PgColumn; createdAt: PgColumn },
  where: SQL | undefined,
  options: { limit: number; startingAfter?: string | undefined; what: string },
): Promise<{ rows: TRow[]; hasMore: boolean }> {
  let cursor: SQL | undefined;
  if (options.startingAfter) {
    // Found by its id alone (the primary key's leading column), the list's conditions evaluated
    // on that one row: as conditions of the lookup, the planner could read the cursor's id
    // through the filter's index instead (an endpoint's whole history, at 5 M deliveries).
    const [after] = (await db
      .select({ createdAt: table.createdAt, id: table.id, visible: sql<unknown>`${where ?? sql`true`}` })
      .from(table as PgTable)
      .where(eq(table.id, options.startingAfter))) as Array<{ createdAt: unknown; id: unknown; visible: unknown }>;
    if (after?.visible !== true) {
      throw new AppError('invalid_request', 'resource_missing', `starting_after: no such ${options.what} '${options.startingAfter}'.`, {
        param: 'starting_after',
      });
    }
    // A row comparison, which a btree on (…, created_at DESC, id DESC) takes as an index
    // condition: the scan starts at the cursor instead of filtering away every row before it.
    // The plain bound on created_at is implied; it lets the planner prune the newer weeks.
    cursor = and(
      lte(table.createdAt, after.createdAt),
      sql`(${table.createdAt}, ${table.id}) < (${(after.createdAt as Date).toISOString()}::timestamptz, ${after.id}::text)`,
    );
  }
  const rows = (await db
    .select()
    .from(table as PgTable)
    .where(and(where, cursor))
    .orderBy(desc(table.createdAt), desc(table.id))
    .limit(options.limit + 1)) as TRow[];
  return { rows: rows.slice(0, options.limit), hasMore: rows.length > options.limit };
}

export function listPage<T>(data: T[], hasMore: boolean): ListPage<T> {
  return { object: 'list', data, has_more: hasMore };
}

import type { Queryable } from './client.ts';

/**
 * Runs one hand-written, parameterised statement under a name, on the connection that holds
 * `on` (the caller's transaction), and returns its rows.
 *
 * Why this module exists: a named statement is parsed and planned once per connection and then
 * runs its cached (generic) plan; an unnamed one is parsed and planned on every call, which was
 * more than half of the publish statement's server time (docs/decisions/publish-statement.md).
 * drizzle-orm (0.45) names a statement only through its query builders' `.prepare(name)`, which
 * can't express the publish statement (data-modifying CTEs over unnested arrays); its public way
 * to run hand-written SQL, `execute(sql)`, never names it; and the pooled connection that holds
 * a drizzle transaction is not exposed. So this reaches into drizzle's session
 * (`_.session.prepareQuery(query, fields, name, arrayMode)`, typed but not documented API): the
 * one place in the code base that does (docs/decisions/one-way-to-publish.md). On
 * node-postgres the name is sent with the statement (prepared on first use per connection); the
 * PGlite driver ignores it (a single connection, no plan cache to keep). If a drizzle upgrade
 * changes this, this function is what to fix; publish-plan.postgres.test.ts (the plan is
 * cached) and the integration suite on both back ends would tell.
 *
 * Outside a transaction, `Database.query` (db/client.ts) names statements on the raw driver.
 */
export async function runNamedStatement<T>(on: Queryable, name: string, text: string, params: unknown[]): Promise<T[]> {
  const result = (await on._.session.prepareQuery({ sql: text, params }, undefined, name, false).execute()) as { rows: T[] };
  return result.rows;
}

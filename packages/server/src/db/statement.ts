import { SQL, sql, type SQLChunk } from 'drizzle-orm';
import pg from 'pg';
import type { Database, Tx } from './client.ts';

/**
 * A hand-written statement, kept once: its name (PostgreSQL prepares a named statement once per
 * connection and keeps its plan), its text with named parameters, and the type of its rows.
 *
 * Parameters are written `:name` (a colon, then a lower-case letter), never after another colon,
 * so casts (`::text`) are left alone; PostgreSQL receives `$1…$n`, numbered in the order the
 * names first appear, and each name is bound once however often the text uses it. A value left
 * `undefined` is refused (`null` is a value): a statement never runs with a parameter forgotten.
 * The text as written (`source`) is what the SQL function's generated body is made from
 * (scripts/generate-sql-functions.ts), so the two run the same statement.
 */
export interface Statement<P extends object, R> {
  readonly name: string;
  /** The text as written, with `:name` parameters. */
  readonly source: string;
  /** The text PostgreSQL receives, with `$1…$n`. */
  readonly text: string;
  /** The parameters' names, in the order of `$1…$n`. */
  readonly params: readonly (keyof P & string)[];
  /** The values of `values` in the order of `$1…$n`. */
  bind(values: P): unknown[];
  /** Only carries the row type. */
  readonly row?: R;
}

const PARAMETER = /(?<![:\w]):([a-z][a-z0-9_]*)/g;

export function statement<P extends object, R = Record<string, unknown>>(name: string, source: string): Statement<P, R> {
  const params: string[] = [];
  const text = source.replace(PARAMETER, (_m, param: string) => {
    let i = params.indexOf(param);
    if (i < 0) i = params.push(param) - 1;
    return `$${i + 1}`;
  });
  return {
    name,
    source,
    text,
    params: params as (keyof P & string)[],
    bind(values: P): unknown[] {
      const out = new Array<unknown>(params.length);
      for (let i = 0; i < params.length; i++) {
        const value = (values as Record<string, unknown>)[params[i]!];
        if (value === undefined) throw new Error(`statement ${name}: no value for :${params[i]}`);
        out[i] = value;
      }
      return out;
    },
  };
}

/**
 * `source` with each `:name` replaced by an SQL expression (a PL/pgSQL variable, a constant):
 * how a generated SQL function runs the statement the TypeScript path runs. Every parameter of
 * the statement must be given one, and nothing else may be.
 */
export function substitute<P extends object>(stmt: Statement<P, unknown>, exprs: { [K in keyof P]?: string }): string {
  const given = Object.keys(exprs);
  const extra = given.filter((k) => !stmt.params.includes(k as keyof P & string));
  if (extra.length > 0) throw new Error(`statement ${stmt.name} has no parameter ${extra.map((k) => `:${k}`).join(', ')}`);
  const missing = stmt.params.filter((k) => !given.includes(k));
  if (missing.length > 0) throw new Error(`statement ${stmt.name}: no SQL for ${missing.map((k) => `:${k}`).join(', ')}`);
  return stmt.source.replace(PARAMETER, (_m, param: string) => (exprs as Record<string, string>)[param]!);
}

/** Runs `stmt` as one statement of its own on the pool (it commits when it returns). */
export async function runAlone<P extends object, R>(database: Database, stmt: Statement<P, R>, values: P): Promise<R[]> {
  return database.query<R>(stmt.text, stmt.bind(values), stmt.name);
}

/**
 * How a transaction runs a hand-written statement on the connection it holds. db/client.ts
 * registers one for each top-level transaction it opens on PostgreSQL, where it owns the pooled
 * connection, so the statement is sent by name; rows come back with the raw paths' parsing
 * (db/client.ts, RAW_TYPES).
 */
export type ConnectionRunner = <R>(name: string, text: string, params: unknown[]) => Promise<R[]>;

const runners = new WeakMap<Tx, ConnectionRunner>();

/** Registers the connection `tx` runs on (db/client.ts only). */
export function attachConnection(tx: Tx, run: ConnectionRunner): void {
  runners.set(tx, run);
}

/**
 * Runs `stmt` inside `tx`. On the transaction's own connection by name when db/client.ts
 * registered it; otherwise (PGlite, which has one connection and no plan cache to keep; a
 * savepoint) through drizzle's public `execute`, unnamed, with the rows brought to the same
 * types (int8 as a number, timestamps as Dates) from the result's field types.
 */
export async function runInTransaction<P extends object, R>(tx: Tx, stmt: Statement<P, R>, values: P): Promise<R[]> {
  const params = stmt.bind(values);
  const run = runners.get(tx);
  if (run) return run<R>(stmt.name, stmt.text, params);
  const result = (await tx.execute(withParams(stmt.text, params))) as unknown as DriverResult;
  return rawRows(result) as R[];
}

/** `$n` of `text` as drizzle parameters (drizzle numbers them again). */
function withParams(text: string, params: unknown[]): SQL {
  const chunks: SQLChunk[] = [];
  let last = 0;
  for (const m of text.matchAll(/\$(\d+)/g)) {
    chunks.push(sql.raw(text.slice(last, m.index)), sql.param(params[Number(m[1]) - 1]));
    last = m.index + m[0].length;
  }
  chunks.push(sql.raw(text.slice(last)));
  return new SQL(chunks);
}

/** What both drivers return from drizzle's `execute`: rows, and each column's type. */
interface DriverResult {
  rows: Record<string, unknown>[];
  fields: { name: string; dataTypeID: number }[];
}

const { INT8, TIMESTAMP, TIMESTAMPTZ } = pg.types.builtins;
const parseTimestamp = { [TIMESTAMP]: pg.types.getTypeParser(TIMESTAMP), [TIMESTAMPTZ]: pg.types.getTypeParser(TIMESTAMPTZ) };

/** drizzle keeps timestamps as text (and node-postgres int8 as text): the raw paths' types instead. */
function rawRows(result: DriverResult): Record<string, unknown>[] {
  const convert = result.fields.filter((f) => f.dataTypeID === INT8 || f.dataTypeID === TIMESTAMP || f.dataTypeID === TIMESTAMPTZ);
  if (convert.length === 0) return result.rows;
  for (const row of result.rows) {
    for (const f of convert) {
      const v = row[f.name];
      if (typeof v !== 'string') continue;
      row[f.name] = f.dataTypeID === INT8 ? Number(v) : parseTimestamp[f.dataTypeID as typeof TIMESTAMP]!(v);
    }
  }
  return result.rows;
}

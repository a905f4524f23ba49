/**
 * What a database failure is, told apart without printing what the query carried.
 *
 * Drizzle wraps a failed query in an error whose message and `params` hold every bound value
 * (API-key hashes, URLs, metadata, ciphertext), and PostgreSQL's own `detail` (and for some
 * codes the message) quotes the offending value. Nothing from those goes to a log or a caller:
 * `describeDbError` keeps the statement's name (the verb and the table, from our own SQL text)
 * and the SQLSTATE code.
 */

/** SQLSTATE classes and codes that mean "the server went away or can't take us now". */
const UNAVAILABLE_CLASSES = ['08', '53', '57P']; // connection exception, insufficient resources, operator intervention
/** Socket-level errors of the driver. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);
/** node-postgres and pg-pool raise these without a code. */
const DRIVER_MESSAGES = [
  /^Connection terminated/,
  /is not queryable/,
  /^timeout exceeded when trying to connect/,
  /^Query read timeout/,
  /^Connection timeout/,
  /^Client was closed/,
  /\.s\.PGSQL\.\d+/, // a unix socket that is gone (ENOENT) while the server is down
];

interface ErrorLike {
  message?: unknown;
  code?: unknown;
  cause?: unknown;
  query?: unknown;
  params?: unknown;
}

/** The error and its causes, outermost first (at most 5 deep). */
function chain(err: unknown): ErrorLike[] {
  const out: ErrorLike[] = [];
  for (let e = err; e && typeof e === 'object' && out.length < 5; e = (e as ErrorLike).cause) out.push(e as ErrorLike);
  return out;
}

/** The SQLSTATE (or socket errno) of a database error, looking through wrappers. */
export function dbErrorCode(err: unknown): string | undefined {
  for (const e of chain(err)) if (typeof e.code === 'string') return e.code;
  return undefined;
}

/**
 * True when the failure is the database being unreachable (down, restarting, refusing
 * connections, pool exhausted), not something about the request: callers answer 503 and retry.
 */
export function isUnavailable(err: unknown): boolean {
  for (const e of chain(err)) {
    const code = typeof e.code === 'string' ? e.code : undefined;
    if (code && (NETWORK_CODES.has(code) || UNAVAILABLE_CLASSES.some((c) => code.startsWith(c)))) return true;
    if (typeof e.message === 'string' && DRIVER_MESSAGES.some((re) => re.test(e.message as string))) return true;
  }
  return false;
}

/**
 * A short name for a statement from its SQL text: `select api_keys`, `insert events`,
 * `update webhook_deliveries`. Our SQL text holds placeholders, never values, so this is safe
 * to log; hand-written statements pass their own name instead.
 */
export function statementName(sqlText: string): string {
  const text = sqlText
    .replace(/--[^\n]*\n/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .toLowerCase();
  const verb = /^(\w+)/.exec(text)?.[1] ?? 'query';
  const table = /\b(?:from|into|update|table)\s+"?([a-z_][a-z0-9_]*)"?/.exec(text)?.[1];
  return table ? `${verb} ${table}` : verb;
}

/** An error raised by `Database.query`: the statement's name and the driver's error as cause. */
export class QueryError extends Error {
  readonly code: string | undefined;
  constructor(
    readonly statement: string,
    cause: unknown,
  ) {
    const code = dbErrorCode(cause);
    super(`database statement '${statement}' failed${code ? ` (${code})` : ''}`, { cause });
    this.name = 'QueryError';
    this.code = code;
  }
}

export interface DbErrorSummary {
  type: 'DatabaseError';
  /** Which statement failed, e.g. `insert events` or `claim_due`. */
  statement: string | undefined;
  /** SQLSTATE (`57P01`, `23505`) or socket errno (`ECONNREFUSED`). */
  code: string | undefined;
  /** True when the database is unreachable rather than the statement wrong. */
  unavailable: boolean;
  message: string;
}

/**
 * A loggable summary of a database error, or undefined when `err` is not one. The message is
 * ours; the server's text is kept only for connection-level failures, which quote no data.
 */
export function describeDbError(err: unknown): DbErrorSummary | undefined {
  const links = chain(err);
  let statement: string | undefined;
  let isDb = false;
  for (const e of links) {
    if (e instanceof QueryError) {
      statement ??= e.statement;
      isDb = true;
    } else if (typeof e.query === 'string' && 'params' in e) {
      statement ??= statementName(e.query); // drizzle's DrizzleQueryError
      isDb = true;
    } else if (isPgError(e)) {
      isDb = true;
    }
  }
  const unavailable = isUnavailable(err);
  if (!isDb && !unavailable) return undefined;
  const code = dbErrorCode(err);
  const driverText = links
    .map((e) => e.message)
    .find((m): m is string => typeof m === 'string' && !/^(Failed query|database statement)/.test(m));
  const message = unavailable
    ? `database unavailable: ${driverText ?? 'connection failed'}`
    : `database statement ${statement ? `'${statement}' ` : ''}failed${code ? ` with SQLSTATE ${code}` : ''}`;
  return { type: 'DatabaseError', statement, code, unavailable, message };
}

/** node-postgres' DatabaseError: a SQLSTATE code and the protocol's severity field. */
function isPgError(e: ErrorLike): boolean {
  return typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code) && 'severity' in e;
}

import { ConfigError } from '../errors.ts';
import { dbErrorCode } from './faults.ts';
import { DATABASE_URL_VARIABLE as URL_SETTING, parseDatabaseTargets } from './database-url.ts';
import { describeHosts } from './hosts.ts';

/** Host, port, user and database of a PostgreSQL URL: never its password. */
export function describeTarget(url: string | undefined): { host: string; port: string; user: string; database: string } {
  let parsed: URL | undefined;
  try {
    parsed = url ? new URL(singleHost(url)) : undefined;
  } catch {
    parsed = undefined;
  }
  const user = parsed?.username ? decodeURIComponent(parsed.username) : (process.env.PGUSER ?? process.env.USER ?? 'postgres');
  const database = parsed && parsed.pathname.length > 1 ? decodeURIComponent(parsed.pathname.slice(1)) : user;
  const host = parsed?.searchParams.get('host') ?? (parsed?.hostname || 'localhost');
  return { host, port: parsed?.port || '5432', user, database };
}

/** Where a URL points, as `host:port` or, for several hosts, `h1:5432, h2:5433`. */
export function describeAddress(url: string | undefined): string {
  try {
    const { hosts } = parseDatabaseTargets(url ?? '');
    if (hosts.length > 1) return describeHosts(hosts);
  } catch {
    // not a multi-host URL: describeTarget reads it
  }
  const t = describeTarget(url);
  return `${t.host}:${t.port}`;
}

/** A multi-host URL cut to its first host (WHATWG URL rejects a host list). */
function singleHost(url: string): string {
  try {
    return parseDatabaseTargets(url).url;
  } catch {
    return url;
  }
}

const shell = (s: string) => (/^[\w.@-]+$/.test(s) ? s : `'${s.replaceAll("'", "'\\''")}'`);

/**
 * A connection the server answered but refused, as one line saying what to do. PostgreSQL's
 * SQLSTATE tells the cases apart: 3D000 no such database, 28P01 wrong password, 28000 a role that
 * doesn't exist or isn't allowed to connect (pg_hba.conf).
 */
export function refusedConnection(err: unknown, url: string | undefined): ConfigError {
  const code = dbErrorCode(err);
  const t = describeTarget(url);
  const at = `PostgreSQL at ${t.host}:${t.port}`;
  const cause = { cause: err };
  if (code === '3D000') {
    return new ConfigError(
      `Database "${t.database}" does not exist on ${at} (${URL_SETTING}): create it with \`createdb -h ${shell(t.host)} -p ${t.port} -U ${shell(t.user)} ${shell(t.database)}\`, or point ${URL_SETTING} at an existing database.`,
      cause,
    );
  }
  if (code === '28P01') {
    return new ConfigError(
      `${at} rejected the password of user "${t.user}" (${URL_SETTING}): correct the user or password in ${URL_SETTING}.`,
      cause,
    );
  }
  if (code === '28000' || code?.startsWith('28')) {
    return new ConfigError(
      `${at} refused user "${t.user}" (${URL_SETTING}): the role does not exist or may not connect to "${t.database}". Use an existing role in ${URL_SETTING}, or create it with \`createuser -h ${shell(t.host)} -p ${t.port} ${shell(t.user)}\` (and allow it in pg_hba.conf).`,
      cause,
    );
  }
  return new ConfigError(
    `${at} refused the connection${code ? ` (SQLSTATE ${code})` : ''}: check the user, password and database name in ${URL_SETTING}.`,
    cause,
  );
}

/** PostgreSQL still not answering after the start-up wait. */
export function unreachable(err: unknown, url: string | undefined, waitedMs: number): ConfigError {
  const code = dbErrorCode(err);
  return new ConfigError(
    `PostgreSQL at ${describeAddress(url)} (${URL_SETTING}) is not reachable (${code ?? 'no answer'}) after ${Math.round(waitedMs / 1000)} s: start PostgreSQL or correct the host and port in ${URL_SETTING}; PAYHOOKS_DB_WAIT sets how long to wait for it.`,
    { cause: err },
  );
}

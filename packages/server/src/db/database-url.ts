/*
 * The PostgreSQL URL as payhooks reads it: libpq's multi-host form, split into hosts and
 * target_session_attrs. Parsing only, without the driver: config.ts validates DATABASE_URL with
 * it, and the CLI's --help, which loads config.ts, loads no database driver.
 */

/** The variable that holds the PostgreSQL URL (config.ts's schema takes its name from here, and errors name it). */
export const DATABASE_URL_VARIABLE = 'DATABASE_URL';

export type TargetSessionAttrs = 'any' | 'read-write' | 'read-only' | 'primary' | 'standby' | 'prefer-standby';
const ATTRS: readonly TargetSessionAttrs[] = ['any', 'read-write', 'read-only', 'primary', 'standby', 'prefer-standby'];

export interface HostPort {
  host: string;
  port: number;
}

export interface DatabaseTargets {
  hosts: HostPort[];
  attrs: TargetSessionAttrs;
  /** The URL with the first host only and without target_session_attrs, for node-postgres. */
  url: string;
}

/** Thrown for a URL that names hosts node-postgres or libpq would not understand. */
export class DatabaseUrlError extends Error {}

const URL_SHAPE = /^(postgres(?:ql)?:\/\/)([^@/?#]*@)?([^/?#]*)(.*)$/s;

/** Splits a PostgreSQL URL into its hosts (in order) and its target_session_attrs. */
export function parseDatabaseTargets(url: string): DatabaseTargets {
  const m = URL_SHAPE.exec(url);
  if (!m) throw new DatabaseUrlError('not a postgres:// or postgresql:// URL');
  const [, scheme, userinfo = '', hostList, rest] = m as unknown as [string, string, string | undefined, string, string];
  const hosts: HostPort[] = [];
  for (const part of hostList.split(',')) {
    if (part === '' && hostList === '') break; // no host at all: node-postgres' defaults (PGHOST, localhost)
    const hp = /^(\[[^\]]+\]|[^:[\]]*)(?::(\d{1,5}))?$/.exec(part);
    if (!hp || hp[1] === '') throw new DatabaseUrlError(`host "${part}" is not host[:port]`);
    const port = hp[2] ? Number(hp[2]) : 5432;
    if (port < 1 || port > 65535) throw new DatabaseUrlError(`port ${hp[2]} is out of range`);
    hosts.push({ host: hp[1]!.replace(/^\[|\]$/g, ''), port });
  }
  const queryStart = rest.indexOf('?');
  const path = queryStart < 0 ? rest : rest.slice(0, queryStart);
  const params = new URLSearchParams(queryStart < 0 ? '' : rest.slice(queryStart + 1));
  const wanted = params.get('target_session_attrs') ?? 'any';
  if (!ATTRS.includes(wanted as TargetSessionAttrs)) {
    throw new DatabaseUrlError(`target_session_attrs=${wanted} is not one of ${ATTRS.join(', ')}`);
  }
  params.delete('target_session_attrs');
  const query = params.toString();
  const first = hosts[0];
  const hostPart = first ? `${first.host.includes(':') ? `[${first.host}]` : first.host}:${first.port}` : '';
  return {
    hosts,
    attrs: wanted as TargetSessionAttrs,
    url: `${scheme}${userinfo}${hostPart}${path}${query ? `?${query}` : ''}`,
  };
}

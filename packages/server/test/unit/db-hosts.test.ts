import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { unreachable } from '../../src/db/connect-errors.ts';
import { isUnavailable } from '../../src/db/faults.ts';
import { parseDatabaseTargets } from '../../src/db/database-url.ts';
import { NoSuitableHostError, roundBackoffMs } from '../../src/db/hosts.ts';

describe('DATABASE_URL with several hosts (libpq form)', () => {
  it('reads the hosts in order, their ports, and target_session_attrs, and hands node-postgres a one-host URL', () => {
    const t = parseDatabaseTargets(
      'postgres://app:s3cret@db1:5432,db2:5433,[::1]/payhooks?target_session_attrs=read-write&sslmode=require',
    );
    expect(t.hosts).toEqual([
      { host: 'db1', port: 5432 },
      { host: 'db2', port: 5433 },
      { host: '::1', port: 5432 },
    ]);
    expect(t.attrs).toBe('read-write');
    expect(t.url).toBe('postgres://app:s3cret@db1:5432/payhooks?sslmode=require');
  });

  it('a one-host URL is unchanged and targets any session', () => {
    const t = parseDatabaseTargets('postgresql://postgres@127.0.0.1:5432/db');
    expect(t).toEqual({ hosts: [{ host: '127.0.0.1', port: 5432 }], attrs: 'any', url: 'postgresql://postgres@127.0.0.1:5432/db' });
  });

  it('accepts primary, any, read-only, standby and prefer-standby; refuses other values and bad hosts with a clear error', () => {
    for (const attrs of ['primary', 'any', 'read-only', 'standby', 'prefer-standby']) {
      expect(parseDatabaseTargets(`postgres://h1,h2/db?target_session_attrs=${attrs}`).attrs).toBe(attrs);
    }
    expect(() => parseDatabaseTargets('postgres://h1,h2/db?target_session_attrs=master')).toThrow(
      /target_session_attrs=master is not one of/,
    );
    expect(() => parseDatabaseTargets('postgres://h1,:5432/db')).toThrow(/host ":5432" is not host\[:port\]/);
    expect(() => parseDatabaseTargets('postgres://h1:99999/db')).toThrow(/port 99999 is out of range/);
  });

  it('the configuration refuses a bad multi-host URL at start without echoing it (it may hold a password)', () => {
    expect(() => loadConfig({ DATABASE_URL: 'postgres://u:pw@h1,h2/db?target_session_attrs=master' })).toThrow(
      /DATABASE_URL="\(hidden\)" is not valid: .*target_session_attrs=master/,
    );
    expect(() => loadConfig({ DATABASE_URL: 'postgres://u:pw@h1,h2/db?target_session_attrs=master' })).not.toThrow(/pw/);
    expect(loadConfig({ DATABASE_URL: 'postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-write' }).databaseUrl).toBe(
      'postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-write',
    );
  });

  it('no qualifying host is "database unavailable" (503 and retry), and the start-up error names every host', () => {
    const err = new NoSuitableHostError('no host of DATABASE_URL accepts a read-write session');
    expect(isUnavailable(err)).toBe(true);
    expect(unreachable(err, 'postgres://u:pw@h1:5432,h2:5433/db', 30_000).message).toMatch(
      /^PostgreSQL at h1:5432, h2:5433 \(DATABASE_URL\)/,
    );
    expect(unreachable(err, 'postgres://u:pw@h1:5432,h2:5433/db', 30_000).message).not.toMatch(/pw/);
  });

  it('rounds over the hosts back off from 100 ms to at most 5 s', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 20].map(roundBackoffMs)).toEqual([100, 200, 400, 800, 1600, 3200, 5000, 5000]);
  });
});

import { Writable } from 'node:stream';
import { DrizzleQueryError } from 'drizzle-orm/errors';
import { describe, expect, it } from 'vitest';
import { describeDbError, isUnavailable, QueryError, statementName } from '../../src/db/faults.ts';
import { createLogger, serializeError } from '../../src/logging.ts';
import { listenerBackoffMs } from '../../src/db/client.ts';
import { startupBackoffMs } from '../../src/db/wait.ts';

/** A node-postgres server error as the driver builds it. */
function pgError(code: string, message: string, detail?: string): Error {
  return Object.assign(new Error(message), { code, severity: 'ERROR', detail, length: 100 });
}

const SECRET_HASH = '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08';
const CIPHERTEXT = 'v1.AAAAsecretciphertextAAAA';

/** What drizzle throws for a failed query: every bound value in the message and `params`. */
function drizzleFailure(cause: Error): Error {
  return new DrizzleQueryError(
    'insert into "webhook_endpoints" ("id", "url", "secret_ciphertext", "metadata") values ($1, $2, $3, $4)',
    ['we_1', 'https://merchant.example/hooks', CIPHERTEXT, { order: 'ord_42' }],
    cause,
  );
}

describe('database failures in logs (issue 9: never the parameters)', () => {
  it('a failed drizzle query logs its statement name and SQLSTATE, not the SQL values', () => {
    const lines: string[] = [];
    const logger = createLogger(
      { logLevel: 'info' },
      new Writable({
        write: (c, _e, cb) => {
          lines.push(String(c));
          cb();
        },
      }),
    );
    const err = drizzleFailure(
      pgError(
        '23505',
        'duplicate key value violates unique constraint "webhook_endpoints_pkey"',
        `Key (key_hash)=(${SECRET_HASH}) already exists.`,
      ),
    );
    logger.error({ err }, 'failed');
    logger.error(err); // an Error as the first argument goes through the same serializer
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      const entry = JSON.parse(line) as { err: Record<string, unknown> };
      expect(entry.err).toMatchObject({ type: 'DatabaseError', statement: 'insert webhook_endpoints', code: '23505', unavailable: false });
      expect(entry.err.message).toBe("database statement 'insert webhook_endpoints' failed with SQLSTATE 23505");
      for (const leak of [SECRET_HASH, CIPHERTEXT, 'merchant.example', 'ord_42', 'params', 'Failed query', 'values ('])
        expect(line).not.toContain(leak);
    }
  });

  it('a hand-written statement is named by its caller; its server message with values is dropped', () => {
    const err = new QueryError('claim_due', pgError('22P02', 'invalid input syntax for type uuid: "sk_live_abc"'));
    const out = JSON.stringify(serializeError(err));
    expect(out).toContain('claim_due');
    expect(out).toContain('22P02');
    expect(out).not.toContain('sk_live_abc');
  });

  it("a lost connection says so, with the server's (value-free) reason", () => {
    const summary = describeDbError(drizzleFailure(pgError('57P01', 'terminating connection due to administrator command')))!;
    expect(summary).toMatchObject({ statement: 'insert webhook_endpoints', code: '57P01', unavailable: true });
    expect(summary.message).toBe('database unavailable: terminating connection due to administrator command');
  });

  it("other errors keep pino's standard shape", () => {
    const out = serializeError(new TypeError('boom')) as { type: string; message: string };
    expect(out).toMatchObject({ type: 'TypeError', message: 'boom' });
    expect(describeDbError(new TypeError('boom'))).toBeUndefined();
  });
});

describe('telling an outage from a bad statement', () => {
  it.each([
    ['57P01 admin shutdown', pgError('57P01', 'terminating connection due to administrator command')],
    ['57P03 starting up', pgError('57P03', 'the database system is starting up')],
    ['08006 connection failure', pgError('08006', 'connection failure')],
    ['53300 too many connections', pgError('53300', 'sorry, too many clients already')],
    ['ECONNREFUSED', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })],
    ['a dropped connection', new Error('Connection terminated unexpectedly')],
    ['a broken pooled client', new Error('Client has encountered a connection error and is not queryable')],
    ['an exhausted pool', new Error('timeout exceeded when trying to connect')],
    ['a missing unix socket', Object.assign(new Error('connect ENOENT /var/run/postgresql/.s.PGSQL.5432'), { code: 'ENOENT' })],
  ])('%s is "unavailable", also when wrapped by drizzle', (_name, err) => {
    expect(isUnavailable(err)).toBe(true);
    expect(isUnavailable(drizzleFailure(err))).toBe(true);
  });

  it.each([
    ['23505 unique violation', pgError('23505', 'duplicate key')],
    ['22P02 bad input', pgError('22P02', 'invalid input syntax')],
    ['42P01 missing table', pgError('42P01', 'relation does not exist')],
    ['a file that is not there', Object.assign(new Error('ENOENT: no such file'), { code: 'ENOENT' })],
  ])('%s is not', (_name, err) => {
    expect(isUnavailable(err)).toBe(false);
  });
});

describe('statement names', () => {
  it.each([
    ['select "id", "platform_id" from "api_keys" where "api_keys"."key_hash" = $1', 'select api_keys'],
    ['insert into "events" ("id") values ($1)', 'insert events'],
    ['update "webhook_deliveries" set "state" = $1', 'update webhook_deliveries'],
    ['delete from "idempotency_keys" where x = $1', 'delete idempotency_keys'],
    ['\n  WITH ev AS (\n INSERT INTO events (id) VALUES ($1)', 'with events'],
    ['SELECT 1', 'select'],
  ])('%j -> %s', (sqlText, name) => {
    expect(statementName(sqlText)).toBe(name);
  });
});

describe('backoff', () => {
  it('the start-up wait doubles from 250 ms to at most 5 s', () => {
    expect([0, 1, 2, 3, 4, 5, 20].map(startupBackoffMs)).toEqual([250, 500, 1000, 2000, 4000, 5000, 5000]);
  });

  it('listener reconnects back off from ~100 ms to at most 5 s, with jitter', () => {
    for (let i = 0; i < 50; i++) {
      expect(listenerBackoffMs(0)).toBeGreaterThanOrEqual(50);
      expect(listenerBackoffMs(0)).toBeLessThanOrEqual(100);
      expect(listenerBackoffMs(30)).toBeGreaterThanOrEqual(2500);
      expect(listenerBackoffMs(30)).toBeLessThanOrEqual(5000);
    }
  });
});

describe('request log lines', () => {
  it('carry the path, never the query string', () => {
    const lines: string[] = [];
    const logger = createLogger(
      { logLevel: 'info' },
      new Writable({
        write: (c, _e, cb) => {
          lines.push(String(c));
          cb();
        },
      }),
    );
    logger.info(
      {
        req: {
          method: 'GET',
          url: '/api/v1/webhook_deliveries?starting_after=del_secret&limit=5',
          host: 'h',
          ip: '127.0.0.1',
          socket: { remotePort: 5 },
        },
      },
      'incoming request',
    );
    const entry = JSON.parse(lines[0]!) as { req: { url: string; method: string } };
    expect(entry.req).toMatchObject({ method: 'GET', url: '/api/v1/webhook_deliveries' });
    expect(lines[0]).not.toContain('del_secret');
  });
});

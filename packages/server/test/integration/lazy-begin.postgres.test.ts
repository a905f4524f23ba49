import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/db/client.ts';
import { migrate } from '../../src/db/migrate.ts';
import { publishEvent } from '../../src/events/publish.ts';
import { createPgDatabase } from '../helpers/database.ts';
import { pgProxy, ServerMessages, typeOf, type PgProxy } from '../helpers/pg-proxy.ts';
import { webhookEndpoints } from '../../src/db/schema.ts';
import { createPlatform } from '../../src/tenancy/platforms.ts';
import { payment } from '../helpers/publish.ts';

/**
 * A transaction's BEGIN travels with its first statement (db/lazy-begin.ts). Counted from the
 * outside: a proxy in front of the real PostgreSQL counts the ReadyForQuery messages the server
 * sends on each connection, one per round trip the driver waits for.
 */
interface CountingProxy extends PgProxy {
  /** ReadyForQuery messages per connection, in the order the connections were opened. */
  readyCounts(): number[];
}

async function countingProxy(databaseUrl: string): Promise<CountingProxy> {
  const counts: number[] = [];
  const proxy = await pgProxy(databaseUrl, (client, upstream, index) => {
    counts[index] = 0;
    const messages = new ServerMessages();
    upstream.on('data', (chunk: Buffer) => {
      client.write(chunk);
      for (const m of messages.push(chunk)) if (typeOf(m) === 'Z') counts[index]!++;
    });
  });
  return { ...proxy, readyCounts: () => [...counts] };
}

let scratch: { url: string; drop(): Promise<void> };
let proxy: CountingProxy;
let database: Database;

beforeAll(async () => {
  scratch = await createPgDatabase();
  proxy = await countingProxy(scratch.url);
  // One pooled connection, so every statement below meets the same one.
  database = await openDatabase({ databaseUrl: proxy.url, poolSize: 1 });
  await migrate(database);
  await database.query('CREATE TABLE lazy_begin_probe (n int PRIMARY KEY)', []);
});

afterAll(async () => {
  await database?.close();
  await proxy?.close();
  await scratch?.drop();
});

beforeEach(async () => {
  await database.query('TRUNCATE lazy_begin_probe', []);
});

/** Round trips the pool's connection (the first one opened) made while `fn` ran. */
async function roundTrips(fn: () => Promise<unknown>): Promise<number> {
  const before = proxy.readyCounts()[0] ?? 0;
  await fn();
  return (proxy.readyCounts()[0] ?? 0) - before;
}

/** The rows of a drizzle `execute` on node-postgres. */
const rowsOf = <T>(result: unknown): T[] => (result as { rows: T[] }).rows;

const inTransaction = async (): Promise<boolean> => {
  const [row] = await database.query<{ open: boolean }>('SELECT now() <> statement_timestamp() AS open', []);
  return row!.open;
};

describe('a transaction sends its BEGIN with its first statement (issue 26: one-event publishing)', () => {
  it('BEGIN, one statement and COMMIT take two round trips, and the statements share one transaction', async () => {
    const ids: string[] = [];
    const trips = await roundTrips(() =>
      database.db.transaction(async (tx) => {
        const a = await tx.execute(sql`INSERT INTO lazy_begin_probe VALUES (${1}) RETURNING txid_current()::text AS x`);
        ids.push(rowsOf<{ x: string }>(a)[0]!.x);
      }),
    );
    expect(trips).toBe(2);
    const two = await roundTrips(() =>
      database.db.transaction(async (tx) => {
        for (const n of [2, 3]) {
          const r = await tx.execute(sql`INSERT INTO lazy_begin_probe VALUES (${n}) RETURNING txid_current()::text AS x`);
          ids.push(rowsOf<{ x: string }>(r)[0]!.x);
        }
      }),
    );
    expect(two).toBe(3);
    // Statements 2 and 3 ran in one transaction (one transaction id), a different one from 1's.
    expect(ids[1]).toBe(ids[2]);
    expect(ids[0]).not.toBe(ids[1]);
    const rows = await database.query<{ n: number }>('SELECT n FROM lazy_begin_probe ORDER BY n', []);
    expect(rows.map((r) => r.n)).toEqual([1, 2, 3]);
  });

  it('a transaction that throws after its first statement commits nothing, and the connection is left outside any transaction', async () => {
    const err = await database.db
      .transaction(async (tx) => {
        await tx.execute(sql`INSERT INTO lazy_begin_probe VALUES (${10})`);
        throw new Error('the caller changed its mind');
      })
      .catch((e: unknown) => e);
    expect(String(err)).toContain('changed its mind');
    expect(await database.query('SELECT n FROM lazy_begin_probe', [])).toEqual([]);
    expect(await inTransaction()).toBe(false);
  });

  it('a failing first statement rejects with the database error and leaves nothing open or written', async () => {
    await database.query('INSERT INTO lazy_begin_probe VALUES (20)', []);
    const err = await database.db
      .transaction(async (tx) => {
        await tx.execute(sql`INSERT INTO lazy_begin_probe VALUES (${21}), (${20})`); // 20 is taken
      })
      .catch((e: unknown) => e);
    expect(String((err as { cause?: unknown }).cause ?? err)).toMatch(/duplicate key/);
    expect(await inTransaction()).toBe(false);
    const rows = await database.query<{ n: number }>('SELECT n FROM lazy_begin_probe ORDER BY n', []);
    expect(rows.map((r) => r.n)).toEqual([20]);
  });

  it('a transaction with no statement sends nothing', async () => {
    const trips = await roundTrips(() => database.db.transaction(async () => 'nothing to do'));
    expect(trips).toBe(0);
    expect(await inTransaction()).toBe(false);
  });

  it('a first statement that cannot share the write (no parameters, a savepoint) still runs inside the transaction', async () => {
    await database.db.transaction(async (tx) => {
      await tx.execute(sql.raw('INSERT INTO lazy_begin_probe VALUES (30)'));
      await tx.transaction(async (inner) => {
        await inner.execute(sql`INSERT INTO lazy_begin_probe VALUES (${31})`);
      });
      const [row] = rowsOf<{ open: boolean }>(await tx.execute(sql.raw('SELECT now() <> statement_timestamp() AS open')));
      expect(row!.open).toBe(true);
    });
    const err = await database.db
      .transaction(async (tx) => {
        await tx.execute(sql.raw('INSERT INTO lazy_begin_probe VALUES (32)'));
        throw new Error('roll back');
      })
      .catch((e: unknown) => e);
    expect(String(err)).toContain('roll back');
    const rows = await database.query<{ n: number }>('SELECT n FROM lazy_begin_probe ORDER BY n', []);
    expect(rows.map((r) => r.n)).toEqual([30, 31]);
  });

  it('publishEvent in its own transaction: two round trips once its statement is prepared, and the event is written', async () => {
    const p = await createPlatform(database.db, 'lazy begin', { passwordCost: { N: 1024, r: 8, p: 1 } });
    const merchantId = p.merchant_id;
    await database.db.insert(webhookEndpoints).values({
      id: 'we_lazy_begin',
      platformId: p.platform_id,
      environment: 'sandbox',
      url: 'http://127.0.0.1:9/hook',
      enabledEvents: ['*'],
      secretCiphertext: 'unused here',
      status: 'enabled',
    } as never);
    const publish = (n: number) =>
      database.db.transaction((tx) =>
        publishEvent(
          tx,
          { type: 'payment.succeeded', merchantId, environment: 'sandbox', object: payment({ id: `pay_lazy_${n}` }) },
          new Date(),
        ),
      );
    await publish(0); // prepares `publish_event_plain` on the connection (its first use sends BEGIN alone)
    const trips = await roundTrips(() => publish(1));
    expect(trips).toBe(2);
    const [row] = await database.query<{ n: number }>('SELECT count(*)::int AS n FROM delivery_queue', []);
    expect(row!.n).toBe(2);
  });
});

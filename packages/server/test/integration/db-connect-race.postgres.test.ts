import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/db/client.ts';
import { isUnavailable } from '../../src/db/faults.ts';
import { createPgDatabase } from '../helpers/database.ts';
import { pgProxy, ServerMessages, typeOf } from '../helpers/pg-proxy.ts';

/**
 * A PostgreSQL restart can end a connection in the very socket read that completes its start-up:
 * ReadyForQuery, then FATAL 57P01 ("terminating connection due to administrator command"). The
 * driver parses both at once, before the pool has attached its error listener to the new client;
 * a CI run of `payhooks serve` under a restart crashed on exactly that. A proxy in front of the
 * real server appends that FATAL to the start-up's ReadyForQuery, in one write, on the
 * connections it is told to.
 */
interface FatalProxy {
  url: string;
  /** The next `n` connections are ended right after their start-up completes. */
  arm(n: number): void;
  close(): Promise<void>;
}

function errorResponse(code: string, message: string): Buffer {
  const fields = Buffer.concat([Buffer.from(`SFATAL\0VFATAL\0C${code}\0M${message}\0`, 'utf8'), Buffer.from([0])]);
  const head = Buffer.alloc(5);
  head.write('E', 0, 'latin1');
  head.writeInt32BE(fields.length + 4, 1);
  return Buffer.concat([head, fields]);
}

async function fatalProxy(databaseUrl: string): Promise<FatalProxy> {
  let armed = 0;
  const proxy = await pgProxy(databaseUrl, (client, upstream) => {
    const kill = armed > 0;
    if (kill) armed--;
    if (!kill) {
      upstream.pipe(client);
      return;
    }
    // Server -> client, message by message, until the first ReadyForQuery, which goes out
    // together with the FATAL.
    const messages = new ServerMessages();
    const held: Buffer[] = [];
    upstream.on('data', (chunk: Buffer) => {
      for (const m of messages.push(chunk)) {
        held.push(m);
        if (typeOf(m) === 'Z') {
          client.end(Buffer.concat([...held, errorResponse('57P01', 'terminating connection due to administrator command')]));
          upstream.destroy();
          return;
        }
      }
    });
  });
  return {
    ...proxy,
    arm(n) {
      armed = n;
    },
  };
}

let scratch: { url: string; drop(): Promise<void> };
let proxy: FatalProxy;
let database: Database;

beforeAll(async () => {
  scratch = await createPgDatabase();
  proxy = await fatalProxy(scratch.url);
  database = await openDatabase({ databaseUrl: proxy.url, poolSize: 2 });
});

afterAll(async () => {
  await database?.close();
  await proxy?.close();
  await scratch?.drop();
});

describe('a connection the server ends as it opens (issue 9: database faults)', () => {
  it('fails the statement as "database unavailable" instead of crashing the process, and the next connection serves', async () => {
    const uncaught: unknown[] = [];
    const record = (err: unknown) => uncaught.push(err);
    process.on('uncaughtException', record);
    try {
      proxy.arm(3);
      for (let i = 0; i < 3; i++) {
        const err = await database.query('SELECT 1 AS one', []).then(
          () => null,
          (e: unknown) => e,
        );
        // Each armed connection is refused to its statement as an outage (503 to an API caller).
        expect(err, `statement ${i + 1}`).not.toBeNull();
        expect(isUnavailable(err), String(err)).toBe(true);
      }
      // The pool dropped those clients; a fresh connection answers.
      const rows = await database.query<{ one: number }>('SELECT 1 AS one', []);
      expect(rows).toEqual([{ one: 1 }]);
      // Let any event the driver emitted late surface before looking.
      await new Promise((r) => setImmediate(r));
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', record);
    }
  });
});

import pg from 'pg';

/**
 * A transaction's BEGIN sent in the same write as its first statement, instead of one round trip
 * of its own.
 *
 * Why: on this kind of machine a round trip to PostgreSQL over TCP costs both sides more CPU
 * than a small statement does (the sender's write runs the loopback's receive path, the
 * receiver wakes), and a one-event publish was three of them: BEGIN, the statement, COMMIT.
 * Measured with bench/publish-cpu.ts: bench/investigations/cpu-per-delivery.md, "Sending BEGIN
 * with the first statement".
 *
 * How: drizzle opens every transaction with the text `begin` and awaits it. A pooled connection
 * (db/client.ts) answers that `begin` at once without sending it, and sends it in front of the
 * transaction's first statement as Parse/Bind/Execute messages in the extended protocol, before
 * that statement's own messages and its one Sync. PostgreSQL runs them in order; an error in
 * BEGIN skips the statement (everything up to the Sync is skipped after an error), so the
 * statement never runs outside the transaction. A transaction that ends before any statement
 * sends nothing at all. Where the first statement can't share the write (a simple-protocol
 * query, or a named statement this connection has not prepared yet, whose ParseComplete the
 * driver would confuse with BEGIN's), BEGIN is sent first as before.
 */
export class LazyBegin {
  private pending = false;

  /**
   * Runs `args` (the arguments of `pg.Client.query`) on `client` through `send` (the driver's
   * own `query`), with a pending BEGIN in front when there is one. Returns undefined when the
   * query is not one this handles: the caller sends it as usual.
   */
  query(client: pg.Client, send: (...args: unknown[]) => unknown, args: unknown[]): Promise<unknown> | undefined {
    const [config, values, callback] = args;
    const text = typeof config === 'string' ? config : (config as { text?: unknown } | null)?.text;
    // Every statement passes here (the worker's claims and records too): most leave at once.
    if (!this.pending && text !== 'begin') return undefined;
    // The promise form, which drizzle uses; callbacks and custom submittables go through as they are.
    const promiseForm =
      typeof values !== 'function' &&
      typeof callback !== 'function' &&
      (typeof config === 'string' ||
        (config !== null && typeof config === 'object' && typeof (config as { submit?: unknown }).submit !== 'function'));
    if (!this.pending) {
      if (!promiseForm) return undefined;
      this.pending = true;
      return Promise.resolve(answer('BEGIN'));
    }
    this.pending = false;
    // Sent after a BEGIN that failed, such a query would run outside the transaction; nothing
    // here issues one inside a transaction, so it is refused rather than risked.
    if (!promiseForm) throw new Error('A transaction opened by drizzle continued with a callback-style query; use the promise form.');
    // Nothing was sent, so there is nothing to end.
    if (text === 'commit' || text === 'rollback') return Promise.resolve(answer(text.toUpperCase()));
    const query = new BeginFirstQuery(config as pg.QueryConfig | string, values as unknown[] | undefined);
    const connection = (client as unknown as { connection: DriverConnection }).connection;
    if (!query.canShareWrite(connection)) return (send('BEGIN') as Promise<unknown>).then(() => send(config, values));
    return new Promise((resolve, reject) => {
      query.callback = (err: Error | null, result: unknown) => (err ? reject(err) : resolve(result));
      send(query);
    });
  }

  /** Forgets a pending BEGIN (the connection is handed to someone else). */
  reset(): void {
    this.pending = false;
  }
}

/** What drizzle receives for a statement that was not sent (it reads nothing from it). */
function answer(command: string): pg.QueryResult {
  return { command, rowCount: null, oid: 0, rows: [], fields: [] } as unknown as pg.QueryResult;
}

/** The parts of node-postgres' connection (pg/lib/connection.js) used here. */
interface DriverConnection {
  stream: { cork?: () => void; uncork?: () => void };
  parse(q: { text: string }): void;
  bind(c: object): void;
  execute(c: object): void;
}

/** The parts of `pg.Query` (pg/lib/query.js) used here; @types/pg leaves them out. */
interface QueryInternals {
  name?: string;
  requiresPreparation(): boolean;
  hasBeenParsed(connection: DriverConnection): boolean;
  submit(connection: DriverConnection): Error | null;
  handleCommandComplete(msg: unknown, connection: DriverConnection): void;
}

const Query = pg.Query as unknown as new (config: pg.QueryConfig | string, values?: unknown[]) => QueryInternals;

/** The first statement of a transaction, with the transaction's BEGIN written in front of it. */
class BeginFirstQuery extends Query {
  callback: ((err: Error | null, result: unknown) => void) | undefined;
  private beginAnswered = false;

  /**
   * Extended protocol only (a simple Query message would end the batch with a ReadyForQuery of
   * its own), and a named statement only once prepared here: the driver marks the active query's
   * name prepared on the first ParseComplete it sees, which would be BEGIN's.
   */
  canShareWrite(connection: DriverConnection): boolean {
    return this.requiresPreparation() && (!this.name || this.hasBeenParsed(connection));
  }

  override submit(connection: DriverConnection): Error | null {
    connection.stream.cork?.();
    try {
      connection.parse({ text: 'BEGIN' });
      connection.bind({});
      connection.execute({});
      return super.submit(connection);
    } finally {
      connection.stream.uncork?.();
    }
  }

  override handleCommandComplete(msg: unknown, connection: DriverConnection): void {
    // The first CommandComplete is BEGIN's; the statement's result starts after it.
    if (!this.beginAnswered) {
      this.beginAnswered = true;
      return;
    }
    super.handleCommandComplete(msg, connection);
  }
}

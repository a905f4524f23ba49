import type { Tx } from './client.ts';

/**
 * Wake-ups sent after a transaction commits instead of inside it.
 *
 * Why: a transaction that NOTIFYs takes PostgreSQL's single notification lock at commit and holds
 * it through its commit's WAL flush, so every notifying commit waits for the one before it: no
 * group commit, and one publisher descheduled while holding the lock stalls all the others,
 * which then commit together and hand the workers a burst. Measured with pgbench, 8 clients each
 * inserting a row per transaction: 5,600 commits/s without a NOTIFY, 2,600 with one in each
 * transaction, 4,700 with the NOTIFYs sent beside them by one connection (docs/decisions/wake-ups-after-commit.md).
 *
 * So a top-level transaction on PostgreSQL (`database.db.transaction`, see db/client.ts) carries
 * a set of channels to wake; `notifyAfterCommit` adds one, and once the transaction has
 * committed the database sends one NOTIFY per channel from a connection of its own, as a
 * transaction with `synchronous_commit` off: losing that NOTIFY in a crash loses nothing but the
 * wake-up, and workers poll as a fallback (`PAYHOOKS_POLL_INTERVAL`).
 *
 * Where no such set exists (PGlite, a savepoint opened with `tx.transaction`), `wakesAfterCommit`
 * is false and the caller NOTIFYs inside its transaction as before.
 */
const pending = new WeakMap<Tx, Set<string>>();

/** Marks `tx` as one whose wake-ups are sent after its commit (db/client.ts only). */
export function deferWakeUps(tx: Tx): Set<string> {
  const channels = new Set<string>();
  pending.set(tx, channels);
  return channels;
}

/** True when `tx` sends its wake-ups after commit: then `notifyAfterCommit` will be honoured. */
export function wakesAfterCommit(tx: Tx): boolean {
  return pending.has(tx);
}

/**
 * Asks for a NOTIFY on `channel` once `tx` has committed (none if it rolls back). Only for a `tx`
 * that `wakesAfterCommit`; any other must NOTIFY inside the transaction.
 */
export function notifyAfterCommit(tx: Tx, channel: string): void {
  pending.get(tx)?.add(channel);
}

/**
 * Sends the after-commit NOTIFYs of one process, at most one at a time per channel.
 *
 * A commit that lands while a NOTIFY for its channel is on the wire asks for one more, sent
 * when that one is done; any number of such commits share it. That keeps the guarantee a
 * NOTIFY inside the transaction gave: for every commit, some NOTIFY is sent after it, so a worker
 * woken by it claims with a snapshot that sees the committed rows. Under load this sends about
 * one NOTIFY per round trip however many publishes commit, instead of one per publish.
 */
export class CommitNotifier {
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();

  constructor(
    private readonly send: (channel: string) => Promise<unknown>,
    private readonly onError: (err: unknown) => void,
  ) {}

  notify(channel: string): void {
    if (this.inFlight.has(channel)) {
      this.again.add(channel);
      return;
    }
    this.inFlight.set(channel, this.run(channel));
  }

  private async run(channel: string): Promise<void> {
    try {
      do {
        this.again.delete(channel);
        await this.send(channel).catch(this.onError);
      } while (this.again.has(channel));
    } finally {
      this.inFlight.delete(channel);
    }
  }

  /** Resolves when nothing is being sent (before closing the pool). */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all(this.inFlight.values());
  }
}

/**
 * Work to run once a transaction has committed (the audit trail's log lines: an entry is logged
 * only when it exists). Every top-level `db.transaction` on either backend collects them
 * (db/client.ts); anything else (the database handle itself, a savepoint) has nothing to wait
 * for, so `fn` runs at once.
 */
const commitCallbacks = new WeakMap<object, (() => void)[]>();

/** Marks `tx` as one whose `runAfterCommit` work waits for its commit; returns the list (db/client.ts only). */
export function collectAfterCommit(tx: object): (() => void)[] {
  const list: (() => void)[] = [];
  commitCallbacks.set(tx, list);
  return list;
}

export function runAfterCommit(q: object, fn: () => void): void {
  const list = commitCallbacks.get(q);
  if (list) list.push(fn);
  else fn();
}

/** Runs the collected work of a committed transaction; one failing never stops the others. */
export function flushAfterCommit(list: (() => void)[] | undefined): void {
  for (const fn of list ?? []) {
    try {
      fn();
    } catch {
      // A log line that could not be written must not turn a committed change into an error.
    }
  }
}

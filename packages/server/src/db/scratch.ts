import type { Tx } from './client.ts';

/**
 * State that a layer above keeps per database handle rather than per process: the publish
 * statement's fan-out hints (events/publish.ts), say. Each `openDatabase` makes one, so two
 * services in one process (tests, a fleet in one process) never share it, and it goes with the
 * handle. Entries are made on first use under a key their owner holds.
 */
export class DatabaseScratch {
  private readonly entries = new Map<symbol, unknown>();

  get<T>(key: symbol, make: () => T): T {
    let value = this.entries.get(key) as T | undefined;
    if (value === undefined) {
      value = make();
      this.entries.set(key, value);
    }
    return value;
  }
}

/** The scratch of the handle a top-level transaction was opened on (db/client.ts registers it). */
const scratchByTx = new WeakMap<Tx, DatabaseScratch>();

/** Registers `tx`'s handle (db/client.ts only). */
export function attachScratch(tx: Tx, scratch: DatabaseScratch): void {
  scratchByTx.set(tx, scratch);
}

/** The scratch of `tx`'s handle; undefined for a savepoint (`tx.transaction`) or a foreign transaction. */
export function scratchOf(tx: Tx): DatabaseScratch | undefined {
  return scratchByTx.get(tx);
}

/**
 * The receiver's tables: what every receiver library (the Node receiver SDK and sdks/<language>/)
 * creates in the merchant's PostgreSQL to remember processed event ids and the work they carry
 * (deduplication on the `evt_` id, spec 6.2.1), and to credit each payment once (spec 6.2.3).
 * Written once here; the other languages' copies are generated from it (`npm run generate`,
 * packages/contract/scripts/generate.ts), so a receiver written in one language and a receiver
 * written in another can share one database.
 */

/** Default name of the inbox table: one row per event id (seen, its work, its state). */
export const RECEIVER_EVENTS_TABLE = 'payhooks_events';

/** Default name of the table of credited payment ids (credit once). */
export const RECEIVER_CREDITS_TABLE = 'payhooks_credits';

/**
 * The key of the advisory lock every library takes while it creates the tables: concurrent
 * `CREATE TABLE IF NOT EXISTS` can still collide, whatever language runs it.
 */
export const RECEIVER_MIGRATION_LOCK = 'payhooks_receiver_migrate';

/**
 * The states of an inbox row: `processing` (leased to one worker), `pending` (waiting for a
 * retry), `done` (kept for the deduplication window, then purged), `failed` (every attempt failed;
 * kept until requeued or replayed).
 */
export const RECEIVER_EVENT_STATES = ['processing', 'pending', 'done', 'failed'] as const;

export type ReceiverEventState = (typeof RECEIVER_EVENT_STATES)[number];

export interface ReceiverColumn {
  readonly name: string;
  /** The column's type and constraints, as written in `CREATE TABLE`. */
  readonly definition: string;
}

const stateList = RECEIVER_EVENT_STATES.map((s) => `'${s}'`).join(', ');

/** The inbox table's columns, in order. */
export const RECEIVER_EVENTS_COLUMNS: readonly ReceiverColumn[] = [
  { name: 'event_id', definition: 'text PRIMARY KEY' },
  { name: 'event_type', definition: 'text NOT NULL' },
  { name: 'state', definition: `text NOT NULL CHECK (state IN (${stateList}))` },
  { name: 'payload', definition: 'jsonb' },
  { name: 'attempts', definition: 'integer NOT NULL DEFAULT 0' },
  { name: 'token', definition: 'text' },
  { name: 'locked_until', definition: 'timestamptz' },
  { name: 'next_attempt_at', definition: 'timestamptz' },
  { name: 'last_error', definition: 'text' },
  { name: 'received_at', definition: 'timestamptz NOT NULL DEFAULT now()' },
  { name: 'updated_at', definition: 'timestamptz NOT NULL DEFAULT now()' },
];

/** The credits table's columns, in order. */
export const RECEIVER_CREDITS_COLUMNS: readonly ReceiverColumn[] = [
  { name: 'payment_id', definition: 'text PRIMARY KEY' },
  { name: 'credited_at', definition: 'timestamptz NOT NULL DEFAULT now()' },
];

/**
 * The placeholders of {@link RECEIVER_TABLES_DDL_TEMPLATE}: the two tables' SQL names (quoted,
 * possibly `"schema"."table"`) and the prefix of the inbox's index names (the table's own name,
 * unquoted).
 */
export const RECEIVER_DDL_PLACEHOLDERS = {
  eventsTable: '{events_table}',
  creditsTable: '{credits_table}',
  indexPrefix: '{index_prefix}',
} as const;

function createTable(name: string, columns: readonly ReceiverColumn[]): string {
  const width = Math.max(...columns.map((c) => c.name.length)) + 1;
  const lines = columns.map((c) => `  ${c.name.padEnd(width)}${c.definition}`);
  return `CREATE TABLE IF NOT EXISTS ${name} (\n${lines.join(',\n')}\n);`;
}

const P = RECEIVER_DDL_PLACEHOLDERS;

/**
 * The DDL that creates the receiver's tables (idempotent: `IF NOT EXISTS` throughout), with
 * {@link RECEIVER_DDL_PLACEHOLDERS} where the names go. Several statements, no trailing newline.
 */
export const RECEIVER_TABLES_DDL_TEMPLATE = [
  createTable(P.eventsTable, RECEIVER_EVENTS_COLUMNS),
  // Finding due retries and expired leases; purging done ids.
  `CREATE INDEX IF NOT EXISTS "${P.indexPrefix}_due_idx" ON ${P.eventsTable} ((COALESCE(next_attempt_at, locked_until))) WHERE state IN ('pending', 'processing');`,
  `CREATE INDEX IF NOT EXISTS "${P.indexPrefix}_done_idx" ON ${P.eventsTable} (updated_at) WHERE state = 'done';`,
  createTable(P.creditsTable, RECEIVER_CREDITS_COLUMNS),
].join('\n');

export interface ReceiverTableNames {
  /** The inbox table's SQL name, already quoted: `"payhooks_events"` or `"schema"."table"`. */
  eventsTable: string;
  /** The credits table's SQL name, already quoted. */
  creditsTable: string;
  /** The inbox table's own name, unquoted, without its schema (index names start with it). */
  indexPrefix: string;
}

/** The DDL for the given (already validated and quoted) names; the defaults without them. */
export function receiverTablesDdl(names?: ReceiverTableNames): string {
  const n = names ?? {
    eventsTable: `"${RECEIVER_EVENTS_TABLE}"`,
    creditsTable: `"${RECEIVER_CREDITS_TABLE}"`,
    indexPrefix: RECEIVER_EVENTS_TABLE,
  };
  return RECEIVER_TABLES_DDL_TEMPLATE.replaceAll(P.eventsTable, n.eventsTable)
    .replaceAll(P.creditsTable, n.creditsTable)
    .replaceAll(P.indexPrefix, n.indexPrefix);
}

/**
 * The delivery log's and the events list's reads on a stored history, and which index each one
 * uses: every filter's first page and a page 50 deep (100 a page), timed (median of 5), then
 * `pg_stat_user_indexes` summed over the weekly partitions, with each index's size.
 *
 *   npx tsx bench/growth/seed.ts postgres://postgres@127.0.0.1:5432/history 1000000   # once
 *   HISTORY_URL=postgres://postgres@127.0.0.1:5432/history npx tsx --conditions=@payhooks/source bench/delivery-log-reads.ts
 *
 * Counters are reset (`pg_stat_reset()`, this database only) after the setup's own reads.
 */
import pg from 'pg';
import { openDatabase } from '../packages/server/src/db/client.ts';
import { DeliveryService } from '../packages/server/src/delivery/service.ts';
import { EventService } from '../packages/server/src/events/service.ts';
import type { Scope } from '../packages/server/src/scope.ts';

const HISTORY_URL = process.env.HISTORY_URL;
if (!HISTORY_URL) throw new Error('HISTORY_URL: a database seeded by bench/growth/seed.ts');
const PLATFORM = process.env.PLATFORM ?? 'plt_growth01';
const LIMIT = 100;
const DEPTH = 50;

const c = new pg.Client({ connectionString: HISTORY_URL });
await c.connect();
const database = await openDatabase({ databaseUrl: HISTORY_URL, poolSize: 2 });
const deliveries = new DeliveryService({
  database,
  clock: { now: () => new Date() } as never,
  secrets: null as never,
  sender: null as never,
  audit: null as never,
  leaseMs: 60_000,
});
const events = new EventService({ db: database.db });
const scope: Scope = { platformId: PLATFORM, environment: 'live', actor: { type: 'operator', id: 'bench' } } as Scope;

const { rows: eps } = await c.query<{ endpoint_id: string; n: string }>(
  `SELECT endpoint_id, count(*) AS n FROM webhook_deliveries WHERE platform_id = $1 AND environment = 'live' GROUP BY 1 ORDER BY 2 DESC`,
  [PLATFORM],
);
const { rows: ev } = await c.query<{ id: string; object_id: string }>(
  `SELECT id, object_id FROM events WHERE platform_id = $1 AND environment = 'live' ORDER BY created_at DESC LIMIT 1 OFFSET 5000`,
  [PLATFORM],
);
// Counters from here: the setup's own reads above (every delivery of the Platform) are not the log's.
if (process.env.RESET !== '0') await c.query('SELECT pg_stat_reset()');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const timed = async (fn: () => Promise<unknown>) => {
  const ms: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    await fn();
    ms.push(performance.now() - t0);
  }
  return Number(median(ms).toFixed(2));
};

type Filters = Omit<Parameters<DeliveryService['list']>[1], 'limit' | 'startingAfter'>;
const week = 7 * 86_400_000;
const logs: Array<[string, Filters]> = [
  ['whole log', {}],
  [`biggest endpoint (${eps[0]!.n})`, { endpointId: eps[0]!.endpoint_id }],
  [`smallest endpoint (${eps.at(-1)!.n})`, { endpointId: eps.at(-1)!.endpoint_id }],
  ['state=delivered', { state: 'delivered' }],
  ['state=exhausted', { state: 'exhausted' }],
  ['type=payment.succeeded', { type: 'payment.succeeded' }],
  ['type=payment.failed', { type: 'payment.failed' }],
  ['created, the week before last', { createdGte: new Date(Date.now() - 3 * week), createdLt: new Date(Date.now() - 2 * week) }],
];
const out: Record<string, unknown>[] = [];
for (const [name, filters] of logs) {
  let after: string | undefined;
  for (let p = 0; p < DEPTH; p++) {
    const page = await deliveries.list(scope, { ...filters, limit: LIMIT, startingAfter: after });
    if (!page.has_more) break;
    after = page.data.at(-1)!.id;
  }
  out.push({
    log: name,
    first_ms: await timed(() => deliveries.list(scope, { ...filters, limit: LIMIT })),
    deep_ms: await timed(() => deliveries.list(scope, { ...filters, limit: LIMIT, startingAfter: after })),
  });
}
out.push({ log: 'event_id', first_ms: await timed(() => deliveries.list(scope, { limit: LIMIT, eventId: ev[0]!.id })) });
out.push({ log: 'object_id (portal)', first_ms: await timed(() => deliveries.list(scope, { limit: LIMIT, objectId: ev[0]!.object_id })) });
for (const [name, filters] of [
  ['events: all', {}],
  ['events: delivery_success=false', { deliverySuccess: false }],
  ['events: delivery_success=true', { deliverySuccess: true }],
  ['events: type', { type: 'payment.failed' }],
] as const)
  out.push({ log: name, first_ms: await timed(() => events.list(scope, { limit: LIMIT, ...filters })) });
out.push({
  log: 'backlog gauge',
  first_ms: await timed(() =>
    database.query(`SELECT state, count(*) AS n FROM webhook_deliveries WHERE state IN ('pending', 'failed_retrying') GROUP BY state`, []),
  ),
});
for (const r of out) console.log(JSON.stringify(r));

await new Promise((r) => setTimeout(r, 1000)); // statistics reach the collector at the end of each transaction, shortly
const { rows } = await c.query(`
  SELECT coalesce(parent.relname, i.relname) AS index, sum(s.idx_scan)::bigint AS scans, sum(s.idx_tup_read)::bigint AS entries_read,
         pg_size_pretty(sum(pg_relation_size(s.indexrelid))) AS size
  FROM pg_stat_user_indexes s JOIN pg_class i ON i.oid = s.indexrelid
  LEFT JOIN pg_inherits h ON h.inhrelid = s.indexrelid LEFT JOIN pg_class parent ON parent.oid = h.inhparent
  WHERE s.relname ~ '^(webhook_deliveries|events|delivery_attempts)(_|$)'
  GROUP BY 1 ORDER BY 1`);
console.table(rows);
const { rows: sizes } = await c.query(`
  SELECT t AS table, pg_size_pretty(sum(pg_table_size(h.inhrelid))) AS heap, pg_size_pretty(sum(pg_indexes_size(h.inhrelid))) AS indexes
  FROM unnest(ARRAY['webhook_deliveries', 'events', 'delivery_attempts']) t JOIN pg_inherits h ON h.inhparent = t::regclass GROUP BY t`);
console.table(sizes);
await database.close();
await c.end();

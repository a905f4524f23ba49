import { statement } from '../db/statement.ts';
import { WAKE_CHANNEL } from '../delivery/wake-channel.ts';

/**
 * The publish statements, each written once (events/publish.ts runs them; the SQL function
 * `payhooks.publish_event` runs `PUBLISH.one`, generated into db/migrations/R_publish_event.sql
 * by scripts/generate-sql-functions.ts).
 */

/**
 * The values of a publish statement: one event's (`PUBLISH.one`) or arrays of every event's,
 * one element per event (`PUBLISH.many`). The plain statements take the ones they use.
 */
export interface PublishParams {
  merchant_id: string | string[];
  environment: string | string[];
  type: string | string[];
  /** Idempotency keys (null: none). */
  idem?: string | null | (string | null)[];
  event_id: string | string[];
  /** The envelope as sent, byte for byte. */
  body: string | string[];
  /** The resource's id (`data.object.id`; null: none), for per-object ordering. */
  object_id: string | null | (string | null)[];
  /** A portal test event's one endpoint (null: the subscribed ones; '': none). */
  only_endpoint?: string | null | (string | null)[];
  /** 1, or 2 for double delivery. */
  copies?: number | number[];
  /** The wildcard type (`*`). */
  wildcard: string;
  /** Ids for the deliveries, in the order of `fan`: more than needed is fine, fewer writes nothing. */
  delivery_ids: string[];
  now: Date;
  /** NOTIFY in this statement (PGlite, a savepoint, the SQL function). */
  notify_here?: boolean;
  /** The publishing span's traceparent (null unless tracing; one span covers the statement). */
  traceparent: string | null;
  /** The Monday 00:00 UTC of now's week. */
  week?: Date;
  /** The events' ranks, 1 to n (several events only). */
  n?: number[];
}

/** A row of either statement: one per event, in the order given. */
export interface PublishRow {
  event_id: string;
  /** Null: no such merchant (nothing of this event was written). */
  platform_id: string | null;
  /** Deliveries of the whole statement: more than the ids given, and nothing was written. */
  needed: number;
  /** This event's deliveries, whether or not it was written (the next publish's id hint). */
  fanout: number;
  /**
   * False: not written, its idempotency key was used before (or earlier in the batch). Absent
   * from the plain statement's rows, which write every event whose merchant exists.
   */
  inserted?: boolean;
}

/*
 * The statements. Each takes its events as arrays, one element per event, with each event's rank
 * (`n`), and returns a row per event. `fan` numbers every (event, endpoint, copy) in the order of
 * the events, so each takes the delivery id of that rank in the ids given, and the queue rows are
 * written in that order (a CTE is read back in the order it was written): events of one batch
 * about one object are queued (the queue's `seq`) in the order given, which per-object ordering
 * follows (delivery/ordering.ts), whatever join the planner chose. With fewer ids than deliveries nothing
 * is written and `needed` says how many. The queue rows take their ids from `fan` as the
 * deliveries do (the queue has no foreign key to them: migration 0007).
 *
 * Fixed texts, run as named statements: PostgreSQL prepares each once
 * per connection and, after five executions planned for their parameters, keeps its generic
 * plan (no planning per publish; test/integration/publish-plan.postgres.test.ts checks it). That
 * choice is made from cost estimates, so the texts avoid what makes a generic plan look dear: a
 * `generate_series` bounded by a parameter (the planner assumes 1,000 rows), a join over every
 * weekly partition of `events` (docs/decisions/publish-statement.md), a subquery kept from being
 * flattened (OFFSET 0) to force a nested loop. And every plan node costs its set-up on each
 * execution, needed or not (bench/investigations/cpu-per-delivery.md, "A plain statement for the
 * common publish"), so the arrays are unnested in the select list (no tuplestore per array) and
 * neither text carries more than it needs.
 */

/**
 * Every option: idempotency keys, a portal test event's one endpoint, double delivery, and the
 * NOTIFY in the statement where the transaction can't send it after its commit (PGlite, a
 * savepoint; otherwise db/after-commit.ts sends it). The events' keys are inserted first, in the
 * order given, in its week's partition (and, in the week's last day, the next week's too:
 * migration 0028 says why that meets a publish on the other side of a Monday 00:00), unless
 * an event of the previous week holds it (older weeks are not looked at: a key is unique for at
 * least 7 days, docs/decisions/event-key-window.md): ON CONFLICT DO NOTHING catches a key used
 * before, a concurrent publish and a second use within the batch (the first use winning), and
 * an event is written only when every row of its key was.
 *
 * Its parameters are `PublishParams`.
 */
const publishSql = (source: Source) =>
  statement<PublishParams, PublishRow>(
    source === 'one' ? 'publish_event' : 'publish_events',
    `
WITH inp AS (
  SELECT i.*, mc.platform_id
  FROM (${events(source, [
    ['merchant_id', 'text'],
    ['environment', 'text'],
    ['type', 'text'],
    ['idem', 'text'],
    ['event_id', 'text'],
    ['body', 'text'],
    ['object_id', 'text'],
    ['only_endpoint', 'text'],
    ['copies', 'int'],
    ['n', 'int'],
  ])}) i
  LEFT JOIN merchants mc ON mc.id = i.merchant_id
), fan AS (
  SELECT inp.event_id, inp.environment, inp.type, w.id AS endpoint_id, w.platform_id, c.copy::smallint AS copy,
         (row_number() OVER (${inOrder(source)}))::int AS slot,
         -- Per-object ordering (claim.ts): the object's id for ordered endpoints only.
         CASE WHEN w.delivery_order = 'per_object' THEN inp.object_id END AS order_key
  FROM inp JOIN webhook_endpoints w
    ON w.platform_id = inp.platform_id AND w.environment = inp.environment AND w.status = 'enabled' AND w.deleted_at IS NULL
   AND CASE WHEN inp.only_endpoint IS NOT NULL
            -- A portal test event goes to the one endpoint it was sent from, whatever it subscribes to.
            THEN w.id = inp.only_endpoint
            ELSE (:wildcard::text = ANY(w.enabled_events) OR inp.type = ANY(w.enabled_events)) END
  JOIN (VALUES (1), (2)) AS c(copy) ON c.copy <= inp.copies
), need AS (
  SELECT count(*)::int AS needed FROM fan
), k AS (
  INSERT INTO event_idempotency_keys (platform_id, environment, idempotency_key, event_id, event_created_at, week)
  SELECT inp.platform_id, inp.environment, inp.idem, inp.event_id, :now::timestamptz, w.week
  FROM inp CROSS JOIN (VALUES (:week::timestamptz), (:week::timestamptz + interval '168 hours')) AS w(week)
  WHERE inp.idem IS NOT NULL AND inp.platform_id IS NOT NULL AND (SELECT needed FROM need) <= cardinality(:delivery_ids::text[])
    -- The next week's row only in the week's last day (migration 0028).
    AND (w.week = :week::timestamptz OR :now::timestamptz >= :week::timestamptz + interval '144 hours')
    -- The key's main row of the previous week only (a key is unique for at least 7 days, not
    -- while its event is kept: docs/decisions/event-key-window.md): one index probe in one
    -- partition, pruned at the executor's start in a generic plan too, whatever the weeks kept.
    -- A scalar subquery, not NOT EXISTS, which the planner may turn into a hash anti-join.
    AND (SELECT 1 FROM event_idempotency_keys o
         WHERE o.platform_id = inp.platform_id AND o.environment = inp.environment AND o.idempotency_key = inp.idem
           AND o.week = :week::timestamptz - interval '168 hours' AND o.event_created_at >= o.week
         LIMIT 1) IS NULL
  ORDER BY ${source === 'one' ? '' : 'inp.n, '}w.week
  ON CONFLICT DO NOTHING
  RETURNING event_id
), ev AS (
  INSERT INTO events (id, platform_id, environment, merchant_id, type, body, idempotency_key, created_at, object_id, trace_parent)
  SELECT inp.event_id, inp.platform_id, inp.environment, inp.merchant_id, inp.type, inp.body, inp.idem, :now::timestamptz, inp.object_id,
         :traceparent::text
  FROM inp
  WHERE inp.platform_id IS NOT NULL AND (inp.idem IS NULL OR inp.event_id IN (
           SELECT k.event_id FROM k GROUP BY k.event_id
           HAVING count(*) = CASE WHEN :now::timestamptz >= :week::timestamptz + interval '144 hours' THEN 2 ELSE 1 END))
    AND (SELECT needed FROM need) <= cardinality(:delivery_ids::text[])
  RETURNING id
), d AS (
  INSERT INTO webhook_deliveries (id, event_id, endpoint_id, copy, platform_id, environment, state, attempt_count,
                                  automatic_attempts, next_attempt_at, created_at, updated_at, event_type)
  SELECT (:delivery_ids::text[])[f.slot], f.event_id, f.endpoint_id, f.copy, f.platform_id, f.environment, 'pending', 0, 0,
         :now::timestamptz, :now::timestamptz, :now::timestamptz, f.type
  FROM fan f WHERE f.event_id = ANY (ARRAY(SELECT ev.id FROM ev))
), q AS (
  INSERT INTO delivery_queue (delivery_id, delivery_created_at, event_id, endpoint_id, platform_id, due_at, order_key)
  SELECT (:delivery_ids::text[])[f.slot], :now::timestamptz, f.event_id, f.endpoint_id, f.platform_id, :now::timestamptz, f.order_key
  FROM fan f WHERE f.event_id = ANY (ARRAY(SELECT ev.id FROM ev))
  RETURNING 1
), n AS (
  SELECT pg_notify('${WAKE_CHANNEL}', '') FROM (SELECT 1 FROM q LIMIT 1) AS any_delivery WHERE :notify_here::boolean
)
SELECT inp.event_id, inp.platform_id, (SELECT needed FROM need) AS needed,
       (SELECT count(*) FROM fan WHERE fan.event_id = inp.event_id)::int AS fanout,
       inp.event_id = ANY (ARRAY(SELECT ev.id FROM ev)) AS inserted, (SELECT count(*) FROM n)::int AS notified
FROM inp`,
  );
export const PUBLISH = { one: publishSql('one'), many: publishSql('many') };

/**
 * `PUBLISH` for the common publish: no idempotency key, not a portal test event, one copy,
 * workers woken after the commit. The same writes with about half the plan: the parts those
 * options need (the key's insert, the one-endpoint CASE, the copies join, the in-statement
 * NOTIFY) cost their executor set-up on every execution even when they do nothing, and that
 * set-up was a fifth of PostgreSQL's CPU for a one-event publish (bench/investigations/
 * cpu-per-delivery.md, "A plain statement for the common publish"). Every event whose merchant
 * exists is written once the ids fit, so its rows carry no `inserted`.
 * Its parameters are those of `PublishParams` it needs.
 */
const publishPlainSql = (source: Source) =>
  statement<PublishParams, PublishRow>(
    source === 'one' ? 'publish_event_plain' : 'publish_events_plain',
    `
WITH inp AS (
  SELECT i.*, mc.platform_id
  FROM (${events(source, [
    ['merchant_id', 'text'],
    ['environment', 'text'],
    ['type', 'text'],
    ['event_id', 'text'],
    ['body', 'text'],
    ['object_id', 'text'],
    ['n', 'int'],
  ])}) i
  LEFT JOIN merchants mc ON mc.id = i.merchant_id
), fan AS (
  SELECT inp.event_id, inp.environment, inp.type, w.id AS endpoint_id, w.platform_id, (row_number() OVER (${inOrder(source)}))::int AS slot,
         CASE WHEN w.delivery_order = 'per_object' THEN inp.object_id END AS order_key
  FROM inp JOIN webhook_endpoints w
    ON w.platform_id = inp.platform_id AND w.environment = inp.environment AND w.status = 'enabled' AND w.deleted_at IS NULL
   AND (:wildcard::text = ANY(w.enabled_events) OR inp.type = ANY(w.enabled_events))
), need AS (
  SELECT count(*)::int AS needed FROM fan
), ev AS (
  INSERT INTO events (id, platform_id, environment, merchant_id, type, body, created_at, object_id, trace_parent)
  SELECT inp.event_id, inp.platform_id, inp.environment, inp.merchant_id, inp.type, inp.body, :now::timestamptz, inp.object_id, :traceparent::text
  FROM inp WHERE inp.platform_id IS NOT NULL AND (SELECT needed FROM need) <= cardinality(:delivery_ids::text[])
), d AS (
  INSERT INTO webhook_deliveries (id, event_id, endpoint_id, copy, platform_id, environment, state, attempt_count,
                                  automatic_attempts, next_attempt_at, created_at, updated_at, event_type)
  SELECT (:delivery_ids::text[])[f.slot], f.event_id, f.endpoint_id, 1, f.platform_id, f.environment, 'pending', 0, 0,
         :now::timestamptz, :now::timestamptz, :now::timestamptz, f.type
  FROM fan f WHERE (SELECT needed FROM need) <= cardinality(:delivery_ids::text[])
), q AS (
  INSERT INTO delivery_queue (delivery_id, delivery_created_at, event_id, endpoint_id, platform_id, due_at, order_key)
  SELECT (:delivery_ids::text[])[f.slot], :now::timestamptz, f.event_id, f.endpoint_id, f.platform_id, :now::timestamptz, f.order_key
  FROM fan f WHERE (SELECT needed FROM need) <= cardinality(:delivery_ids::text[])
)
SELECT inp.event_id, inp.platform_id, (SELECT needed FROM need) AS needed,
       (SELECT count(*) FROM fan WHERE fan.event_id = inp.event_id)::int AS fanout
FROM inp`,
  );
export const PUBLISH_PLAIN = { one: publishPlainSql('one'), many: publishPlainSql('many') };

/**
 * Where the statements read their events from: one event's values as they are, or arrays of
 * every event's (the same text otherwise). One event bound as scalars costs PostgreSQL less
 * than the same in arrays of one (no arrays to parse and unnest, no sort by rank): about 20 % of
 * the statement's CPU, measured alone (docs/performance.md, "One way to publish").
 */
export type Source = 'one' | 'many';

/** The events' columns: `:name::type AS name` for one event, `unnest(:name::type[]) AS name` for many. */
function events(source: Source, columns: [name: string, type: string][]): string {
  if (source === 'one') return `SELECT ${columns.map(([name, t]) => (name === 'n' ? '1 AS n' : `:${name}::${t} AS ${name}`)).join(', ')}`;
  return `SELECT ${columns.map(([name, t]) => `unnest(:${name}::${t}[]) AS ${name}`).join(', ')}`;
}

/** Events in the order given: by rank when there are several. */
function inOrder(source: Source): string {
  return source === 'one' ? '' : 'ORDER BY inp.n';
}

/**
 * The event each replayed key holds now (`n`: its rank in the arrays; `:week`: the Monday
 * 00:00 UTC of now's week). A key has a row in its event's week, perhaps one in the next (and perhaps one
 * pointing to no event: migration 0028). What made the publish a replay is in the previous week,
 * this one or the next; and a key reused after its window (two weeks on) has a newer event
 * while the older one is kept: the newest event of those three weeks is the answer.
 */
export const REPLAYED = statement<
  { platform_ids: string[]; environments: string[]; idems: string[]; week: Date },
  { n: number; event_id: string; body: string }
>(
  'publish_events_replayed',
  `
SELECT DISTINCT ON (r.n) r.n, e.id AS event_id, e.body
FROM unnest(:platform_ids::text[], :environments::text[], :idems::text[]) WITH ORDINALITY AS r(platform_id, environment, idem, n)
JOIN event_idempotency_keys k ON k.platform_id = r.platform_id AND k.environment = r.environment AND k.idempotency_key = r.idem
 AND k.week >= :week::timestamptz - interval '168 hours' AND k.week <= :week::timestamptz + interval '168 hours'
JOIN events e ON e.id = k.event_id AND e.created_at = k.event_created_at
ORDER BY r.n, e.created_at DESC, e.id DESC`,
);

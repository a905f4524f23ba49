-- Retention that scales, and a small hot path (issues 10 and 11).
--
-- 1. `delivery_queue`: the work to do, unpartitioned and small. One row per delivery that has an
--    attempt coming (pending or failed_retrying, scheduled or leased); no row once it is finished
--    (delivered, exhausted, cancelled) or parked (its endpoint is disabled). The claim scans and
--    leases only this table; record moves its `due_at` for a retry or deletes it. `due_at` is when a
--    worker may take the row next: the schedule, or the expiry of the current lease while a worker
--    holds it (a dead worker's rows come back by themselves). `delivery_created_at` is the
--    delivery's (and its event's: both are written by the one publishing statement) creation time,
--    so every lookup from here into the partitioned tables is by their full primary key.
--    No foreign key to webhook_deliveries: a partition referenced by one can't simply be dropped.
--    The only writers keep it true (events/publish.ts, delivery/*.ts), and retention never drops a
--    week that still has a queue row.
--
-- 2. `events`, `webhook_deliveries` and `delivery_attempts` become range-partitioned by week
--    (Monday 00:00 UTC to the next), attempts by their delivery's `created_at`
--    (`delivery_created_at`), so a week's event, deliveries and attempts leave together when the
--    worker drops the week (db/retention.ts) instead of DELETEing rows. The partition key must be
--    in every primary key and unique constraint: keys become (id, created_at); since an id
--    determines its created_at, they mean the same as before. An event's idempotency key, which
--    must be unique per tenant across weeks, moves to its own small table.
--    Foreign keys kept: to platforms, merchants, webhook_endpoints. Given up: attempts ->
--    deliveries -> events (a referenced partition can only be dropped after a detach that scans
--    for referencing rows); the writers keep them true and retention drops the three together.
--
-- 3. Columns leaving webhook_deliveries: `due_at`, `lease_token`, `leased_at` (now in the queue).
--    Indexes leaving: the two due-time indexes (the queue has its own) and
--    webhook_deliveries_event_idx (the unique key leads with event_id).
--
-- Existing rows are copied into the new tables (an installation upgrading from 0006). Weeks with
-- rows in the last 400 days and the current week to 2 weeks ahead get partitions; anything else
-- lands in the DEFAULT partitions, which retention purges by DELETE.

CREATE TABLE delivery_queue (
  delivery_id          text PRIMARY KEY,
  delivery_created_at  timestamptz NOT NULL,
  event_id             text NOT NULL,
  endpoint_id          text NOT NULL,
  platform_id          text NOT NULL,
  due_at               timestamptz NOT NULL,
  lease_token          text,
  leased_at            timestamptz
);
-- The claim's skip scan over Platforms with work, and each one's due rows in order.
CREATE INDEX delivery_queue_platform_due_idx ON delivery_queue (platform_id, due_at);
-- Parking, resuming and cancelling an endpoint's work.
CREATE INDEX delivery_queue_endpoint_idx ON delivery_queue (endpoint_id);
-- Claims update most rows of this table once per attempt and records delete them: leave room on
-- each page for a new version, and vacuum it often (it stays as small as the backlog).
ALTER TABLE delivery_queue SET (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000);

INSERT INTO delivery_queue (delivery_id, delivery_created_at, event_id, endpoint_id, platform_id, due_at, lease_token, leased_at)
  SELECT id, created_at, event_id, endpoint_id, platform_id, due_at, lease_token, leased_at
  FROM webhook_deliveries WHERE due_at IS NOT NULL AND state IN ('pending', 'failed_retrying');

CREATE TABLE event_idempotency_keys (
  platform_id      text NOT NULL,
  environment      text NOT NULL,
  idempotency_key  text NOT NULL,
  event_id         text NOT NULL,
  event_created_at timestamptz NOT NULL,
  PRIMARY KEY (platform_id, environment, idempotency_key)
);
CREATE INDEX event_idempotency_keys_created_idx ON event_idempotency_keys (event_created_at);
INSERT INTO event_idempotency_keys SELECT platform_id, environment, idempotency_key, id, created_at FROM events WHERE idempotency_key IS NOT NULL;

CREATE TABLE events_new (
  id               text NOT NULL,
  platform_id      text NOT NULL REFERENCES platforms(id),
  environment      text NOT NULL CHECK (environment IN ('live', 'sandbox')),
  merchant_id      text NOT NULL REFERENCES merchants(id),
  type             text NOT NULL,
  body             text NOT NULL,
  idempotency_key  text,
  created_at       timestamptz NOT NULL,
  PRIMARY KEY (id, created_at)
) PARTITION BY RANGE (created_at);

CREATE TABLE webhook_deliveries_new (
  id                  text NOT NULL,
  event_id            text NOT NULL,
  endpoint_id         text NOT NULL REFERENCES webhook_endpoints(id),
  platform_id         text NOT NULL,
  environment         text NOT NULL,
  state               text NOT NULL CHECK (state IN ('pending', 'delivered', 'failed_retrying', 'exhausted', 'cancelled')),
  attempt_count       integer NOT NULL DEFAULT 0,
  automatic_attempts  integer NOT NULL DEFAULT 0,
  next_attempt_at     timestamptz,
  last_attempt_at     timestamptz,
  created_at          timestamptz NOT NULL,
  updated_at          timestamptz NOT NULL,
  copy                smallint NOT NULL DEFAULT 1 CHECK (copy IN (1, 2)),
  cancel_reason       text,
  PRIMARY KEY (id, created_at),
  UNIQUE (event_id, endpoint_id, copy, created_at)
) PARTITION BY RANGE (created_at);

CREATE TABLE delivery_attempts_new (
  id                   text NOT NULL,
  delivery_id          text NOT NULL,
  attempt_number       integer NOT NULL,
  trigger              text NOT NULL CHECK (trigger IN ('automatic', 'manual')),
  succeeded            boolean NOT NULL,
  started_at           timestamptz NOT NULL,
  duration_ms          integer NOT NULL,
  status_code          integer,
  response_body        text,
  error_kind           text,
  error_message        text,
  worker_id            text,
  delivery_created_at  timestamptz NOT NULL,
  PRIMARY KEY (id, delivery_created_at),
  UNIQUE (delivery_id, attempt_number, delivery_created_at)
) PARTITION BY RANGE (delivery_created_at);

CREATE TABLE events_default PARTITION OF events_new DEFAULT;
CREATE TABLE webhook_deliveries_default PARTITION OF webhook_deliveries_new DEFAULT;
CREATE TABLE delivery_attempts_default PARTITION OF delivery_attempts_new DEFAULT;

DO $$
DECLARE
  wk timestamp;
  suffix text;
  t text;
BEGIN
  FOR wk IN
    SELECT DISTINCT date_trunc('week', created_at AT TIME ZONE 'UTC') FROM events
      WHERE created_at > now() - interval '400 days' AND created_at < now() + interval '3 weeks'
    UNION
    SELECT generate_series(date_trunc('week', now() AT TIME ZONE 'UTC'), date_trunc('week', now() AT TIME ZONE 'UTC') + interval '2 weeks', interval '1 week')
  LOOP
    suffix := to_char(wk, 'YYYYMMDD');
    FOREACH t IN ARRAY ARRAY['events', 'webhook_deliveries', 'delivery_attempts'] LOOP
      EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
        t || '_p' || suffix, t || '_new', (wk AT TIME ZONE 'UTC')::text, ((wk + interval '1 week') AT TIME ZONE 'UTC')::text);
    END LOOP;
  END LOOP;
END $$;

INSERT INTO events_new (id, platform_id, environment, merchant_id, type, body, idempotency_key, created_at)
  SELECT id, platform_id, environment, merchant_id, type, body, idempotency_key, created_at FROM events;
INSERT INTO webhook_deliveries_new (id, event_id, endpoint_id, platform_id, environment, state, attempt_count, automatic_attempts,
                                    next_attempt_at, last_attempt_at, created_at, updated_at, copy, cancel_reason)
  SELECT id, event_id, endpoint_id, platform_id, environment, state, attempt_count, automatic_attempts,
         next_attempt_at, last_attempt_at, created_at, updated_at, copy, cancel_reason FROM webhook_deliveries;
INSERT INTO delivery_attempts_new (id, delivery_id, attempt_number, trigger, succeeded, started_at, duration_ms, status_code,
                                   response_body, error_kind, error_message, worker_id, delivery_created_at)
  SELECT a.id, a.delivery_id, a.attempt_number, a.trigger, a.succeeded, a.started_at, a.duration_ms, a.status_code,
         a.response_body, a.error_kind, a.error_message, a.worker_id, d.created_at
  FROM delivery_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id;

DROP TABLE delivery_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE events;
ALTER TABLE events_new RENAME TO events;
ALTER TABLE webhook_deliveries_new RENAME TO webhook_deliveries;
ALTER TABLE delivery_attempts_new RENAME TO delivery_attempts;

-- API lists, newest first per tenant; an endpoint's deliveries (auto-disable, bulk replay, parking).
CREATE INDEX events_tenant_idx ON events (platform_id, environment, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_tenant_idx ON webhook_deliveries (platform_id, environment, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, created_at DESC);
-- `payhooks_deliveries{state}` counts unfinished deliveries only (delivery/metrics.ts).
CREATE INDEX webhook_deliveries_unfinished_idx ON webhook_deliveries (state) WHERE state IN ('pending', 'failed_retrying');

-- Retention that scales (issue 10): events, webhook_deliveries and delivery_attempts become
-- range-partitioned by week (Monday 00:00 UTC to the next), so the worker drops a whole week at
-- once (db/retention.ts) instead of DELETEing rows (bloat, vacuum, locks on the hot path).
--
-- Data-preserving swap: new partitioned tables are created beside the old ones (LIKE copies
-- every column, default, NOT NULL and CHECK, including columns added by earlier migrations),
-- the rows are copied, the old tables dropped and the new ones renamed. Indexes and triggers
-- that earlier migrations put on the old tables and that this file does not know are carried
-- over by their definitions.
--
-- Partition keys: events and deliveries by their own `created_at` (a delivery is created in the
-- statement that creates its event, so both are equal); attempts by `delivery_created_at`, a
-- copy of their delivery's `created_at`, so an attempt lives in the same week as its delivery
-- and event and the three weeks are dropped together: the log never keeps an attempt without
-- its delivery. PostgreSQL requires the partition key in every primary key and unique
-- constraint, so the keys become (id, created_at) etc.; since event_id determines created_at
-- (and delivery_id determines delivery_created_at) uniqueness means the same as before. The
-- one that would not (an event's idempotency key, unique per tenant for as long as the event
-- is kept) moves to its own small unpartitioned table, event_idempotency_keys.
--
-- Foreign keys kept: to platforms, merchants and webhook_endpoints. Given up: attempts ->
-- deliveries and deliveries -> events (a partition referenced by a foreign key can only be
-- dropped after a detach that scans for referencing rows). Safe because the only writers keep
-- them true: deliveries are inserted in the statement that inserts their event (events/
-- publish.ts), attempts only from rows that statement just updated (delivery/record.ts), and
-- retention drops a week's attempts, deliveries and events together.
--
-- Weeks with rows in the last 400 days and the current week to 2 weeks ahead get partitions;
-- anything else (very old rows, clocks far off) lands in the DEFAULT partition, which the
-- worker purges by DELETE. The worker keeps creating weeks ahead (db/retention.ts).

CREATE TEMP TABLE payhooks_0007_carry (stmt text NOT NULL) ON COMMIT DROP;
INSERT INTO payhooks_0007_carry (stmt)
  SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i
  JOIN pg_class c ON c.oid = i.indexrelid
  WHERE i.indrelid IN ('events'::regclass, 'webhook_deliveries'::regclass, 'delivery_attempts'::regclass)
    AND NOT i.indisprimary
    AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)
    AND c.relname NOT IN ('events_tenant_idx', 'events_idempotency_idx', 'webhook_deliveries_due_idx',
                          'webhook_deliveries_tenant_idx', 'webhook_deliveries_endpoint_idx', 'webhook_deliveries_event_idx');
INSERT INTO payhooks_0007_carry (stmt)
  SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t
  WHERE t.tgrelid IN ('events'::regclass, 'webhook_deliveries'::regclass, 'delivery_attempts'::regclass) AND NOT t.tgisinternal;

CREATE TABLE events_partitioned (LIKE events INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED)
  PARTITION BY RANGE (created_at);
CREATE TABLE webhook_deliveries_partitioned (LIKE webhook_deliveries INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED)
  PARTITION BY RANGE (created_at);
CREATE TABLE delivery_attempts_partitioned (LIKE delivery_attempts INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED,
  delivery_created_at timestamptz NOT NULL)
  PARTITION BY RANGE (delivery_created_at);

CREATE TABLE events_default PARTITION OF events_partitioned DEFAULT;
CREATE TABLE webhook_deliveries_default PARTITION OF webhook_deliveries_partitioned DEFAULT;
CREATE TABLE delivery_attempts_default PARTITION OF delivery_attempts_partitioned DEFAULT;

DO $$
DECLARE
  wk timestamp;
  suffix text;
BEGIN
  FOR wk IN
    SELECT DISTINCT date_trunc('week', created_at AT TIME ZONE 'UTC') FROM events
      WHERE created_at > now() - interval '400 days'
    UNION
    SELECT generate_series(date_trunc('week', now() AT TIME ZONE 'UTC'), date_trunc('week', now() AT TIME ZONE 'UTC') + interval '2 weeks', interval '1 week')
  LOOP
    suffix := to_char(wk, 'YYYYMMDD');
    EXECUTE format('CREATE TABLE %I PARTITION OF events_partitioned FOR VALUES FROM (%L) TO (%L)',
      'events_p' || suffix, (wk AT TIME ZONE 'UTC')::text, ((wk + interval '1 week') AT TIME ZONE 'UTC')::text);
    EXECUTE format('CREATE TABLE %I PARTITION OF webhook_deliveries_partitioned FOR VALUES FROM (%L) TO (%L)',
      'webhook_deliveries_p' || suffix, (wk AT TIME ZONE 'UTC')::text, ((wk + interval '1 week') AT TIME ZONE 'UTC')::text);
    EXECUTE format('CREATE TABLE %I PARTITION OF delivery_attempts_partitioned FOR VALUES FROM (%L) TO (%L)',
      'delivery_attempts_p' || suffix, (wk AT TIME ZONE 'UTC')::text, ((wk + interval '1 week') AT TIME ZONE 'UTC')::text);
  END LOOP;
END $$;

-- Copy (column order is the same by LIKE; attempts add their delivery's created_at last).
INSERT INTO events_partitioned SELECT * FROM events;
INSERT INTO webhook_deliveries_partitioned SELECT * FROM webhook_deliveries;
INSERT INTO delivery_attempts_partitioned SELECT a.*, d.created_at FROM delivery_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id;

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

DROP TABLE delivery_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE events;
ALTER TABLE events_partitioned RENAME TO events;
ALTER TABLE webhook_deliveries_partitioned RENAME TO webhook_deliveries;
ALTER TABLE delivery_attempts_partitioned RENAME TO delivery_attempts;

-- Keys and indexes under their old names. Lookups by id use the primary keys' leading column.
ALTER TABLE events ADD CONSTRAINT events_pkey PRIMARY KEY (id, created_at);
ALTER TABLE events ADD CONSTRAINT events_platform_id_fkey FOREIGN KEY (platform_id) REFERENCES platforms(id);
ALTER TABLE events ADD CONSTRAINT events_merchant_id_fkey FOREIGN KEY (merchant_id) REFERENCES merchants(id);
CREATE INDEX events_tenant_idx ON events (platform_id, environment, created_at DESC, id DESC);

ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_pkey PRIMARY KEY (id, created_at);
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_event_endpoint_copy_key UNIQUE (event_id, endpoint_id, copy, created_at);
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_endpoint_id_fkey FOREIGN KEY (endpoint_id) REFERENCES webhook_endpoints(id);
-- The claim query's index: only rows with work to do are in it.
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (due_at) WHERE due_at IS NOT NULL;
CREATE INDEX webhook_deliveries_tenant_idx ON webhook_deliveries (platform_id, environment, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, created_at DESC);
-- webhook_deliveries_event_idx (event_id) is not recreated: the unique key above leads with event_id.

ALTER TABLE delivery_attempts ADD CONSTRAINT delivery_attempts_pkey PRIMARY KEY (id, delivery_created_at);
ALTER TABLE delivery_attempts ADD CONSTRAINT delivery_attempts_delivery_id_attempt_number_key UNIQUE (delivery_id, attempt_number, delivery_created_at);

DO $$
DECLARE
  s text;
BEGIN
  FOR s IN SELECT stmt FROM payhooks_0007_carry LOOP
    EXECUTE s;
  END LOOP;
END $$;

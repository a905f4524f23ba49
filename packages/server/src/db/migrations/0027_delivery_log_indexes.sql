-- The delivery log reads what a page needs, whatever the history (decision record
-- delivery-log-indexes), and the constraints lose the `_new` of migration 0007's table swap.
--
-- 1. webhook_deliveries_endpoint_idx (endpoint_id, created_at DESC) stays as it is: an endpoint's
--    page, first or deep, is one ordered range of it per week under Merge Append, the cursor's
--    `created_at <=` its condition; only deliveries of the cursor's very instant (one batch) are
--    filtered. Adding id DESC made it 12 % bigger (two row versions per delivery until vacuum)
--    for those ties alone.
-- 2. Two partial indexes, webhook_deliveries_unfinished_idx (state) WHERE pending or
--    failed_retrying (0006) and webhook_deliveries_undelivered_idx (platform_id, environment,
--    created_at DESC, event_id DESC) WHERE state <> 'delivered' (0015), become one:
--    webhook_deliveries_state_idx (state, platform_id, environment, created_at DESC, event_id
--    DESC) WHERE state <> 'delivered' (event_id last: the events' filter reads distinct events in
--    this order; the log, ordered by delivery id within an instant, sorts only ties). The
--    metrics' count of the backlog still reads only the pending and failed_retrying ranges
--    (state leads); the log filtered by a state other than delivered reads its page in order
--    instead of filtering the tenant's whole history; the events'
--    delivery_success=false reads each of the four states' ranges in order and merges them. A
--    delivery published (pending) now gets one partial entry instead of two; exhausting or
--    cancelling one adds an entry, which only failures pay. `delivered`, nearly every row, is
--    read from the tenant index.
-- 3. Constraint names of 0007's `*_new` tables get the tables' names (on every partition: a
--    CHECK renamed on the parent is renamed in its partitions, a primary, unique or foreign key
--    is renamed table by table). Nothing refers to them by name.
--
-- In the migrator's one transaction, so not CONCURRENTLY (which neither a transaction nor a
-- partitioned parent allows): each partition's index is built under a lock that holds writes to
-- it. To avoid that on a large history, build each partition's index first with `CREATE INDEX
-- CONCURRENTLY <partition>_state_idx ON <partition> (state, platform_id, environment, created_at
-- DESC, event_id DESC) WHERE state <> 'delivered'`: the parent's CREATE INDEX then attaches
-- those matching indexes instead of building them. Dropping an index of a partitioned table
-- takes a brief exclusive lock on each partition.

DROP INDEX IF EXISTS webhook_deliveries_unfinished_idx;
DROP INDEX IF EXISTS webhook_deliveries_undelivered_idx;
CREATE INDEX webhook_deliveries_state_idx ON webhook_deliveries (state, platform_id, environment, created_at DESC, event_id DESC)
  WHERE state <> 'delivered';

DO $$
DECLARE
  c record;
  renamed text;
BEGIN
  -- Parents first: their CHECK constraints carry the partitions' along.
  FOR c IN
    SELECT con.conrelid, con.conname
    FROM pg_constraint con JOIN pg_class rel ON rel.oid = con.conrelid
    WHERE con.conname ~ '^(events|webhook_deliveries|delivery_attempts)_new_'
    ORDER BY rel.relkind <> 'p', rel.relname
  LOOP
    CONTINUE WHEN NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = c.conrelid AND conname = c.conname);
    renamed := CASE c.conname
      WHEN 'webhook_deliveries_new_event_id_endpoint_id_copy_created_at_key' THEN 'webhook_deliveries_event_endpoint_copy_key'
      WHEN 'delivery_attempts_new_delivery_id_attempt_number_delivery_c_key' THEN 'delivery_attempts_delivery_attempt_number_key'
      ELSE regexp_replace(c.conname, '^(events|webhook_deliveries|delivery_attempts)_new_', '\1_')
    END;
    EXECUTE format('ALTER TABLE %s RENAME CONSTRAINT %I TO %I', c.conrelid::regclass, c.conname, renamed);
  END LOOP;
END $$;

-- Attempts are keyed by their delivery (decision record attempts-keyed-by-delivery): the primary
-- key becomes (delivery_id, attempt_number, delivery_created_at), the unique key every read
-- already uses, and the index on (id, delivery_created_at) goes. Attempts are read only by their
-- delivery; nothing looks one up by its id, so that index was never scanned and only cost every
-- recorded attempt an index entry. The id column stays: the API returns it.
--
-- On the parent and every partition (the weekly ones and DEFAULT); partitions the retention job
-- creates later take the parent's key, named `<partition>_pkey` like these.
--
-- Expand-safe: the previous release inserts attempts with an id and no ON CONFLICT target
-- (record.ts; interrupted.ts's ON CONFLICT DO NOTHING meets the same row on this key, since an
-- interrupted attempt's id is derived from its delivery and lease, which fix its number).
--
-- The existing unique index can't become the primary key. PostgreSQL has no way to turn a
-- constraint into another, `ADD PRIMARY KEY USING INDEX` is refused on a partitioned table, and
-- the parent's `ADD PRIMARY KEY` does not attach a partition index already attached to the unique
-- key. (Detaching every partition, dropping the unique key and attaching them again under the
-- new primary key does keep the indexes, but each partition's attached constraint stays a
-- UNIQUE one, not a primary key, and every partition is detached and re-validated.) So each
-- partition's key is built again, under the migration's ACCESS EXCLUSIVE lock on the attempts:
-- recording outcomes (workers wait, they don't fail) and reading attempts (the delivery log)
-- wait for it; publishing does not. Measured on PostgreSQL 15 with bench/attempt-indexes.ts
-- (2 M attempts, 650,000 per weekly partition, maintenance_work_mem 64 MB, a shared 2-core
-- machine at a load of 5 to 7): 3.2 to 7.7 s per million attempts, about 4.5 typically. So
-- about half a minute of held records at 6.3 M attempts (5 M deliveries), and minutes for tens
-- of millions: per million it grows with a partition's size (its sort spills to disk; 1.2 s per
-- million at 50,000 attempts, 2.3 at 300,000).
--
-- With a large history, build the keys beforehand without blocking, one per partition, e.g.
--   CREATE UNIQUE INDEX CONCURRENTLY delivery_attempts_p20261123_key_next
--     ON delivery_attempts_p20261123 (delivery_id, attempt_number, delivery_created_at);
-- (any name; every weekly partition and the DEFAULT one; measured 5 s per million attempts, writes
-- going on, and a partition's old indexes stay meanwhile, so plan its disk space). This migration
-- then takes each partition's valid index of exactly that definition as its primary key instead
-- of building one (0.03 s at 2 M attempts); a partition made after that, still small, is built
-- here.

ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_pkey;

-- Indexes built beforehand become their partition's primary key; the parent's key below then
-- attaches them (it attaches a partition's index only if it backs a constraint already).
DO $$
DECLARE
  part record;
BEGIN
  FOR part IN
    SELECT DISTINCT ON (c.oid) c.oid::regclass AS rel, c.relname, x.indexrelid::regclass AS idx
    FROM pg_inherits h
    JOIN pg_class c ON c.oid = h.inhrelid
    JOIN pg_index x ON x.indrelid = c.oid
    WHERE h.inhparent = 'delivery_attempts'::regclass
      AND x.indisunique AND x.indisvalid AND x.indisready
      AND regexp_replace(pg_get_indexdef(x.indexrelid), '^.* USING ', '') = 'btree (delivery_id, attempt_number, delivery_created_at)'
      AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = x.indexrelid)
      AND NOT EXISTS (SELECT 1 FROM pg_inherits p WHERE p.inhrelid = x.indexrelid)
    ORDER BY c.oid, x.indexrelid
  LOOP
    EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I PRIMARY KEY USING INDEX %s', part.rel, part.relname || '_pkey', part.idx);
  END LOOP;
END $$;

ALTER TABLE delivery_attempts ADD CONSTRAINT delivery_attempts_pkey PRIMARY KEY (delivery_id, attempt_number, delivery_created_at);
ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_delivery_attempt_number_key;

-- Performance (issue 11): a VACUUM of delivery_queue never truncates it.
--
-- The queue empties and refills all day, so a vacuum often finds empty pages at its end and, by
-- default, gives them back to the operating system. Truncating takes an ACCESS EXCLUSIVE lock on
-- the table: while it is held, every claim, every recorded outcome and every publishing
-- transaction (they insert into the queue) waits. The pages would be needed again within
-- seconds anyway. This covers autovacuum; the worker's own vacuum (delivery/queue-vacuum.ts)
-- says TRUNCATE false as well.
ALTER TABLE delivery_queue SET (vacuum_truncate = false);

-- Issue 26 (efficiency): one index fewer to write for every delivery published and every
-- attempt recorded.
--
-- webhook_deliveries_event_idx (event_id), added again by 0013, repeats what the unique key
-- (event_id, endpoint_id, copy, created_at) already gives: a lookup by event id reads that key's
-- leading column (0007 dropped the index for this reason). An attempt's record moves a delivery
-- to a new state, which is never a HOT update (state is in two partial indexes), so every index
-- of the table gets an entry for the new row version; this one was pure cost.
--
-- Nothing refers to the index by name, and the previous release's statements plan the same on the
-- unique key: safe during a rolling upgrade.

DROP INDEX IF EXISTS webhook_deliveries_event_idx;

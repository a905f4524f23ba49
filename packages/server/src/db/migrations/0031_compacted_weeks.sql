-- The partitions whose indexes the retention job rebuilt once their week was closed
-- (db/compact-weeks.ts, docs/decisions/compact-closed-weeks.md): none is rebuilt twice, and a run
-- with nothing to rebuild reads this small table and nothing else. A row leaves with its
-- partition (the drop step deletes it); a row left behind by an older release's drop names a
-- partition that can't come back (weeks are only ever created ahead), so it is harmless.
--
-- Expand only: the previous release never reads it.
CREATE TABLE compacted_weeks (
  partition text PRIMARY KEY,
  compacted_at timestamptz NOT NULL,
  index_bytes_before bigint NOT NULL,
  index_bytes_after bigint NOT NULL,
  duration_ms integer NOT NULL
);

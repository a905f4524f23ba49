-- Issue 22: listen sessions marked in a column merchants can't write, and counters shared by every
-- API process for the limits that must hold across them (portal sign-in) when no Redis is set.
-- Expand only: the previous release keeps working against this schema.

-- A `payhooks listen` session's endpoint was recognised by `metadata.payhooks_listen_session =
-- "true"`, which any merchant can set on an ordinary endpoint through the API: the listen sweep
-- then deleted that endpoint. The marker is now this column, written only by the listen code.
-- Existing sessions are recognised by the old marker *and* their URL, which is this service's own
-- relay for their own id (`…/listen/<id>`): an ordinary endpoint with the metadata is not one.
ALTER TABLE webhook_endpoints ADD COLUMN listen_session boolean NOT NULL DEFAULT false;
UPDATE webhook_endpoints SET listen_session = true
  WHERE metadata ->> 'payhooks_listen_session' = 'true' AND url LIKE '%/listen/' || id;
CREATE INDEX webhook_endpoints_listen_sessions_idx ON webhook_endpoints (updated_at)
  WHERE listen_session AND deleted_at IS NULL;

-- Fixed-window counters: `key` is the limit's name and what it counts (an address, an email, a
-- device), `count` the requests in the window ending at `reset_at`. UNLOGGED: counters need no
-- crash safety or replication, and skipping the WAL keeps a sign-in to one cheap write. A failover
-- or crash starts every window afresh, which lets at most one more window of guesses through.
CREATE UNLOGGED TABLE rate_limit_counters (
  key      text PRIMARY KEY,
  count    integer NOT NULL,
  reset_at timestamptz NOT NULL
);
CREATE INDEX rate_limit_counters_reset_idx ON rate_limit_counters (reset_at);

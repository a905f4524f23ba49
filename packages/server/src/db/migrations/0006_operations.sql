-- Operations (issue 10): secret rotation, auto-disable, cancelled deliveries, interrupted attempts.

-- Secret rotation: the replaced secret keeps signing (a second v1=) until it expires. It is the
-- old `secret_ciphertext` moved as is (AES-256-GCM, bound to the endpoint id like the current one).
-- Auto-disable: `failing_since` is the start of the current run of failures (no 2xx since); the
-- recording statement writes it only on the first failure after a success and on the first
-- success after failures, so healthy endpoints never pay for it.
ALTER TABLE webhook_endpoints
  ADD COLUMN previous_secret_ciphertext text,
  ADD COLUMN previous_secret_expires_at timestamptz,
  ADD COLUMN disabled_reason text CHECK (disabled_reason IN ('manual', 'failing')),
  ADD COLUMN disabled_at timestamptz,
  ADD COLUMN failing_since timestamptz;
-- The auto-disable sweep reads only endpoints that are failing.
CREATE INDEX webhook_endpoints_failing_idx ON webhook_endpoints (failing_since) WHERE failing_since IS NOT NULL;

-- A deleted endpoint's unfinished deliveries end as `cancelled` (terminal), with the reason.
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_state_check;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_state_check
  CHECK (state IN ('pending', 'delivered', 'failed_retrying', 'exhausted', 'cancelled'));
-- `leased_at`: when the current lease was taken (the start of an attempt that a takeover may
-- have to log as interrupted). Written by the claim UPDATE that already writes the row.
ALTER TABLE webhook_deliveries
  ADD COLUMN cancel_reason text,
  ADD COLUMN leased_at timestamptz;
-- `payhooks_deliveries{state}` counts unfinished deliveries only, through this index: its size
-- is the backlog, not the history.
CREATE INDEX webhook_deliveries_unfinished_idx ON webhook_deliveries (state) WHERE state IN ('pending', 'failed_retrying');

-- Which worker made the attempt (set for `interrupted` attempts: the worker that died).
ALTER TABLE delivery_attempts ADD COLUMN worker_id text;

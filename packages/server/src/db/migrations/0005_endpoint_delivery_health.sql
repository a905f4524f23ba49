-- Fair sharing: an endpoint whose attempts keep timing out holds worker slots for the whole
-- deadline each time. `consecutive_timeouts` counts its timeouts since its last answer (any HTTP
-- status resets it); at the threshold in delivery/fairness.ts its attempts are throttled to one
-- at a time per worker until it answers again (a circuit breaker whose every attempt is a
-- half-open probe). The recording statement keeps it, only when it changes.
ALTER TABLE webhook_endpoints
  ADD COLUMN consecutive_timeouts integer NOT NULL DEFAULT 0,
  ADD COLUMN throttled_at timestamptz;

-- The claim's skip scan over Platforms with scheduled work, and each one's due rows in order
-- (delivery/claim.ts): a noisy tenant's backlog is never read through to reach another's.
CREATE INDEX webhook_deliveries_platform_due_idx ON webhook_deliveries (platform_id, due_at) WHERE due_at IS NOT NULL;

-- Performance (issue 11): the claim reads which endpoints are throttled without reading every
-- endpoint.
--
-- Each claim needs the throttle (delivery/fairness.ts) of its candidate rows' endpoints. It used
-- to join them to webhook_endpoints, which PostgreSQL planned as a hash join over the whole
-- table: every claim read every endpoint of the installation, so the claim slowed as endpoints
-- were added (measured: 1.9 ms with 100 endpoints, 3.2 ms with 10,000). The claim now asks for
-- the set of throttled live endpoints, which this index holds: usually none, and only endpoints
-- that are timing out right now (auto-disable takes them out within days), however many
-- endpoints exist.
--
-- `throttled_at` is set exactly when `consecutive_timeouts` reaches the threshold and cleared
-- with it (the recording statement, delivery/record.ts), so it says the same thing.
CREATE INDEX webhook_endpoints_throttled_idx ON webhook_endpoints (id)
  WHERE throttled_at IS NOT NULL AND status = 'enabled' AND deleted_at IS NULL;

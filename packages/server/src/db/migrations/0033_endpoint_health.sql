-- An endpoint's health as the merchant sees it (endpoints/health.ts, docs/webhooks.md "When your
-- endpoint keeps failing"): `failing` once its automatic attempts have all failed for a while,
-- warned at half and at 90 % of PAYHOOKS_AUTO_DISABLE_AFTER, `recovered` at the first 2xx after.
-- Disabled is the endpoint's status and is not repeated here. The periodic sweep moves it, each
-- change by one conditional UPDATE, so however many workers sweep, each change is announced once
-- (webhook_endpoint.failing, webhook_endpoint.recovered).
--
-- Expand only: the previous release neither reads nor writes these columns, and the two event
-- types are rows it would only meet if it published them.
ALTER TABLE webhook_endpoints
  ADD COLUMN health_state text NOT NULL DEFAULT 'healthy' CHECK (health_state IN ('healthy', 'failing', 'recovered')),
  ADD COLUMN health_changed_at timestamptz,
  ADD COLUMN health_warned smallint NOT NULL DEFAULT 0 CHECK (health_warned IN (0, 50, 90)),
  ADD COLUMN health_disables_at timestamptz;

-- The sweep's reads: endpoints marked failing (a handful), whatever the table holds.
CREATE INDEX webhook_endpoints_health_failing_idx ON webhook_endpoints (failing_since) WHERE health_state = 'failing';

INSERT INTO payhooks.event_types (type, family, status, position) VALUES
  ('webhook_endpoint.failing', 'webhook_endpoint', 'enabled', 12),
  ('webhook_endpoint.recovered', 'webhook_endpoint', 'enabled', 13);

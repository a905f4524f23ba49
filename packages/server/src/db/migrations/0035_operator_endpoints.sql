-- Operator endpoints (endpoints/operator-endpoints.ts, docs/decisions/operator-endpoints.md): the
-- payment service registers, through the internal API, endpoints that receive every Platform's
-- (or one Platform's) endpoint health events, so it can alert through its own channels.
--
-- They are ordinary webhook endpoints, signed, retried and logged like any other, held by one
-- reserved Platform that has no API key, no portal user and no merchant-facing read: every
-- tenant read is filtered by Platform, so a merchant never sees them or their deliveries.
-- `operator_endpoints` says which Platform each one watches (null: all of them).
--
-- Expand only: the previous release never reads the table and never publishes to the Platform.
INSERT INTO platforms (id, name) VALUES ('plt_operator', 'payhooks operator') ON CONFLICT (id) DO NOTHING;
INSERT INTO merchants (id, platform_id, name) VALUES ('mch_operator', 'plt_operator', 'payhooks operator') ON CONFLICT (id) DO NOTHING;
CREATE TABLE operator_endpoints (
  endpoint_id  text PRIMARY KEY REFERENCES webhook_endpoints(id),
  platform_id  text REFERENCES platforms(id)
);
CREATE INDEX operator_endpoints_platform_idx ON operator_endpoints (platform_id);

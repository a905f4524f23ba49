-- The health alerts warn before an endpoint's client certificate (mutual TLS) expires, 30 and 7
-- days ahead (endpoints/certificate-expiry.ts): `certificate_warned` remembers which certificate
-- (its fingerprint) was warned about at which stage, so each warning is mailed once however many
-- workers sweep, and a new certificate starts again. The sweep reads through a partial index on
-- the expiry as shown (ISO 8601 text, which sorts as time does), so it costs the few endpoints
-- with client certificates, not the table.
--
-- Expand only: the previous release neither reads the column nor writes the new notice kind.
ALTER TABLE webhook_endpoints ADD COLUMN certificate_warned text;
CREATE INDEX webhook_endpoints_certificate_expiry_idx ON webhook_endpoints ((authentication_shown ->> 'not_after'))
  WHERE authentication_type = 'mtls' AND deleted_at IS NULL;
ALTER TABLE health_notices DROP CONSTRAINT health_notices_kind_check;
ALTER TABLE health_notices ADD CONSTRAINT health_notices_kind_check
  CHECK (kind IN ('failing', 'warning', 'disabled', 'recovered', 'certificate_expiring'));

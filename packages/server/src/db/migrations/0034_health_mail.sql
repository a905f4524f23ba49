-- Mail to the merchant's team when an endpoint's health changes (alerts/health-mail.ts,
-- docs/decisions/health-mail.md):
-- - platforms.alert_settings: mail on or off per environment, extra addresses, and the link to
--   an endpoint in the payment service's own portal ({} = the defaults: live on, sandbox off);
-- - portal_users.health_mail: a developer or admin turns the mail off for themselves;
-- - health_notices: each change, written in the transaction that makes it (endpoints/health-sweep.ts,
--   endpoints/auto-disable.ts), mailed once by whichever worker locks it first (SKIP LOCKED),
--   all of a Platform's unsent changes of one environment in one mail.
--
-- Expand only: the previous release ignores the columns and the table.
ALTER TABLE platforms ADD COLUMN alert_settings jsonb NOT NULL DEFAULT '{}';
ALTER TABLE portal_users ADD COLUMN health_mail boolean NOT NULL DEFAULT true;
CREATE TABLE health_notices (
  id           text PRIMARY KEY,
  platform_id  text NOT NULL,
  environment  text NOT NULL CHECK (environment IN ('live', 'sandbox')),
  endpoint_id  text NOT NULL,
  kind         text NOT NULL CHECK (kind IN ('failing', 'warning', 'disabled', 'recovered')),
  warning      smallint,
  created_at   timestamptz NOT NULL,
  sent_at      timestamptz
);
CREATE INDEX health_notices_unsent_idx ON health_notices (platform_id, environment, created_at) WHERE sent_at IS NULL;
CREATE INDEX health_notices_sent_idx ON health_notices (sent_at) WHERE sent_at IS NOT NULL;

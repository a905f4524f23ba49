-- Payments (spec 2.2) and checkout sessions. `metadata` is kept as the JSON text the merchant's
-- object serialised to (not jsonb, which reorders keys and refuses \u0000), so it is echoed
-- back, and embedded in events, exactly as sent.
CREATE TABLE payments (
  id                   text PRIMARY KEY,
  platform_id          text NOT NULL REFERENCES platforms(id),
  environment          text NOT NULL CHECK (environment IN ('live', 'sandbox')),
  merchant_id          text NOT NULL REFERENCES merchants(id),
  status               text NOT NULL CHECK (status IN ('created', 'requires_action', 'under_review', 'processing',
                                                       'succeeded', 'failed', 'cancelled', 'expired')),
  amount               text NOT NULL CHECK (amount ~ '^[0-9]{1,9}\.[0-9]{2}$'),
  asset_code           text NOT NULL,
  metadata             text NOT NULL,
  checkout_session_id  text,
  -- Sandbox only: every event of this payment is delivered twice (spec 6.2 rule 5).
  double_delivery      boolean NOT NULL DEFAULT false,
  created_at           timestamptz NOT NULL,
  updated_at           timestamptz NOT NULL
);
CREATE INDEX payments_tenant_idx ON payments (platform_id, environment, created_at DESC, id DESC);
CREATE INDEX payments_status_idx ON payments (platform_id, environment, status, created_at DESC, id DESC);

CREATE TABLE checkout_sessions (
  id               text PRIMARY KEY,
  platform_id      text NOT NULL REFERENCES platforms(id),
  environment      text NOT NULL CHECK (environment IN ('live', 'sandbox')),
  merchant_id      text NOT NULL REFERENCES merchants(id),
  status           text NOT NULL CHECK (status IN ('open', 'complete', 'expired')),
  amount           text NOT NULL,
  asset_code       text NOT NULL,
  metadata         text NOT NULL,
  payment_id       text NOT NULL REFERENCES payments(id),
  -- Fixed at creation (like Stripe's), so a worker that expires the session needs no HTTP address.
  url              text NOT NULL,
  success_url      text NOT NULL,
  cancel_url       text,
  double_delivery  boolean NOT NULL DEFAULT false,
  expires_at       timestamptz NOT NULL,
  completed_at     timestamptz,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL
);
CREATE INDEX checkout_sessions_tenant_idx ON checkout_sessions (platform_id, environment, created_at DESC, id DESC);
-- The expiry job's index: only open sessions are in it.
CREATE INDEX checkout_sessions_expiry_idx ON checkout_sessions (expires_at) WHERE status = 'open';

-- Double delivery (spec 6.2 rule 5): one event may go to one endpoint twice, as two deliveries
-- (copy 1 and copy 2) with their own logs. Normal fan-out writes copy 1 only.
ALTER TABLE webhook_deliveries ADD COLUMN copy smallint NOT NULL DEFAULT 1 CHECK (copy IN (1, 2));
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_event_id_endpoint_id_key;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_event_endpoint_copy_key UNIQUE (event_id, endpoint_id, copy);

-- Platforms own merchants, API keys and webhook endpoints (spec 2.3, 5.2).
CREATE TABLE platforms (
  id          text PRIMARY KEY,
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE merchants (
  id           text PRIMARY KEY,
  platform_id  text NOT NULL REFERENCES platforms(id),
  name         text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX merchants_platform_idx ON merchants (platform_id);

-- API keys are stored only as SHA-256 hashes of the full key; `prefix` is the first
-- characters, kept to recognise a key in listings and to revoke it.
CREATE TABLE api_keys (
  id           text PRIMARY KEY,
  platform_id  text NOT NULL REFERENCES platforms(id),
  environment  text NOT NULL CHECK (environment IN ('live', 'sandbox')),
  prefix       text NOT NULL,
  key_hash     text NOT NULL UNIQUE,
  created_at   timestamptz NOT NULL DEFAULT now(),
  revoked_at   timestamptz
);
CREATE INDEX api_keys_platform_idx ON api_keys (platform_id);
CREATE INDEX api_keys_prefix_idx ON api_keys (prefix);

-- Webhook endpoints. The signing secret is AES-256-GCM encrypted (never stored in clear).
-- Deleting an endpoint sets deleted_at so its delivery log stays readable.
CREATE TABLE webhook_endpoints (
  id                 text PRIMARY KEY,
  platform_id        text NOT NULL REFERENCES platforms(id),
  environment        text NOT NULL CHECK (environment IN ('live', 'sandbox')),
  url                text NOT NULL,
  enabled_events     text[] NOT NULL,
  description        text,
  metadata           jsonb NOT NULL DEFAULT '{}'::jsonb,
  status             text NOT NULL DEFAULT 'enabled' CHECK (status IN ('enabled', 'disabled')),
  secret_ciphertext  text NOT NULL,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  deleted_at         timestamptz
);
-- Listing (newest first) and fan-out both filter by tenant and skip deleted rows.
CREATE INDEX webhook_endpoints_tenant_idx
  ON webhook_endpoints (platform_id, environment, created_at DESC, id DESC)
  WHERE deleted_at IS NULL;

-- Idempotency-Key records: the first response to a (platform, environment, key) is kept
-- 24 h and replayed. The body is encrypted because a create response carries the secret.
CREATE TABLE idempotency_keys (
  platform_id     text NOT NULL,
  environment     text NOT NULL,
  key             text NOT NULL,
  request_hash    text NOT NULL,
  response_status integer NOT NULL,
  response_body   text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (platform_id, environment, key)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);

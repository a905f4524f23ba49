-- Events: the outbox. `body` is the envelope serialised once at publish time; every attempt
-- to every endpoint sends exactly these bytes (UTF-8).
CREATE TABLE events (
  id               text PRIMARY KEY,
  platform_id      text NOT NULL REFERENCES platforms(id),
  environment      text NOT NULL CHECK (environment IN ('live', 'sandbox')),
  merchant_id      text NOT NULL REFERENCES merchants(id),
  type             text NOT NULL,
  body             text NOT NULL,
  idempotency_key  text,
  created_at       timestamptz NOT NULL
);
CREATE INDEX events_tenant_idx ON events (platform_id, environment, created_at DESC, id DESC);
CREATE UNIQUE INDEX events_idempotency_idx ON events (platform_id, environment, idempotency_key)
  WHERE idempotency_key IS NOT NULL;

-- One delivery per (event, endpoint). States: spec 3.2, plus our names `pending` and
-- `delivered`. `next_attempt_at` is the schedule as merchants see it; `due_at` is when a
-- worker may take the row next: the schedule, or the expiry of the current lease while a
-- worker holds it (so a dead worker's rows come back by themselves). NULL = nothing to do.
CREATE TABLE webhook_deliveries (
  id                  text PRIMARY KEY,
  event_id            text NOT NULL REFERENCES events(id),
  endpoint_id         text NOT NULL REFERENCES webhook_endpoints(id),
  platform_id         text NOT NULL,
  environment         text NOT NULL,
  state               text NOT NULL CHECK (state IN ('pending', 'delivered', 'failed_retrying', 'exhausted')),
  attempt_count       integer NOT NULL DEFAULT 0,
  automatic_attempts  integer NOT NULL DEFAULT 0,
  next_attempt_at     timestamptz,
  due_at              timestamptz,
  lease_token         text,
  last_attempt_at     timestamptz,
  created_at          timestamptz NOT NULL,
  updated_at          timestamptz NOT NULL,
  UNIQUE (event_id, endpoint_id)
);
-- The claim query's index: only rows with work to do are in it.
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (due_at) WHERE due_at IS NOT NULL;
CREATE INDEX webhook_deliveries_tenant_idx ON webhook_deliveries (platform_id, environment, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, created_at DESC);
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_id);

-- The delivery log (spec 2.4): one row per attempt, automatic or manual.
CREATE TABLE delivery_attempts (
  id              text PRIMARY KEY,
  delivery_id     text NOT NULL REFERENCES webhook_deliveries(id),
  attempt_number  integer NOT NULL,
  trigger         text NOT NULL CHECK (trigger IN ('automatic', 'manual')),
  succeeded       boolean NOT NULL,
  started_at      timestamptz NOT NULL,
  duration_ms     integer NOT NULL,
  status_code     integer,
  response_body   text,
  error_kind      text,
  error_message   text,
  UNIQUE (delivery_id, attempt_number)
);

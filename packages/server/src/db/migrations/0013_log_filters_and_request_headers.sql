-- Issue 22 (the portal's delivery log) and issue 25 (catch-up filters): find deliveries by event
-- type, time range, event and the object an event is about, by index; and keep the signature
-- header each attempt was sent with, to show the request. Expand only: nullable columns the
-- previous release leaves null; rows it writes during a rolling upgrade are found by every
-- filter but these two.

-- The id of the event's resource (`data.object.id`: a payment, a checkout session, an endpoint).
ALTER TABLE events ADD COLUMN object_id text;
-- The event's type, copied to its deliveries so a log filtered by type reads one index.
ALTER TABLE webhook_deliveries ADD COLUMN event_type text;
-- The Service-Signature header the attempt was sent with (null: no request was made).
ALTER TABLE delivery_attempts ADD COLUMN request_signature text;

UPDATE events SET object_id = body::jsonb -> 'data' -> 'object' ->> 'id' WHERE object_id IS NULL;
UPDATE webhook_deliveries d SET event_type = e.type
  FROM events e WHERE e.id = d.event_id AND e.created_at = d.created_at AND d.event_type IS NULL;

CREATE INDEX events_object_idx ON events (platform_id, environment, object_id, created_at DESC, id DESC);
CREATE INDEX events_type_idx ON events (platform_id, environment, type, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_type_idx ON webhook_deliveries (platform_id, environment, event_type, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_id);

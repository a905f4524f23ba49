-- Issue 25 (catch-up filters): `GET /api/v1/events?delivery_success=false` finds the events that
-- still have a delivery not delivered, newest first, by reading only those deliveries. Partial:
-- delivered rows (nearly all of them) are not in it. Expand only.
CREATE INDEX webhook_deliveries_undelivered_idx ON webhook_deliveries (platform_id, environment, created_at DESC, event_id DESC)
  WHERE state <> 'delivered';

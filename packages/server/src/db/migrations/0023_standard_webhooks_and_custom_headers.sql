-- Issue 36 items 1 and 4: per endpoint, the Standard Webhooks headers (`standard_webhooks`) and the
-- merchant's own request headers (`headers`, a JSON object of name to value; null: none). The
-- claim reads both with the endpoint (delivery/claim.ts), so sending needs no other query.
--
-- Each attempt keeps what it sent beyond the contract's headers, for the delivery log's
-- `request_headers`: the `webhook-signature` value (webhook-id is the event id and
-- webhook-timestamp the `t` of request_signature), and the custom headers as the JSON text the
-- claim read. Null when the attempt sent none.
--
-- Expand only (docs/decisions/rolling-upgrades.md): the previous release ignores all four; its
-- workers send neither kind of header while they still run, and log null.

ALTER TABLE webhook_endpoints ADD COLUMN standard_webhooks boolean NOT NULL DEFAULT false;
ALTER TABLE webhook_endpoints ADD COLUMN headers jsonb;

ALTER TABLE delivery_attempts ADD COLUMN request_webhook_signature text;
ALTER TABLE delivery_attempts ADD COLUMN request_custom_headers text;

/** Header names of a delivery (spec 4.2). HTTP header names are case-insensitive. */
export const EVENT_ID_HEADER = 'Service-Event-Id';
export const SIGNATURE_HEADER = 'Service-Signature';

/**
 * The Standard Webhooks headers (https://www.standardwebhooks.com), sent beside the two above by
 * an endpoint that asks for them (`standard_webhooks: true`): the event id, the attempt's Unix
 * time in seconds (the same `t` as `Service-Signature`'s), and `v1,<base64>` signatures
 * (standard-webhooks.ts). Lower case, as the specification writes them.
 */
export const WEBHOOK_ID_HEADER = 'webhook-id';
export const WEBHOOK_TIMESTAMP_HEADER = 'webhook-timestamp';
export const WEBHOOK_SIGNATURE_HEADER = 'webhook-signature';

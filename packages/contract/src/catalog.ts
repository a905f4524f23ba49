/** Types about payments and checkout sessions (spec 6.1): what the payment core emits. */
export const RESOURCE_EVENT_TYPES = [
  'payment.created',
  'payment.requires_action',
  'payment.under_review',
  'payment.processing',
  'payment.succeeded',
  'payment.failed',
  'payment.cancelled',
  'payment.expired',
  'checkout_session.completed',
  'checkout_session.expired',
] as const;

/**
 * Operational types: about the merchant's webhook setup itself, emitted by the service.
 * `data.object` is the endpoint (never its secret), with its `health`. Sent to the Platform's
 * other endpoints of that environment subscribed to them (or to `*`), and to the payment
 * service's operator endpoints (with the endpoint's `platform_id`); not part of the live minimum
 * subscription.
 * - `webhook_endpoint.failing`: every attempt has failed for a while; sent again as a warning at
 *   half and at 90 % of the auto-disable window (`health.warning` 50 or 90, `health.disables_at`).
 * - `webhook_endpoint.disabled`: disabled because its deliveries kept failing.
 * - `webhook_endpoint.recovered`: the first 2xx after it was failing.
 */
export const OPERATIONAL_EVENT_TYPES = ['webhook_endpoint.disabled', 'webhook_endpoint.failing', 'webhook_endpoint.recovered'] as const;

/**
 * The event-type catalog (spec 6.1 plus the operational types). The catalog grows additively
 * (spec 6.1 rule 1): receivers must acknowledge and ignore types they do not handle.
 */
export const EVENT_TYPES = [...RESOURCE_EVENT_TYPES, ...OPERATIONAL_EVENT_TYPES] as const;

export type EventType = (typeof EVENT_TYPES)[number];
export type ResourceEventType = (typeof RESOURCE_EVENT_TYPES)[number];

/** Subscribing to `*` means every type, including ones added to the catalog later. */
export const WILDCARD_EVENT_TYPE = '*';

/** A live endpoint is subscribed to at least these types (spec 4.1 rule 3). */
export const REQUIRED_LIVE_EVENT_TYPES = [
  'payment.succeeded',
  'payment.failed',
  'payment.expired',
  'checkout_session.completed',
] as const satisfies readonly EventType[];

const known: ReadonlySet<string> = new Set(EVENT_TYPES);

export function isEventType(value: string): value is EventType {
  return known.has(value);
}

/** The family of a type: `payment` or `checkout_session` (spec 6.1), or `webhook_endpoint`. */
export function eventFamily(type: EventType): 'payment' | 'checkout_session' | 'webhook_endpoint' {
  if (type.startsWith('payment.')) return 'payment';
  return type.startsWith('webhook_endpoint.') ? 'webhook_endpoint' : 'checkout_session';
}

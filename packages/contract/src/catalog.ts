/**
 * The event-type catalog of the current phase (spec 6.1). The catalog grows additively
 * (spec 6.1 rule 1): receivers must acknowledge and ignore types they do not handle.
 */
export const EVENT_TYPES = [
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

export type EventType = (typeof EVENT_TYPES)[number];

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

/** The family of a type: `payment` or `checkout_session` (spec 6.1). */
export function eventFamily(type: EventType): 'payment' | 'checkout_session' {
  return type.startsWith('payment.') ? 'payment' : 'checkout_session';
}

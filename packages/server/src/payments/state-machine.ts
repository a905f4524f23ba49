import { PAYMENT_STATUSES, type EventType, type PaymentStatus } from '@payhooks/contract';

/**
 * The payment state machine as data. Each status names the event type it emits
 * (`payment.<status>`), so "the Payment's status equals the event's" holds by construction.
 *
 * Modelled on Stripe's PaymentIntent, with this statuses: a payment starts `created`;
 * the customer may have to act (`requires_action`, like 3-D Secure or a wallet confirmation);
 * the operator may hold it for review (`under_review`); money moving is `processing`; and it
 * ends `succeeded`, `failed`, `cancelled` (by the merchant) or `expired` (abandoned). Money only
 * settles from `processing`; cancelling or expiring is possible only before money moves.
 */
// The statuses are part of the wire contract (the receiver SDK types `Payment.status` with them).
export { PAYMENT_STATUSES, type PaymentStatus };

/** Every allowed transition: from -> the statuses it may move to. Terminal statuses map to []. */
export const PAYMENT_TRANSITIONS: Readonly<Record<PaymentStatus, readonly PaymentStatus[]>> = {
  created: ['requires_action', 'under_review', 'processing', 'cancelled', 'expired'],
  requires_action: ['under_review', 'processing', 'failed', 'cancelled', 'expired'],
  under_review: ['processing', 'failed', 'cancelled'],
  processing: ['succeeded', 'failed'],
  succeeded: [],
  failed: [],
  cancelled: [],
  expired: [],
};

export const TERMINAL_PAYMENT_STATUSES: readonly PaymentStatus[] = PAYMENT_STATUSES.filter((s) => PAYMENT_TRANSITIONS[s].length === 0);

export function isPaymentStatus(value: string): value is PaymentStatus {
  return (PAYMENT_STATUSES as readonly string[]).includes(value);
}

export function isTerminal(status: PaymentStatus): boolean {
  return PAYMENT_TRANSITIONS[status].length === 0;
}

export function allowedNext(from: PaymentStatus): readonly PaymentStatus[] {
  return PAYMENT_TRANSITIONS[from];
}

export function canTransition(from: PaymentStatus, to: PaymentStatus): boolean {
  return PAYMENT_TRANSITIONS[from].includes(to);
}

/** The event a payment entering `status` emits. */
export function paymentEventType(status: PaymentStatus): EventType {
  return `payment.${status}` as EventType;
}

/** `payment.succeeded` -> `succeeded`; undefined for other families or unknown suffixes. */
export function statusOfPaymentEvent(type: string): PaymentStatus | undefined {
  if (!type.startsWith('payment.')) return undefined;
  const status = type.slice('payment.'.length);
  return isPaymentStatus(status) ? status : undefined;
}

/**
 * Checkout sessions: `open` -> `complete` (paid on the hosted page) or `expired` (by the
 * worker at `expires_at`, or by the merchant). Both are final, as in Stripe.
 */
export const CHECKOUT_SESSION_STATUSES = ['open', 'complete', 'expired'] as const;
export type SessionStatus = (typeof CHECKOUT_SESSION_STATUSES)[number];

/** The event each session transition emits, and the session status it carries. */
export const SESSION_EVENT_STATUS = {
  'checkout_session.completed': 'complete',
  'checkout_session.expired': 'expired',
} as const satisfies Partial<Record<EventType, SessionStatus>>;

/**
 * The statuses a sandbox payment goes through after `created` to emit each payment type: the
 * state machine's shortest way there (`payhooks trigger`, and the portal's "Send example").
 */
export const EXAMPLE_PATHS: Readonly<Record<string, readonly PaymentStatus[]>> = {
  'payment.created': [],
  'payment.requires_action': ['requires_action'],
  'payment.under_review': ['under_review'],
  'payment.processing': ['processing'],
  'payment.succeeded': ['processing', 'succeeded'],
  'payment.failed': ['processing', 'failed'],
  'payment.cancelled': ['cancelled'],
  'payment.expired': ['expired'],
};

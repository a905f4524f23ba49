import type { EventType } from './catalog.ts';

/**
 * The statuses of a Payment (spec 2.2 shows `succeeded`; the rest are ours, one per payment.*
 * event type). A payment starts `created`; `succeeded`, `failed`, `cancelled` and `expired` are
 * terminal.
 */
export const PAYMENT_STATUSES = [
  'created',
  'requires_action',
  'under_review',
  'processing',
  'succeeded',
  'failed',
  'cancelled',
  'expired',
] as const;

export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

/** The Payment resource as embedded in `data.object` of payment.* events (spec 2.2, 6.1 rule 2). */
export interface Payment {
  id: string;
  object: 'payment';
  status: PaymentStatus;
  /** Decimal amount as a string with two decimals, e.g. `"10.00"`. */
  amount: string;
  /** `<ASSET>.<NETWORK>`, e.g. `USDC.ETH`. */
  asset_code: string;
  /** Merchant-supplied lookup data, echoed back unchanged. */
  metadata: Record<string, unknown>;
  [field: string]: unknown;
}

/**
 * The body of every delivery (spec 2.1). `created_at` is `YYYY-MM-DDThh:mm:ssZ`, no fractions.
 * `type` is typed as string as well as the known union: the catalog grows additively (6.1 rule 1).
 */
export interface WebhookEvent<T = Record<string, unknown>> {
  id: string;
  object: 'event';
  type: EventType | (string & {});
  api_version: string;
  environment: string;
  merchant_id: string;
  created_at: string;
  data: { object: T };
}

export type PaymentEvent = WebhookEvent<Payment>;

/** Formats a time as spec 2.1 wants it: UTC, second precision, `Z` suffix. */
export function formatEventTimestamp(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export const EVENT_TIMESTAMP_PATTERN = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

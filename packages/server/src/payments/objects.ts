import { formatEventTimestamp } from '@payhooks/contract';
import type { CheckoutSessionRow, Environment, PaymentRow } from '../db/schema.ts';
import { AppError } from '../errors.ts';
import type { PaymentStatus, SessionStatus } from './state-machine.ts';

/** The Payment resource: spec 2.2's fields, then ours. This exact object is `data.object` of payment.* events. */
export interface Payment {
  id: string;
  object: 'payment';
  status: PaymentStatus;
  /** Decimal string with exactly two decimals, e.g. "25.00". */
  amount: string;
  /** `<ASSET>.<NETWORK>`, e.g. "USDC.ETH" or "USDC-E.ARB". */
  asset_code: string;
  /** The merchant's flat string pairs, echoed unchanged. */
  metadata: Record<string, string>;
  /** What the customer pays for, as the merchant words it, or null. */
  description: string | null;
  merchant_id: string;
  environment: Environment;
  /** The checkout session that created this payment (cs_…), or null. */
  checkout_session: string | null;
  created_at: string;
  updated_at: string;
}

/** The checkout session resource: `data.object` of checkout_session.* events. */
export interface CheckoutSession {
  id: string;
  object: 'checkout_session';
  status: SessionStatus;
  amount: string;
  asset_code: string;
  metadata: Record<string, string>;
  /** What the customer pays for, shown on the hosted page, or null. */
  description: string | null;
  /** The session's Payment (pay_…). */
  payment: string;
  /** The hosted checkout page. */
  url: string;
  success_url: string;
  cancel_url: string | null;
  expires_at: string;
  completed_at: string | null;
  merchant_id: string;
  environment: Environment;
  created_at: string;
  updated_at: string;
}

export function toPayment(row: PaymentRow): Payment {
  return {
    id: row.id,
    object: 'payment',
    status: row.status,
    amount: row.amount,
    asset_code: row.assetCode,
    metadata: JSON.parse(row.metadata) as Record<string, string>,
    description: row.description,
    merchant_id: row.merchantId,
    environment: row.environment,
    checkout_session: row.checkoutSessionId,
    created_at: formatEventTimestamp(row.createdAt),
    updated_at: formatEventTimestamp(row.updatedAt),
  };
}

export function toCheckoutSession(row: CheckoutSessionRow): CheckoutSession {
  return {
    id: row.id,
    object: 'checkout_session',
    status: row.status,
    amount: row.amount,
    asset_code: row.assetCode,
    metadata: JSON.parse(row.metadata) as Record<string, string>,
    description: row.description,
    payment: row.paymentId,
    url: row.url,
    success_url: row.successUrl,
    cancel_url: row.cancelUrl,
    expires_at: formatEventTimestamp(row.expiresAt),
    completed_at: row.completedAt ? formatEventTimestamp(row.completedAt) : null,
    merchant_id: row.merchantId,
    environment: row.environment,
    created_at: formatEventTimestamp(row.createdAt),
    updated_at: formatEventTimestamp(row.updatedAt),
  };
}

const invalid = (param: string, message: string) => new AppError('invalid_request', 'parameter_invalid', message, { param });

/** The largest amount a payment may have (Stripe caps amounts too; ours fits numeric(11,2)). */
export const MAX_AMOUNT = '999999999.99';
const AMOUNT = /^(0|[1-9][0-9]{0,8})\.[0-9]{2}$/;
export const ASSET_CODE = /^[A-Z0-9]+(-[A-Z0-9]+)*\.[A-Z0-9]+(-[A-Z0-9]+)*$/;

/** "25.00": digits, a point and exactly two decimals; more than 0 and at most MAX_AMOUNT. */
export function validateAmount(amount: string, param = 'amount'): string {
  if (!AMOUNT.test(amount)) {
    throw invalid(
      param,
      `Invalid '${param}': send a decimal string with exactly two decimals and no leading zeros, from "0.01" to "${MAX_AMOUNT}" (e.g. "25.00").`,
    );
  }
  if (/^0\.00$/.test(amount)) throw invalid(param, `Invalid '${param}': the amount must be more than "0.00".`);
  return amount;
}

/** `<ASSET>.<NETWORK>`: upper-case letters, digits and inner `-`, e.g. "USDC.ETH", "USDC-E.ARB". */
export function validateAssetCode(assetCode: string, param = 'asset_code'): string {
  if (assetCode.length > 64 || !ASSET_CODE.test(assetCode)) {
    throw invalid(
      param,
      `Invalid '${param}': use <ASSET>.<NETWORK> in upper-case letters, digits and '-', e.g. "USDC.ETH" or "USDC-E.ARB".`,
    );
  }
  return assetCode;
}

export const DESCRIPTION_MAX = 500;

/**
 * What the customer pays for: up to 500 characters of text (line breaks allowed), no other
 * control characters. Rendered as text wherever it is shown.
 */
export function validateDescription(description: unknown, param = 'description'): string | null {
  if (description === undefined || description === null) return null;
  if (typeof description !== 'string') throw invalid(param, `Invalid '${param}': send a string (what the customer pays for).`);
  if (chars(description) > DESCRIPTION_MAX) throw invalid(param, `Invalid '${param}': at most ${DESCRIPTION_MAX} characters.`);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u0009\u000b-\u001f\u007f]/.test(description))
    throw invalid(param, `Invalid '${param}': control characters (other than line breaks) are not allowed.`);
  return description.length ? description : null;
}

export const METADATA_LIMITS = { keys: 50, keyLength: 40, valueLength: 500 } as const;

/** Characters as a person counts them (code points), like JSON Schema's maxLength. */
const chars = (s: string) => [...s].length;

/**
 * Stripe's metadata limits: at most 50 keys, keys 1 to 40 characters, string values up to 500
 * characters. Returns the JSON text that is stored and echoed.
 */
export function serialiseMetadata(metadata: unknown, param = 'metadata'): string {
  if (metadata === undefined) return '{}';
  if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata))
    throw invalid(param, `'${param}' must be an object of string values.`);
  const entries = Object.entries(metadata as Record<string, unknown>);
  if (entries.length > METADATA_LIMITS.keys)
    throw invalid(param, `'${param}' has ${entries.length} keys; at most ${METADATA_LIMITS.keys} are allowed.`);
  for (const [k, v] of entries) {
    if (chars(k) < 1 || chars(k) > METADATA_LIMITS.keyLength)
      throw invalid(`${param}[${k.slice(0, 50)}]`, `Metadata keys must be 1 to ${METADATA_LIMITS.keyLength} characters.`);
    if (typeof v !== 'string') throw invalid(`${param}[${k}]`, `Metadata values must be strings; '${param}[${k}]' is not.`);
    if (chars(v) > METADATA_LIMITS.valueLength)
      throw invalid(
        `${param}[${k}]`,
        `Metadata values must be at most ${METADATA_LIMITS.valueLength} characters; '${param}[${k}]' has ${chars(v)}.`,
      );
  }
  return JSON.stringify(metadata);
}

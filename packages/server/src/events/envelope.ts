import { API_VERSION, eventFamily, formatEventTimestamp, isEventType, type WebhookEvent } from '@payhooks/contract';
import { AppError } from '../errors.ts';
import type { Environment } from '../db/schema.ts';

export interface EventInput {
  type: string;
  merchantId: string;
  environment: Environment;
  /** The resource the event is about: `data.object` (spec 2.1). */
  object: Record<string, unknown>;
}

const invalid = (param: string, message: string) => new AppError('invalid_request', 'parameter_invalid', message, { param });

/**
 * Checks what spec 2.1, 2.2 and 6.1 fix about an event before it is published: a catalog type,
 * and for payment.* events a full Payment resource with its metadata (6.1 rule 2).
 */
export function validateEventInput(input: EventInput): void {
  if (!isEventType(input.type)) {
    throw new AppError('invalid_request', 'event_type_unknown', `'${input.type}' is not an event type of the catalog (spec 6.1).`, { param: 'type' });
  }
  const o = input.object;
  if (eventFamily(input.type) === 'payment') {
    if (o.object !== 'payment') throw invalid('data.object.object', "A payment.* event carries a Payment: data.object.object must be 'payment'.");
    if (typeof o.id !== 'string' || !/^pay_[A-Za-z0-9_]+$/.test(o.id)) throw invalid('data.object.id', 'data.object.id must be a payment id (pay_…).');
    if (typeof o.status !== 'string' || o.status === '') throw invalid('data.object.status', 'data.object.status must be the payment status.');
    if (typeof o.amount !== 'string' || !/^\d+\.\d{2}$/.test(o.amount)) throw invalid('data.object.amount', 'data.object.amount must be a decimal string with two decimals, e.g. "10.00".');
    if (typeof o.asset_code !== 'string' || !/^[A-Za-z0-9]+\.[A-Za-z0-9]+$/.test(o.asset_code)) throw invalid('data.object.asset_code', 'data.object.asset_code must be <ASSET>.<NETWORK>, e.g. "USDC.ETH".');
    if (!o.metadata || typeof o.metadata !== 'object' || Array.isArray(o.metadata)) throw invalid('data.object.metadata', 'data.object.metadata must be an object (the merchant\'s metadata, echoed unchanged).');
  }
}

/**
 * The envelope of spec 2.1, fields in the spec's order, and its one serialisation. The text
 * returned is what every attempt sends, byte for byte.
 */
export function buildEnvelope(id: string, input: EventInput, createdAt: Date): { envelope: WebhookEvent; body: string } {
  const envelope: WebhookEvent = {
    id,
    object: 'event',
    type: input.type,
    api_version: API_VERSION,
    environment: input.environment,
    merchant_id: input.merchantId,
    created_at: formatEventTimestamp(createdAt),
    data: { object: input.object },
  };
  return { envelope, body: JSON.stringify(envelope) };
}

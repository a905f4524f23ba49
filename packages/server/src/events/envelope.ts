import { API_VERSION, eventFamily, formatEventTimestamp, isEventType, type WebhookEvent } from '@payhooks/contract';
import { AppError } from '../errors.ts';
import type { Environment } from '../db/schema.ts';
import { ASSET_CODE } from '../payments/objects.ts';
import { SESSION_EVENT_STATUS, statusOfPaymentEvent } from '../payments/state-machine.ts';

export interface EventInput {
  type: string;
  merchantId: string;
  environment: Environment;
  /** The resource the event is about: `data.object` (spec 2.1). */
  object: Record<string, unknown>;
}

const invalid = (param: string, message: string) => new AppError('invalid_request', 'parameter_invalid', message, { param });

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
const isStringMap = (v: unknown) =>
  !!v && typeof v === 'object' && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string');

/**
 * Checks what spec 2.1, 2.2 and 6.1 fix about an event before it is published: a catalog type;
 * for payment.* events a full Payment resource with its metadata (6.1 rule 2) whose status is
 * the type's (`payment.succeeded` carries a `succeeded` Payment); for checkout_session.* events
 * our documented checkout session object (docs/payments.md) in the type's status.
 */
export function validateEventInput(input: EventInput): void {
  if (!isEventType(input.type)) {
    throw new AppError('invalid_request', 'event_type_unknown', `'${input.type}' is not an event type of the catalog (spec 6.1).`, {
      param: 'type',
    });
  }
  const o = input.object;
  if (eventFamily(input.type) === 'payment') {
    if (o.object !== 'payment')
      throw invalid('data.object.object', "A payment.* event carries a Payment: data.object.object must be 'payment'.");
    if (typeof o.id !== 'string' || !/^pay_[A-Za-z0-9_]+$/.test(o.id))
      throw invalid('data.object.id', 'data.object.id must be a payment id (pay_…).');
    const status = statusOfPaymentEvent(input.type);
    if (o.status !== status)
      throw invalid(
        'data.object.status',
        `A ${input.type} event carries a Payment whose status is '${status}'; data.object.status is ${JSON.stringify(o.status ?? null)}.`,
      );
    if (typeof o.amount !== 'string' || !/^\d+\.\d{2}$/.test(o.amount))
      throw invalid('data.object.amount', 'data.object.amount must be a decimal string with two decimals, e.g. "10.00".');
    if (typeof o.asset_code !== 'string' || !ASSET_CODE.test(o.asset_code))
      throw invalid(
        'data.object.asset_code',
        'data.object.asset_code must be <ASSET>.<NETWORK> in upper-case letters, digits and -, e.g. "USDC.ETH".',
      );
    if (!o.metadata || typeof o.metadata !== 'object' || Array.isArray(o.metadata))
      throw invalid('data.object.metadata', "data.object.metadata must be an object (the merchant's metadata, echoed unchanged).");
  } else if (eventFamily(input.type) === 'webhook_endpoint') {
    validateEndpointObject(input.type, o);
  } else {
    validateSessionObject(input.type as keyof typeof SESSION_EVENT_STATUS, o);
  }
}

/**
 * An operational event carries the endpoint as the API shows it: never a secret, whoever
 * publishes it.
 */
function validateEndpointObject(type: string, o: Record<string, unknown>): void {
  if (o.object !== 'webhook_endpoint')
    throw invalid('data.object.object', `A ${type} event carries a webhook endpoint: data.object.object must be 'webhook_endpoint'.`);
  if (typeof o.id !== 'string' || !/^we_[A-Za-z0-9]+$/.test(o.id))
    throw invalid('data.object.id', 'data.object.id must be a webhook endpoint id (we_…).');
  if ('secret' in o || 'secret_ciphertext' in o)
    throw invalid('data.object.secret', 'An event never carries a signing secret: remove data.object.secret.');
  if (type === 'webhook_endpoint.disabled' && o.status !== 'disabled')
    throw invalid(
      'data.object.status',
      `A ${type} event carries a disabled endpoint; data.object.status is ${JSON.stringify(o.status ?? null)}.`,
    );
}

/** The checkout session object (docs/payments.md) a checkout_session.* event must carry. */
function validateSessionObject(type: keyof typeof SESSION_EVENT_STATUS, o: Record<string, unknown>): void {
  const p = (name: string) => `data.object.${name}`;
  const need = (ok: boolean, name: string, what: string) => {
    if (!ok) throw invalid(p(name), `A ${type} event carries a checkout session: ${p(name)} must be ${what}.`);
  };
  need(o.object === 'checkout_session', 'object', "'checkout_session'");
  need(typeof o.id === 'string' && /^cs_[A-Za-z0-9_]+$/.test(o.id), 'id', 'a checkout session id (cs_…)');
  need(o.status === SESSION_EVENT_STATUS[type], 'status', `'${SESSION_EVENT_STATUS[type]}'`);
  need(typeof o.amount === 'string' && /^\d+\.\d{2}$/.test(o.amount), 'amount', 'a decimal string with two decimals');
  need(typeof o.asset_code === 'string' && ASSET_CODE.test(o.asset_code), 'asset_code', '<ASSET>.<NETWORK>, e.g. "USDC.ETH"');
  need(isStringMap(o.metadata), 'metadata', 'an object of string values');
  need(typeof o.payment === 'string' && /^pay_[A-Za-z0-9_]+$/.test(o.payment), 'payment', 'the payment id (pay_…)');
  need(typeof o.url === 'string', 'url', 'the hosted page URL');
  need(typeof o.success_url === 'string', 'success_url', 'a URL');
  need(o.cancel_url === null || typeof o.cancel_url === 'string', 'cancel_url', 'a URL or null');
  need(typeof o.expires_at === 'string' && TIMESTAMP.test(o.expires_at), 'expires_at', 'a timestamp YYYY-MM-DDThh:mm:ssZ');
  need(
    o.completed_at === null || (typeof o.completed_at === 'string' && TIMESTAMP.test(o.completed_at)),
    'completed_at',
    'a timestamp or null',
  );
  if (type === 'checkout_session.completed') need(o.completed_at !== null, 'completed_at', 'the completion time');
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

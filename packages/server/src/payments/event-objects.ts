import { type EventType, eventFamily } from '@payhooks/contract';
import { AppError } from '../errors.ts';
import { ASSET_CODE } from './objects.ts';
import { SESSION_EVENT_STATUS, statusOfPaymentEvent } from './state-machine.ts';

const invalid = (param: string, message: string) => new AppError('invalid_request', 'parameter_invalid', message, { param });
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
const isStringMap = (v: unknown) =>
  !!v && typeof v === 'object' && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string');

/**
 * What the contract fixes about the resource of a payment or checkout-session event, for events
 * published from outside this process (the internal API): a payment.* event carries the full
 * Payment with its metadata (spec 6.1 rule 2) in the type's status (`payment.succeeded` carries a
 * `succeeded` Payment); a checkout_session.* event our documented checkout session
 * (docs/payments.md) in the type's status. The payments domain builds its own events from rows
 * that already hold.
 */
export function validatePaymentFamilyObject(type: EventType, o: Record<string, unknown>): void {
  if (eventFamily(type) === 'payment') validatePaymentObject(type, o);
  else if (eventFamily(type) === 'checkout_session') validateSessionObject(type as keyof typeof SESSION_EVENT_STATUS, o);
}

function validatePaymentObject(type: EventType, o: Record<string, unknown>): void {
  if (o.object !== 'payment')
    throw invalid('data.object.object', "A payment.* event carries a Payment: data.object.object must be 'payment'.");
  if (typeof o.id !== 'string' || !/^pay_[A-Za-z0-9_]+$/.test(o.id))
    throw invalid('data.object.id', 'data.object.id must be a payment id (pay_…).');
  const status = statusOfPaymentEvent(type);
  if (o.status !== status)
    throw invalid(
      'data.object.status',
      `A ${type} event carries a Payment whose status is '${status}'; data.object.status is ${JSON.stringify(o.status ?? null)}.`,
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
}

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

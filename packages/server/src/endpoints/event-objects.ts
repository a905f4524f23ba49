import { type EventType, eventFamily } from '@payhooks/contract';
import { AppError } from '../errors.ts';
import { OPERATOR_MERCHANT_ID } from '../scope.ts';

const invalid = (param: string, message: string) => new AppError('invalid_request', 'parameter_invalid', message, { param });

/**
 * An operational event (webhook_endpoint.*) carries the endpoint as the API shows it, whoever
 * publishes it: a webhook_endpoint object, never a secret.
 */
export function validateEndpointFamilyObject(type: EventType, o: Record<string, unknown>): void {
  if (eventFamily(type) !== 'webhook_endpoint') return;
  if (o.object !== 'webhook_endpoint')
    throw invalid('data.object.object', `A ${type} event carries a webhook endpoint: data.object.object must be 'webhook_endpoint'.`);
  if (typeof o.id !== 'string' || !/^we_[A-Za-z0-9]+$/.test(o.id))
    throw invalid('data.object.id', 'data.object.id must be a webhook endpoint id (we_…).');
  // What data.object.status must be (as payhooks.event_types says for the SQL publish).
  const want = type === 'webhook_endpoint.disabled' ? 'disabled' : 'enabled';
  if (o.status !== want)
    throw invalid(
      'data.object.status',
      `A ${type} event carries ${want === 'disabled' ? 'a disabled' : 'an enabled'} endpoint; data.object.status is ${JSON.stringify(o.status ?? null)}.`,
    );
}

/**
 * The operator Platform's merchant publishes only health events to operator endpoints
 * (endpoints/endpoint-events.ts): the internal API answers it as the unknown merchant it is to
 * every other caller, so nothing else reaches the payment service's own alerting endpoints.
 */
export function refuseOperatorMerchant(merchantId: string, param: string): void {
  if (merchantId === OPERATOR_MERCHANT_ID)
    throw new AppError('invalid_request', 'resource_missing', `No such merchant: '${merchantId}'.`, { param });
}

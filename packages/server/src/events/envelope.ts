import { API_VERSION, formatEventTimestamp, isEventType, type WebhookEvent } from '@payhooks/contract';
import { AppError } from '../errors.ts';
import type { Environment } from '../db/schema.ts';

export interface EventInput {
  type: string;
  merchantId: string;
  environment: Environment;
  /** The resource the event is about: `data.object` (spec 2.1). */
  object: Record<string, unknown>;
}

/**
 * What every event must be before it is published, whatever its type: a type of the catalog, and a
 * resource (`data.object`) that names what it is and carries no signing secret. What a resource
 * of a given family must hold is its domain's to check (payments/event-objects.ts,
 * endpoints/event-objects.ts): this module stays generic over event types, like delivery/.
 */
export function validateEventInput(input: EventInput): void {
  if (!isEventType(input.type)) {
    throw new AppError('invalid_request', 'event_type_unknown', `'${input.type}' is not an event type of the catalog (spec 6.1).`, {
      param: 'type',
    });
  }
  const o = input.object;
  if (!o || typeof o !== 'object' || Array.isArray(o))
    throw new AppError('invalid_request', 'parameter_invalid', 'data.object must be an object: the resource the event is about.', {
      param: 'data.object',
    });
  if ('secret' in o || 'secret_ciphertext' in o)
    throw new AppError('invalid_request', 'parameter_invalid', 'An event never carries a signing secret: remove data.object.secret.', {
      param: 'data.object.secret',
    });
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

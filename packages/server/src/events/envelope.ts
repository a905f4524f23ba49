import { API_VERSION, EVENT_MAX_BYTES, formatEventTimestamp, isEventType, type WebhookEvent } from '@payhooks/contract';
import { AppError } from '../errors.ts';
import type { Environment } from '../db/schema.ts';

export interface EventInput {
  type: string;
  merchantId: string;
  environment: Environment;
  /** The resource the event is about: `data.object` (spec 2.1). */
  object: Record<string, unknown>;
  /**
   * What an error names this event in the caller's words (`events[3]` in a batch request), so a
   * refusal says which event it is about; without it, "the event".
   */
  label?: string | undefined;
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
 * returned is what every attempt sends, byte for byte. Every publish builds it here, so this is
 * where the size limit holds whatever the route (a batch's body limit is for the whole batch).
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
  const body = JSON.stringify(envelope);
  // Cheap test first: a UTF-8 byte is at least one UTF-16 unit and at most three per unit.
  if (body.length * 3 > EVENT_MAX_BYTES) {
    const bytes = Buffer.byteLength(body);
    if (bytes > EVENT_MAX_BYTES) throw eventTooLarge(input.label, bytes);
  }
  return { envelope, body };
}

function eventTooLarge(label: string | undefined, bytes: number): AppError {
  const name = label === undefined ? 'The event' : `Event ${label}`;
  return new AppError(
    'payload_too_large',
    'body_too_large',
    `${name} is ${bytes} bytes once serialised; an event is at most ${EVENT_MAX_BYTES} bytes (${EVENT_MAX_BYTES / 1024} KiB). Put less in data.object: receivers fetch large details through the API.`,
    { param: label === undefined ? 'data.object' : `${label}[data][object]` },
  );
}

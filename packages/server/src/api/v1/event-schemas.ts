import { Type, type TSchema, type TUnsafe } from '@sinclair/typebox';
import { API_VERSION, EVENT_TYPES, WILDCARD_EVENT_TYPE, type EventType, type WebhookEvent } from '@payhooks/contract';
import { Timestamp } from './schemas.ts';

/**
 * A JSON Schema `enum` of strings. TypeBox's union of literals becomes `anyOf` of `const`s; an
 * `enum` is what OpenAPI tools turn into a string-literal type, and what a validation error can
 * quote in full ("must be one of: …").
 */
export const StringEnum = <T extends readonly string[]>(values: T, options: Record<string, unknown> = {}): TUnsafe<T[number]> =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });

/**
 * The event-type catalog as a schema: from @payhooks/contract's EVENT_TYPES, the one list the
 * code and the documents share. `x-error-code` keeps the API's stable code for an unknown type.
 */
// Typed `string` inside the server (stored subscriptions and events are read back as strings);
// the schemas still carry the enum, which is what validation and the documents use.
export const EventTypeSchema = Type.Unsafe<string>(
  StringEnum(EVENT_TYPES, {
    $id: 'EventType',
    description: 'An event type of the catalog. The catalog grows over time: a receiver acknowledges and ignores types it does not handle.',
    'x-error-code': 'event_type_unknown',
  }),
);

/** An endpoint's subscription entry: a catalog type or `*` (every type, including later ones). */
export const EnabledEventTypeSchema = Type.Unsafe<string>(
  StringEnum([WILDCARD_EVENT_TYPE, ...EVENT_TYPES] as const, {
    $id: 'EnabledEventType',
    description: `'${WILDCARD_EVENT_TYPE}' (every type, including types added later) or an event type of the catalog.`,
    'x-error-code': 'event_type_unknown',
  }),
);

/** The same enum inline, for query strings (parameters are documented without references). */
export const EventTypeQuery = (description: string) => StringEnum(EVENT_TYPES, { description, 'x-error-code': 'event_type_unknown' });

export type { EventType };

/**
 * The event envelope: the body of every delivery, as stored and as `GET /api/v1/events` returns
 * it. `data.object` is the resource the event is about, in its API shape at the time of the
 * event (a Payment, a CheckoutSession, or a WebhookEndpoint for webhook_endpoint.disabled).
 */
export const EventSchema = Type.Unsafe<WebhookEvent>(
  Type.Object(
    {
      id: Type.String({ description: 'Prefix evt_. The same id on every delivery and retry of the event: deduplicate on it.' }),
      object: Type.Literal('event'),
      type: Type.Ref('EventType') as unknown as TSchema,
      api_version: Type.String({ description: `The version of the envelope and object shapes (currently ${API_VERSION}).` }),
      environment: Type.Union([Type.Literal('live'), Type.Literal('sandbox')]),
      merchant_id: Type.String({ description: 'The merchant (Platform) the event belongs to.' }),
      created_at: Timestamp,
      data: Type.Object({
        object: Type.Unsafe({
          oneOf: [{ $ref: 'Payment' }, { $ref: 'CheckoutSession' }, { $ref: 'WebhookEndpoint' }],
          description:
            'The object the event is about: a Payment (payment.*), a CheckoutSession (checkout_session.*) or a WebhookEndpoint (webhook_endpoint.*), without secrets.',
        }),
      }),
    },
    { $id: 'Event', description: 'The event envelope: the JSON body of every delivery.' },
  ),
);

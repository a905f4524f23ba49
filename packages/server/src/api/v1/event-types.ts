import { Type, type TSchema } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { API_VERSION, EVENT_TYPES, eventFamily, type EventType } from '@payhooks/contract';
import { COMPONENT_EXAMPLES } from '../openapi/examples.ts';
import { EnabledEventTypeSchema, EventSchema, EventTypeSchema } from './event-schemas.ts';
import { CheckoutSessionSchema, PaymentSchema } from './payment-schemas.ts';
import { PublicKeySchema, WebhookEndpointSchema } from './webhook-endpoints.ts';

/**
 * The event catalog for merchants (`GET /api/v1/event_types`, and the portal's Event types page):
 * each type with what it means, which change sends it, the JSON Schema of its event (the one the
 * OpenAPI document uses, with `data.object` narrowed to the type's object and status, every
 * reference resolved so it stands alone) and an example that the schema accepts (a test checks).
 */
const ABOUT: Record<EventType, { description: string; sent_when: string }> = {
  'payment.created': {
    description: 'A payment was created.',
    sent_when: 'POST /api/v1/payments, or a checkout session created its payment.',
  },
  'payment.requires_action': {
    description: 'The customer must do something before the payment can go on.',
    sent_when: 'The payment moved to requires_action.',
  },
  'payment.under_review': { description: 'The payment is being reviewed.', sent_when: 'The payment moved to under_review.' },
  'payment.processing': {
    description: 'The payment is on its way; no money has settled yet.',
    sent_when: 'The payment moved to processing (the hosted page, Pay or Fail, before the outcome).',
  },
  'payment.succeeded': {
    description: 'The payment settled: credit the customer (once, on payment.id).',
    sent_when: 'The payment moved to succeeded.',
  },
  'payment.failed': { description: 'The payment failed; nothing was paid.', sent_when: 'The payment moved to failed.' },
  'payment.cancelled': { description: 'The payment was cancelled before it was paid.', sent_when: 'POST /api/v1/payments/:id/cancel.' },
  'payment.expired': {
    description: 'The payment was not paid in time.',
    sent_when: 'Its checkout session expired while the payment was created or requires_action.',
  },
  'checkout_session.completed': {
    description: 'The customer completed the hosted checkout; its payment succeeded.',
    sent_when: 'The payment of an open checkout session succeeded.',
  },
  'checkout_session.expired': {
    description: 'The checkout session ended unpaid.',
    sent_when: 'POST /api/v1/checkout_sessions/:id/expire, or its expires_at passed.',
  },
  'webhook_endpoint.disabled': {
    description: 'One of your endpoints was disabled because every delivery to it kept failing.',
    sent_when: 'Auto-disable (PAYHOOKS_AUTO_DISABLE_AFTER of failures); sent to your other endpoints.',
  },
  'webhook_endpoint.failing': {
    description: 'One of your endpoints fails every attempt; sent again as a warning at 50 and 90 % of the way to auto-disable.',
    sent_when: 'Its health turned failing, or reached a warning (health.warning); sent to your other endpoints.',
  },
  'webhook_endpoint.recovered': {
    description: 'One of your failing endpoints answered 2xx again.',
    sent_when: 'The first successful attempt after it was failing; sent to your other endpoints.',
  },
};

/** The named schemas an event's parts refer to, to resolve `$ref`s into one self-contained schema. */
const NAMED: Record<string, TSchema> = {
  EventType: EventTypeSchema,
  EnabledEventType: EnabledEventTypeSchema,
  PublicKey: PublicKeySchema,
  Payment: PaymentSchema,
  CheckoutSession: CheckoutSessionSchema,
  WebhookEndpoint: WebhookEndpointSchema,
};

/** `schema` with every `$ref` to a named schema replaced by that schema, and TypeBox's symbols dropped. */
function resolved(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(resolved);
  if (schema === null || typeof schema !== 'object') return schema;
  const s = schema as Record<string, unknown>;
  if (typeof s.$ref === 'string') {
    const { $ref, ...rest } = s;
    const target = NAMED[$ref.replace('#/components/schemas/', '')];
    if (!target) throw new Error(`event schema: unresolved $ref ${$ref}`);
    const { $id: _id, ...body } = resolved(target) as Record<string, unknown>;
    return { ...body, ...rest };
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(s)) if (k !== '$id') out[k] = resolved(v);
  return out;
}

const STATUS_OF: Partial<Record<EventType, string>> = {
  'checkout_session.completed': 'complete',
  'checkout_session.expired': 'expired',
  'webhook_endpoint.disabled': 'disabled',
  'webhook_endpoint.failing': 'enabled',
  'webhook_endpoint.recovered': 'enabled',
};
const statusOf = (type: EventType) => STATUS_OF[type] ?? type.slice(type.indexOf('.') + 1);
const objectSchemaOf = (type: EventType): TSchema =>
  ({ payment: PaymentSchema, checkout_session: CheckoutSessionSchema, webhook_endpoint: WebhookEndpointSchema })[eventFamily(type)];

function schemaOf(type: EventType): Record<string, unknown> {
  const envelope = resolved(EventSchema) as { properties: Record<string, unknown> } & Record<string, unknown>;
  const object = resolved(objectSchemaOf(type)) as { properties: Record<string, unknown> } & Record<string, unknown>;
  const { $id: _id, ...objectBody } = object;
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    ...envelope,
    title: `${type} event`,
    properties: {
      ...envelope.properties,
      type: { type: 'string', const: type },
      data: {
        type: 'object',
        required: ['object'],
        properties: {
          object: { ...objectBody, properties: { ...objectBody.properties, status: { type: 'string', const: statusOf(type) } } },
        },
      },
    },
  };
}

function exampleOf(type: EventType): Record<string, unknown> {
  const base = COMPONENT_EXAMPLES.Event as Record<string, unknown>;
  const family = eventFamily(type);
  const object: Record<string, unknown> = {
    ...(COMPONENT_EXAMPLES[
      { payment: 'Payment', checkout_session: 'CheckoutSession', webhook_endpoint: 'WebhookEndpoint' }[family]
    ] as Record<string, unknown>),
    status: statusOf(type),
  };
  if (type === 'checkout_session.expired') object.completed_at = null;
  if (type === 'webhook_endpoint.disabled')
    Object.assign(object, {
      disabled_reason: 'failing',
      disabled_at: '2026-02-05T12:00:00Z',
      health: { state: 'disabled', since: '2026-02-05T12:00:00Z', warning: null, disables_at: null },
    });
  if (type === 'webhook_endpoint.failing')
    object.health = { state: 'failing', since: '2026-01-31T12:00:00Z', warning: 50, disables_at: '2026-02-05T12:00:00Z' };
  if (type === 'webhook_endpoint.recovered')
    object.health = { state: 'recovered', since: '2026-02-01T09:30:00Z', warning: null, disables_at: null };
  return { ...base, type, api_version: API_VERSION, data: { object } };
}

export interface EventTypeEntry {
  object: 'event_type';
  type: EventType;
  description: string;
  sent_when: string;
  schema: Record<string, unknown>;
  example: Record<string, unknown>;
}

/** The whole catalog, built once per process (it changes only with a release). */
let catalog: EventTypeEntry[] | undefined;
export function eventTypeCatalog(): EventTypeEntry[] {
  catalog ??= EVENT_TYPES.map((type) => ({
    object: 'event_type' as const,
    type,
    ...ABOUT[type],
    schema: schemaOf(type),
    example: exampleOf(type),
  }));
  return catalog;
}

const EventTypeEntrySchema = Type.Object(
  {
    object: Type.Literal('event_type'),
    type: Type.Ref('EventType') as unknown as TSchema,
    description: Type.String(),
    sent_when: Type.String({ description: 'Which change sends it.' }),
    schema: Type.Object({}, { additionalProperties: true, description: 'The JSON Schema (2020-12) of the whole event, self-contained.' }),
    example: Type.Object({}, { additionalProperties: true, description: 'An event of this type, valid against `schema`.' }),
  },
  { description: 'An event type of the catalog.' },
);

/** `GET /api/v1/event_types`: every type a receiver may get, for code generators and people. */
export const eventTypeRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/event_types',
    {
      schema: {
        tags: ['events'],
        security: [{ bearerAuth: [] }],
        operationId: 'listEventTypes',
        summary: 'The event catalog: each type with what it means, when it is sent, its JSON Schema and an example',
        response: {
          200: Type.Object(
            { object: Type.Literal('list'), data: Type.Array(EventTypeEntrySchema), has_more: Type.Boolean() },
            { description: 'The whole catalog, in one page.' },
          ),
        },
      },
    },
    async () => ({ object: 'list' as const, data: eventTypeCatalog(), has_more: false }),
  );
};

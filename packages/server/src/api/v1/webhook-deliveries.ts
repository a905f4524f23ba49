import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import { CreatedRange, IdParams, ListOf, Timestamp, createdBound, errorResponses } from './schemas.ts';
import { EventTypeSchema, StringEnum } from './event-schemas.ts';

export const DELIVERY_STATES = ['pending', 'delivered', 'failed_retrying', 'exhausted', 'cancelled'] as const;
const State = StringEnum(DELIVERY_STATES, {
  description:
    'pending: waiting for its first attempt; failed_retrying: failed, retry scheduled; exhausted: every retry failed; cancelled: its endpoint was deleted.',
});

export const AttemptSchema = Type.Object(
  {
    id: Type.String({ description: 'Prefix wha_' }),
    object: Type.Literal('delivery_attempt'),
    attempt_number: Type.Integer(),
    trigger: Type.Union([Type.Literal('automatic'), Type.Literal('manual')]),
    succeeded: Type.Boolean(),
    started_at: Timestamp,
    duration_ms: Type.Integer(),
    status_code: Type.Union([Type.Integer(), Type.Null()]),
    response_body: Type.Union([Type.String({ description: 'First 16 KiB of the answer, as text.' }), Type.Null()]),
    error_kind: Type.Union([
      Type.String({
        description:
          "http_status, timeout, connection_refused, …; endpoint_disabled: the attempt fell due while the endpoint was disabled and no request was sent (it still counts toward the 8); authentication_failed: the endpoint's OAuth 2.0 token endpoint gave no access token, so no request was sent (error_message says why); or interrupted: its worker stopped mid-attempt, so the receiver may have received it.",
      }),
      Type.Null(),
    ]),
    error_message: Type.Union([Type.String(), Type.Null()]),
    worker_id: Type.Union([Type.String({ description: 'The worker that held an interrupted attempt.' }), Type.Null()]),
    request_headers: Type.Union(
      [
        Type.Object(
          {
            'Content-Type': Type.String(),
            'User-Agent': Type.Optional(Type.String({ description: 'HTTP requests only: a broker message has no User-Agent.' })),
            'Service-Event-Id': Type.String(),
            'Service-Signature': Type.String({
              description: 't=<unix seconds>,v1=<hex>[,v1=<hex>]: the signature this attempt was sent with.',
            }),
            traceparent: Type.Optional(
              Type.String({ description: "W3C trace context of the attempt's span: only when the service traced it (OpenTelemetry on)." }),
            ),
            'webhook-id': Type.Optional(Type.String({ description: 'Standard Webhooks endpoints only: the event id.' })),
            'webhook-timestamp': Type.Optional(
              Type.String({ description: "Standard Webhooks endpoints only: Unix seconds, the same t as Service-Signature's." }),
            ),
            'webhook-signature': Type.Optional(
              Type.String({ description: 'Standard Webhooks endpoints only: v1,<base64> per live secret, space-separated.' }),
            ),
          },
          {
            additionalProperties: Type.String({ description: "The endpoint's custom headers, as they were when the attempt was sent." }),
          },
        ),
        Type.Null(),
      ],
      {
        description:
          "The headers of the request as sent (for a broker endpoint, the message headers, with Content-Type as the message content type), the endpoint's Standard Webhooks and custom headers included; null when no request was made (endpoint_disabled, a URL refused before connecting, interrupted) or for attempts logged before this field.",
      },
    ),
    rate_limited_ms: Type.Union([Type.Integer(), Type.Null()], {
      description:
        "Milliseconds the attempt waited for the endpoint's max_requests_per_second before it was sent (0: it didn't wait); null when the endpoint had no cap.",
    }),
  },
  { $id: 'DeliveryAttempt', description: 'One HTTP attempt of a delivery, as the delivery log records it.' },
);

export const DeliverySchema = Type.Object(
  {
    id: Type.String({ description: 'Prefix whd_' }),
    object: Type.Literal('webhook_delivery'),
    event_id: Type.String(),
    endpoint_id: Type.String(),
    state: State,
    cancel_reason: Type.Union([
      Type.String({ description: 'Why a cancelled delivery ended: endpoint_deleted, or manual (cancelled in the Merchant Portal).' }),
      Type.Null(),
    ]),
    attempt_count: Type.Integer(),
    next_attempt_at: Type.Union([Timestamp, Type.Null()], {
      description: 'Null when no attempt is scheduled: the delivery is finished.',
    }),
    last_attempt_at: Type.Union([Timestamp, Type.Null()]),
    created_at: Timestamp,
    waiting_for: Type.Union(
      [
        Type.Object({
          delivery_id: Type.String({ description: 'The delivery this one waits for (prefix whd_).' }),
          event_id: Type.String({ description: "That delivery's event." }),
        }),
        Type.Null(),
      ],
      {
        description:
          'Only on endpoints with delivery_order per_object: the earliest unfinished delivery of the same endpoint and object, which this one waits for; null when it is not held back.',
      },
    ),
    attempts: Type.Array(Type.Ref(AttemptSchema), { description: 'Every attempt so far, oldest first.' }),
  },
  { $id: 'WebhookDelivery', description: 'One event for one endpoint, with its attempt log.' },
);

/** The delivery log's filters and pages; the portal's delivery log takes the same. */
export const DeliveryFilters = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  starting_after: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  endpoint_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  event_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  state: Type.Optional(State),
  type: Type.Optional(Type.Ref(EventTypeSchema, { description: 'Only deliveries of this event type.' })),
  ...CreatedRange,
};

export const ListDeliveriesQuery = Type.Object(DeliveryFilters, { additionalProperties: false });

/** The service's filters from a query with these fields. */
export function deliveryFilters(q: Static<typeof ListDeliveriesQuery>) {
  return {
    limit: q.limit ?? 20,
    startingAfter: q.starting_after,
    endpointId: q.endpoint_id,
    eventId: q.event_id,
    state: q.state as never,
    type: q.type,
    createdGte: createdBound(q['created[gte]'], 'created[gte]'),
    createdLt: createdBound(q['created[lt]'], 'created[lt]'),
  };
}

/** `/api/v1/webhook_deliveries`: the delivery log (spec 2.4), read-only (spec 4.1: no replay endpoint yet). */
export const webhookDeliveryRoutes =
  (ctx: ServiceContext): FastifyPluginAsyncTypebox =>
  async (app) => {
    const tags = ['webhook_deliveries'];
    const security = [{ bearerAuth: [] }];
    app.get(
      '/webhook_deliveries',
      {
        schema: {
          tags,
          security,
          operationId: 'listWebhookDeliveries',
          summary: 'List deliveries with their attempts (newest first)',
          querystring: ListDeliveriesQuery,
          response: { 200: ListOf(Type.Ref(DeliverySchema), 'A page of deliveries.') },
        },
      },
      async (req) => ctx.deliveries.list(req.scope, deliveryFilters(req.query)),
    );
    app.get(
      '/webhook_deliveries/:id',
      {
        schema: {
          tags,
          security,
          operationId: 'retrieveWebhookDelivery',
          summary: 'Retrieve a delivery and its attempt log',
          params: IdParams,
          response: { 200: Type.Ref(DeliverySchema, { description: 'The delivery.' }), ...errorResponses(404) },
        },
      },
      async (req) => ctx.deliveries.get(req.scope, req.params.id),
    );
  };

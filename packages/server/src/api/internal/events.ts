import { EVENT_MAX_BYTES, type EventType } from '@payhooks/contract';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import { PublishCoalescer } from '../../events/publish-coalescer.ts';
import { validateEndpointFamilyObject, refuseOperatorMerchant } from '../../endpoints/event-objects.ts';
import { validatePaymentFamilyObject } from '../../payments/event-objects.ts';
import { EventSchema, EventTypeSchema } from '../v1/event-schemas.ts';
import { asStored } from '../v1/events.ts';

const REQUEST_MARGIN_BYTES = 16 * 1024;

export const PublishBody = Type.Object(
  {
    type: Type.Ref(EventTypeSchema),
    merchant_id: Type.String({ minLength: 1, maxLength: 64 }),
    environment: Type.Union([Type.Literal('live'), Type.Literal('sandbox')]),
    data: Type.Object(
      {
        object: Type.Object(
          {},
          {
            additionalProperties: true,
            description:
              'The resource the event is about, in its API shape (a Payment for payment.*, a CheckoutSession for checkout_session.*).',
          },
        ),
      },
      { additionalProperties: false },
    ),
    idempotency_key: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        description: 'Publishing again with the same key returns the first event (Idempotent-Replayed: true) instead of a new one.',
      }),
    ),
  },
  { additionalProperties: false },
);

/**
 * `POST /internal/v1/events`: lets a payment core in another process publish. Authenticated by
 * the internal token (auth.ts); without a configured token the route answers 404. Requests that
 * arrive together are published together (events/publish-coalescer.ts): one transaction for all
 * of them, each with its own result.
 */
export const internalEventRoutes =
  (ctx: ServiceContext): FastifyPluginAsyncTypebox =>
  async (app) => {
    const publisher = new PublishCoalescer(ctx.database, () => ctx.clock.now());
    app.post(
      '/events',
      {
        config: {
          audit: {
            exempt:
              "the payment core's event stream: each event is its own immutable record (id, type, merchant, time, idempotency key), and an entry per event would double the write of the hottest path",
          },
        },
        // The event's own limit decides (events/envelope.ts, one answer whatever the route); the
        // margin is for the request's other fields, so only a padded body meets this one.
        bodyLimit: EVENT_MAX_BYTES + REQUEST_MARGIN_BYTES,
        serializerCompiler: asStored,
        schema: {
          tags: ['internal'],
          security: [{ internalToken: [] }],
          operationId: 'publishEvent',
          summary: "Publish an event to the merchant's subscribed endpoints",
          'x-idempotent-replayed': true,
          body: PublishBody,
          response: {
            201: Type.Ref(EventSchema, { description: 'The published event (or, for a repeated idempotency_key, the first one).' }),
          },
        },
      },
      async (req, reply) => {
        const b = req.body;
        // A payment core in another process sends the resource: its domain checks its shape.
        const type = b.type as EventType; // the schema's enum is the catalog
        validatePaymentFamilyObject(type, b.data.object);
        validateEndpointFamilyObject(type, b.data.object);
        refuseOperatorMerchant(b.merchant_id, 'merchant_id');
        const result = await publisher.publish({
          type: b.type,
          merchantId: b.merchant_id,
          environment: b.environment,
          object: b.data.object,
          idempotencyKey: b.idempotency_key,
        });
        if (result.replayed) void reply.header('idempotent-replayed', 'true');
        return reply.code(201).send(result.event);
      },
    );
  };

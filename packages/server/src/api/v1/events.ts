import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import { CreatedRange, IdParams, ListOf, createdBound, errorResponses } from './schemas.ts';
import { EventSchema, EventTypeQuery } from './event-schemas.ts';

const ListEventsQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
    starting_after: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    type: Type.Optional(EventTypeQuery('Only events of this type.')),
    ...CreatedRange,
    object_id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        description: "Only events about this object (`data.object.id`): a payment's or checkout session's history.",
      }),
    ),
    delivery_success: Type.Optional(
      Type.Union([Type.Literal('true'), Type.Literal('false')], {
        description:
          '`false`: only events with at least one delivery not delivered (pending, retrying, exhausted or cancelled), the ones to catch up on after an outage; `true`: only events all of whose deliveries were delivered.',
      }),
    ),
  },
  { additionalProperties: false },
);

/**
 * Events are answered as they were delivered (the stored serialisation), not re-shaped by the
 * response schema, which is there for the document: `data.object` is one of several objects.
 */
export const asStored = () => (payload: unknown) => (typeof payload === 'string' ? payload : JSON.stringify(payload));

/** `/api/v1/events`: published events, as delivered. */
export const eventRoutes =
  (ctx: ServiceContext): FastifyPluginAsyncTypebox =>
  async (app) => {
    const tags = ['events'];
    const security = [{ bearerAuth: [] }];
    app.get(
      '/events',
      {
        schema: {
          tags,
          security,
          operationId: 'listEvents',
          summary: 'List events (newest first)',
          querystring: ListEventsQuery,
          response: { 200: ListOf(Type.Ref(EventSchema), 'A page of events, each as its deliveries carried it.') },
        },
        serializerCompiler: asStored,
      },
      async (req) =>
        ctx.events.list(req.scope, {
          limit: req.query.limit ?? 20,
          startingAfter: req.query.starting_after,
          type: req.query.type,
          createdGte: createdBound(req.query['created[gte]'], 'created[gte]'),
          createdLt: createdBound(req.query['created[lt]'], 'created[lt]'),
          objectId: req.query.object_id,
          deliverySuccess: req.query.delivery_success === undefined ? undefined : req.query.delivery_success === 'true',
        }),
    );
    app.get(
      '/events/:id',
      {
        schema: {
          tags,
          security,
          operationId: 'retrieveEvent',
          summary: 'Retrieve an event: the exact bytes its deliveries carried',
          params: IdParams,
          response: { 200: Type.Ref(EventSchema, { description: 'The event.' }), ...errorResponses(404) },
        },
        serializerCompiler: asStored,
      },
      async (req, reply) => {
        const body = await ctx.events.getBody(req.scope, req.params.id);
        // The stored text, not a re-serialisation: byte-identical to what receivers got.
        return reply
          .type('application/json; charset=utf-8')
          .serializer((p: unknown) => p as string)
          .send(body as never);
      },
    );
  };

import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import { IdParams, errorResponses } from './schemas.ts';

const ListEventsQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
    starting_after: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    type: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  },
  { additionalProperties: false },
);

const EventSchema = Type.Object({}, { additionalProperties: true, description: 'The event envelope of spec 2.1.' });

/** `/api/v1/events`: published events, as delivered. */
export const eventRoutes = (ctx: ServiceContext): FastifyPluginAsyncTypebox => async (app) => {
  const tags = ['events'];
  const security = [{ bearerAuth: [] }];
  app.get(
    '/events',
    {
      schema: {
        tags, security, summary: 'List events (newest first)', querystring: ListEventsQuery,
        response: { 200: Type.Object({ object: Type.Literal('list'), data: Type.Array(EventSchema), has_more: Type.Boolean() }), ...errorResponses(400, 401, 429) },
      },
    },
    async (req) => ctx.events.list(req.scope, { limit: req.query.limit ?? 20, startingAfter: req.query.starting_after, type: req.query.type }),
  );
  app.get(
    '/events/:id',
    { schema: { tags, security, summary: 'Retrieve an event: the exact bytes its deliveries carried', params: IdParams, response: { 200: EventSchema, ...errorResponses(401, 404, 429) } } },
    async (req, reply) => {
      const body = await ctx.events.getBody(req.scope, req.params.id);
      // The stored text, not a re-serialisation: byte-identical to what receivers got.
      return reply.type('application/json; charset=utf-8').serializer((p: unknown) => p as string).send(body);
    },
  );
};

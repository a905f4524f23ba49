import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import { publishEvent } from '../../events/publish.ts';
import { errorResponses } from '../v1/schemas.ts';
import { internalAuth } from './auth.ts';

const PublishBody = Type.Object(
  {
    type: Type.String({ minLength: 1, maxLength: 100 }),
    merchant_id: Type.String({ minLength: 1, maxLength: 64 }),
    environment: Type.Union([Type.Literal('live'), Type.Literal('sandbox')]),
    data: Type.Object({ object: Type.Object({}, { additionalProperties: true }) }, { additionalProperties: false }),
    idempotency_key: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  },
  { additionalProperties: false },
);

/**
 * `POST /internal/v1/events`: lets a payment core in another process publish. Authenticated by
 * the internal token (auth.ts); without a configured token the route answers 404.
 */
export const internalEventRoutes = (ctx: ServiceContext): FastifyPluginAsyncTypebox => async (app) => {
  app.addHook('onRequest', internalAuth(ctx));
  app.post(
    '/events',
    { bodyLimit: 256 * 1024, schema: { hide: true, body: PublishBody, response: { 201: Type.Object({}, { additionalProperties: true }), ...errorResponses(400, 401, 404, 413) } } },
    async (req, reply) => {
      const b = req.body;
      const result = await ctx.database.db.transaction((tx) =>
        publishEvent(tx, { type: b.type, merchantId: b.merchant_id, environment: b.environment, object: b.data.object, idempotencyKey: b.idempotency_key }, ctx.clock.now()),
      );
      if (result.replayed) void reply.header('idempotent-replayed', 'true');
      return reply.code(201).send(result.event);
    },
  );
};

import { createHash, timingSafeEqual } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import { publishEvent } from '../../events/publish.ts';
import { errorResponses } from '../v1/schemas.ts';

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

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * `POST /internal/v1/events`: lets a payment core in another process publish. Authenticated by
 * `Authorization: Bearer <PAYHOOKS_INTERNAL_TOKEN>`, compared in constant time (over digests, so
 * length differences don't leak either). Without a configured token the route answers 404.
 */
export const internalEventRoutes = (ctx: ServiceContext): FastifyPluginAsyncTypebox => async (app) => {
  const expected = ctx.config.internalToken ? digest(ctx.config.internalToken) : null;
  // Authenticate before the body is validated, so an unauthenticated caller learns nothing.
  app.addHook('onRequest', async (req) => {
    if (!expected) throw new AppError('not_found', 'route_not_found', 'The internal events API is disabled: set PAYHOOKS_INTERNAL_TOKEN to enable it.');
    const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    if (!m || !timingSafeEqual(digest(m[1]!), expected)) throw new AppError('authentication', 'invalid_internal_token', 'A valid `Authorization: Bearer <PAYHOOKS_INTERNAL_TOKEN>` is required.');
  });
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

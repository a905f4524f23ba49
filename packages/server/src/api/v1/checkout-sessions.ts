import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import type { CheckoutSession } from '../../payments/objects.ts';
import { EXPIRES_IN, sessionId } from '../../payments/checkout.ts';
import { withIdempotency } from '../idempotency.ts';
import { IdParams, ListOf, ListQuery, errorResponses } from './schemas.ts';
import { CheckoutSessionSchema, IdempotencyHeaders, PaymentFields } from './payment-schemas.ts';
import { noParameters } from './payments.ts';

const ReturnUrl = Type.String({ minLength: 1, maxLength: 2048 });

const CreateBody = Type.Object(
  {
    ...PaymentFields,
    success_url: ReturnUrl,
    cancel_url: Type.Optional(Type.Union([ReturnUrl, Type.Null()])),
    expires_in: Type.Optional(Type.Integer({ description: `Seconds until the session expires: ${EXPIRES_IN.min} to ${EXPIRES_IN.max}, default ${EXPIRES_IN.default}.` })),
  },
  { additionalProperties: false },
);

/** `/api/v1/checkout_sessions`: a hosted page that collects one Payment. */
export const checkoutSessionRoutes = (ctx: ServiceContext): FastifyPluginAsyncTypebox => async (app) => {
  const tags = ['checkout_sessions'];
  const security = [{ bearerAuth: [] }];

  app.post(
    '/checkout_sessions',
    {
      schema: {
        tags, security, summary: 'Create a checkout session and its payment (publishes payment.created)', headers: IdempotencyHeaders, body: CreateBody,
        response: { 201: Type.Ref(CheckoutSessionSchema), ...errorResponses(400, 401, 403, 409, 413, 429) },
      },
    },
    async (req, reply) => {
      const body: Static<typeof CreateBody> = req.body;
      const result = await withIdempotency(ctx, req.scope, req.headers['idempotency-key'], { method: 'POST', path: '/api/v1/checkout_sessions', body }, async (tx) => ({
        status: 201,
        body: await ctx.checkout.create(req.scope, body, tx),
      }));
      if (result.replayed) void reply.header('idempotent-replayed', 'true');
      return reply.code(201).send(result.body as CheckoutSession);
    },
  );

  app.get(
    '/checkout_sessions',
    { schema: { tags, security, summary: 'List checkout sessions (newest first)', querystring: ListQuery, response: { 200: ListOf(Type.Ref(CheckoutSessionSchema)), ...errorResponses(400, 401, 429) } } },
    async (req) => ctx.checkout.list(req.scope, { limit: req.query.limit ?? 20, startingAfter: req.query.starting_after }),
  );

  app.get(
    '/checkout_sessions/:id',
    { schema: { tags, security, summary: 'Retrieve a checkout session', params: IdParams, response: { 200: Type.Ref(CheckoutSessionSchema), ...errorResponses(401, 404, 429) } } },
    async (req) => ctx.checkout.get(req.scope, req.params.id),
  );

  app.post(
    '/checkout_sessions/:id/expire',
    {
      schema: {
        tags, security, summary: 'Expire an open session now (publishes checkout_session.expired, and payment.expired while the payment can expire)',
        params: IdParams, headers: IdempotencyHeaders, response: { 200: Type.Ref(CheckoutSessionSchema), ...errorResponses(400, 401, 404, 409, 429) },
      },
    },
    async (req, reply) => {
      const id = sessionId(req.params.id);
      noParameters(req.body);
      const result = await withIdempotency(ctx, req.scope, req.headers['idempotency-key'], { method: 'POST', path: `/api/v1/checkout_sessions/${id}/expire`, body: {} }, async (tx) => ({
        status: 200,
        body: await ctx.checkout.expire(req.scope, id, tx),
      }));
      if (result.replayed) void reply.header('idempotent-replayed', 'true');
      return reply.code(200).send(result.body as CheckoutSession);
    },
  );
};

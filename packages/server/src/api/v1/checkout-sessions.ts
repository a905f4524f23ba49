import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import type { CheckoutSession } from '../../payments/objects.ts';
import { EXPIRES_IN, sessionId } from '../../payments/checkout.ts';
import { withIdempotency } from '../idempotency.ts';
import { IdParams, ListOf, ListQuery, errorResponses } from './schemas.ts';
import { CheckoutSessionSchema, IdempotencyHeaders, PaymentFields, idempotentResponse } from './payment-schemas.ts';
import { NoParameters, noParameters } from './payments.ts';

const ReturnUrl = Type.String({ minLength: 1, maxLength: 2048 });

const CreateBody = Type.Object(
  {
    ...PaymentFields,
    success_url: ReturnUrl,
    cancel_url: Type.Optional(Type.Union([ReturnUrl, Type.Null()])),
    expires_in: Type.Optional(
      Type.Integer({
        description: `Seconds until the session expires: ${EXPIRES_IN.min} to ${EXPIRES_IN.max}, default ${EXPIRES_IN.default}.`,
      }),
    ),
  },
  { additionalProperties: false },
);

/** A checkout session's audit entry: its status and amount (not its metadata or URLs). */
export const checkoutEntry = (action: string, session: { id: string; status: string; amount: string; asset_code: string }) => ({
  action,
  resourceType: 'checkout_session',
  resourceId: session.id,
  changes: { status: session.status, amount: session.amount, asset_code: session.asset_code },
});

/** `/api/v1/checkout_sessions`: a hosted page that collects one Payment. */
export const checkoutSessionRoutes =
  (ctx: ServiceContext): FastifyPluginAsyncTypebox =>
  async (app) => {
    const tags = ['checkout_sessions'];
    const security = [{ bearerAuth: [] }];

    app.post(
      '/checkout_sessions',
      {
        config: { audit: { action: 'checkout_session.create', resource: 'checkout_session' } },
        schema: {
          tags,
          security,
          operationId: 'createCheckoutSession',
          summary: 'Create a checkout session and its payment (publishes payment.created)',
          headers: IdempotencyHeaders,
          body: CreateBody,
          response: {
            201: idempotentResponse(Type.Ref(CheckoutSessionSchema), 'The new checkout session; send the customer to its url.'),
            ...errorResponses(409),
          },
        },
      },
      async (req, reply) => {
        const body: Static<typeof CreateBody> = req.body;
        const result = await withIdempotency(
          ctx,
          req.scope,
          req.headers['idempotency-key'],
          { method: 'POST', path: '/api/v1/checkout_sessions', body },
          async (tx) => {
            const session = await ctx.checkout.create(req.scope, body, tx);
            await ctx.audit.record(tx, req.scope, checkoutEntry('checkout_session.create', session));
            return { status: 201, body: session };
          },
        );
        if (result.replayed) void reply.header('idempotent-replayed', 'true');
        return reply.code(201).send(result.body as CheckoutSession);
      },
    );

    app.get(
      '/checkout_sessions',
      {
        schema: {
          tags,
          security,
          operationId: 'listCheckoutSessions',
          summary: 'List checkout sessions (newest first)',
          querystring: ListQuery,
          response: { 200: ListOf(Type.Ref(CheckoutSessionSchema), 'A page of checkout sessions.') },
        },
      },
      async (req) => ctx.checkout.list(req.scope, { limit: req.query.limit ?? 20, startingAfter: req.query.starting_after }),
    );

    app.get(
      '/checkout_sessions/:id',
      {
        schema: {
          tags,
          security,
          operationId: 'retrieveCheckoutSession',
          summary: 'Retrieve a checkout session',
          params: IdParams,
          response: { 200: Type.Ref(CheckoutSessionSchema, { description: 'The checkout session.' }), ...errorResponses(404) },
        },
      },
      async (req) => ctx.checkout.get(req.scope, req.params.id),
    );

    app.post(
      '/checkout_sessions/:id/expire',
      {
        config: { audit: { action: 'checkout_session.expire', resource: 'checkout_session' } },
        schema: {
          tags,
          security,
          operationId: 'expireCheckoutSession',
          summary: 'Expire an open checkout session now',
          description: 'Publishes checkout_session.expired, and payment.expired while the payment can expire.',
          'x-optional-body': NoParameters,
          params: IdParams,
          headers: IdempotencyHeaders,
          response: {
            200: idempotentResponse(Type.Ref(CheckoutSessionSchema), 'The expired checkout session.'),
            ...errorResponses(404, 409),
          },
        },
      },
      async (req, reply) => {
        const id = sessionId(req.params.id);
        noParameters(req.body);
        const result = await withIdempotency(
          ctx,
          req.scope,
          req.headers['idempotency-key'],
          { method: 'POST', path: `/api/v1/checkout_sessions/${id}/expire`, body: {} },
          async (tx) => {
            const session = await ctx.checkout.expire(req.scope, id, tx);
            await ctx.audit.record(tx, req.scope, checkoutEntry('checkout_session.expire', session));
            return { status: 200, body: session };
          },
        );
        if (result.replayed) void reply.header('idempotent-replayed', 'true');
        return reply.code(200).send(result.body as CheckoutSession);
      },
    );
  };

import { paymentEntry } from './payments.ts';
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import { toPayment, type Payment } from '../../payments/objects.ts';
import { paymentId, sandboxOnly } from '../../payments/service.ts';
import { withIdempotency } from '../idempotency.ts';
import { IdParams, errorResponses } from './schemas.ts';
import { IdempotencyHeaders, PaymentSchema, PaymentStatusSchema, idempotentResponse } from './payment-schemas.ts';

const SimulateBody = Type.Object(
  {
    status: PaymentStatusSchema,
    double_delivery: Type.Optional(
      Type.Boolean({
        description:
          "Deliver this transition's event twice to every subscribed endpoint: the same evt_ id and bytes, two deliveries with their own logs.",
      }),
    ),
  },
  { additionalProperties: false },
);

/**
 * `/api/v1/sandbox/…`: what a merchant's tests use to move sandbox payments through the state
 * machine the way the payment rails move live ones. Sandbox keys only: a live key is a 403
 * `sandbox_only` before anything is looked up.
 */
export const sandboxRoutes =
  (ctx: ServiceContext): FastifyPluginAsyncTypebox =>
  async (app) => {
    const tags = ['sandbox'];
    const security = [{ bearerAuth: [] }];

    app.post(
      '/sandbox/payments/:id/simulate',
      {
        config: { audit: { action: 'payment.simulate', resource: 'payment' } },
        schema: {
          tags,
          security,
          operationId: 'simulateSandboxPayment',
          summary: 'Move a sandbox payment to a status (publishes payment.<status>)',
          params: IdParams,
          headers: IdempotencyHeaders,
          body: SimulateBody,
          response: {
            200: idempotentResponse(Type.Ref(PaymentSchema), 'The payment in its new status.'),
            ...errorResponses(403, 404, 409),
          },
        },
      },
      async (req, reply) => {
        sandboxOnly(req.scope, 'Simulating payment transitions');
        const id = paymentId(req.params.id);
        const body: Static<typeof SimulateBody> = req.body;
        const result = await withIdempotency(
          ctx,
          req.scope,
          req.headers['idempotency-key'],
          { method: 'POST', path: `/api/v1/sandbox/payments/${id}/simulate`, body },
          async (tx) => {
            const payment = toPayment(
              await ctx.payments.transition(tx, { id, scope: req.scope }, body.status, { doubleDelivery: body.double_delivery }),
            );
            await ctx.audit.record(tx, req.scope, paymentEntry('payment.simulate', payment));
            return { status: 200, body: payment };
          },
        );
        if (result.replayed) void reply.header('idempotent-replayed', 'true');
        return reply.code(200).send(result.body as Payment);
      },
    );
  };

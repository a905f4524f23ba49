import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import { toPayment } from '../../payments/objects.ts';
import { paymentEntry } from '../v1/payments.ts';
import { paymentId } from '../../payments/service.ts';
import { IdParams, errorResponses } from '../v1/schemas.ts';
import { PaymentSchema, PaymentStatusSchema } from '../v1/payment-schemas.ts';

const TransitionBody = Type.Object(
  {
    status: PaymentStatusSchema,
    double_delivery: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

/**
 * `POST /internal/v1/payments/:id/transitions`: the operator's payment rails move live (and
 * sandbox) payments through the state machine. Any Platform's payment, by id; internal token.
 */
export const internalPaymentRoutes =
  (ctx: ServiceContext): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.post(
      '/payments/:id/transitions',
      {
        config: { audit: { action: 'payment.transition', resource: 'payment' } },
        schema: {
          tags: ['internal'],
          security: [{ internalToken: [] }],
          operationId: 'transitionPayment',
          summary: "Move any Platform's payment to a status (publishes payment.<status>)",
          params: IdParams,
          body: TransitionBody,
          response: { 200: Type.Ref(PaymentSchema, { description: 'The payment in its new status.' }), ...errorResponses(409) },
        },
      },
      async (req) => {
        const body: Static<typeof TransitionBody> = req.body;
        const id = paymentId(req.params.id);
        return ctx.database.db.transaction(async (tx) => {
          const row = await ctx.payments.transition(tx, { id }, body.status, { doubleDelivery: body.double_delivery });
          const payment = toPayment(row);
          await ctx.audit.record(
            tx,
            { ...req.auditSubject!, platformId: row.platformId, environment: row.environment },
            paymentEntry('payment.transition', payment),
          );
          return payment;
        });
      },
    );
  };

import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import { toPayment, type Payment } from '../../payments/objects.ts';
import { paymentId } from '../../payments/service.ts';
import { AppError } from '../../errors.ts';
import { withIdempotency } from '../idempotency.ts';
import { IdParams, ListOf, ListQuery, errorResponses } from './schemas.ts';
import { IdempotencyHeaders, PaymentFields, PaymentSchema, PaymentStatusSchema, idempotentResponse } from './payment-schemas.ts';

const CreateBody = Type.Object(PaymentFields, { additionalProperties: false });
/**
 * Actions (cancel, expire) take no parameters; a body, if sent, must be `{}`, so a typo is a 400
 * rather than silently ignored. (A schema can't say "absent or {}": Fastify validates an absent
 * body as undefined.)
 */
export function noParameters(body: unknown): void {
  if (body === undefined || body === null) return;
  if (typeof body !== 'object' || Array.isArray(body))
    throw new AppError('invalid_request', 'parameter_invalid', 'This action takes no parameters: send no body or {}.');
  const [first] = Object.keys(body);
  if (first !== undefined)
    throw new AppError(
      'invalid_request',
      'parameter_unknown',
      `Unknown parameter '${first}' in the body: this action takes no parameters.`,
      { param: first },
    );
}
/** What an action's optional body may be, for the document (noParameters checks it). */
export const NoParameters = Type.Object({}, { additionalProperties: false, description: 'No parameters: send no body or {}.' });
const ListPaymentsQuery = Type.Composite([ListQuery, Type.Object({ status: Type.Optional(PaymentStatusSchema) })], {
  additionalProperties: false,
});

/** A payment's audit entry: the payment service's data, so its amount and status, never its metadata. */
export function paymentEntry(action: string, payment: Payment) {
  return {
    action,
    resourceType: 'payment',
    resourceId: payment.id,
    changes: { status: payment.status, amount: payment.amount, asset_code: payment.asset_code },
  };
}

/** `/api/v1/payments`: create, retrieve, list and cancel, inside the calling key's Platform and environment. */
export const paymentRoutes =
  (ctx: ServiceContext): FastifyPluginAsyncTypebox =>
  async (app) => {
    const tags = ['payments'];
    const security = [{ bearerAuth: [] }];

    app.post(
      '/payments',
      {
        config: { audit: { action: 'payment.create', resource: 'payment' } },
        schema: {
          tags,
          security,
          operationId: 'createPayment',
          summary: 'Create a payment (publishes payment.created)',
          headers: IdempotencyHeaders,
          body: CreateBody,
          response: { 201: idempotentResponse(Type.Ref(PaymentSchema), 'The new payment.'), ...errorResponses(409) },
        },
      },
      async (req, reply) => {
        const body: Static<typeof CreateBody> = req.body;
        const result = await withIdempotency(
          ctx,
          req.scope,
          req.headers['idempotency-key'],
          { method: 'POST', path: '/api/v1/payments', body },
          async (tx) => {
            const payment = toPayment(await ctx.payments.create(req.scope, body, tx));
            await ctx.audit.record(tx, req.scope, paymentEntry('payment.create', payment));
            return { status: 201, body: payment };
          },
        );
        if (result.replayed) void reply.header('idempotent-replayed', 'true');
        return reply.code(201).send(result.body as Payment);
      },
    );

    app.get(
      '/payments',
      {
        schema: {
          tags,
          security,
          operationId: 'listPayments',
          summary: 'List payments (newest first)',
          querystring: ListPaymentsQuery,
          response: { 200: ListOf(Type.Ref(PaymentSchema), 'A page of payments.') },
        },
      },
      async (req) =>
        ctx.payments.list(req.scope, { limit: req.query.limit ?? 20, startingAfter: req.query.starting_after, status: req.query.status }),
    );

    app.get(
      '/payments/:id',
      {
        schema: {
          tags,
          security,
          operationId: 'retrievePayment',
          summary: 'Retrieve a payment (the server-side check before crediting)',
          params: IdParams,
          response: { 200: Type.Ref(PaymentSchema, { description: 'The payment.' }), ...errorResponses(404) },
        },
      },
      async (req) => ctx.payments.get(req.scope, req.params.id),
    );

    app.post(
      '/payments/:id/cancel',
      {
        config: { audit: { action: 'payment.cancel', resource: 'payment' } },
        schema: {
          tags,
          security,
          operationId: 'cancelPayment',
          summary: 'Cancel a payment before money moves (publishes payment.cancelled)',
          params: IdParams,
          headers: IdempotencyHeaders,
          'x-optional-body': NoParameters,
          response: { 200: idempotentResponse(Type.Ref(PaymentSchema), 'The cancelled payment.'), ...errorResponses(404, 409) },
        },
      },
      async (req, reply) => {
        const id = paymentId(req.params.id);
        noParameters(req.body);
        const result = await withIdempotency(
          ctx,
          req.scope,
          req.headers['idempotency-key'],
          { method: 'POST', path: `/api/v1/payments/${id}/cancel`, body: {} },
          async (tx) => {
            const payment = toPayment(await ctx.payments.transition(tx, { id, scope: req.scope }, 'cancelled'));
            await ctx.audit.record(tx, req.scope, paymentEntry('payment.cancel', payment));
            return { status: 200, body: payment };
          },
        );
        if (result.replayed) void reply.header('idempotent-replayed', 'true');
        return reply.code(200).send(result.body as Payment);
      },
    );
  };

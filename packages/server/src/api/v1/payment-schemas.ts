import { Type, type TSchema } from '@sinclair/typebox';
import { CHECKOUT_SESSION_STATUSES, PAYMENT_STATUSES } from '../../payments/state-machine.ts';
import { Timestamp } from './schemas.ts';

/** Schemas of payments and checkout sessions (TypeBox; they also feed the OpenAPI document). */

const Environment = Type.Union([Type.Literal('live'), Type.Literal('sandbox')]);
const StringMap = Type.Record(Type.String(), Type.String());

export const PaymentStatusSchema = Type.Union(PAYMENT_STATUSES.map((s) => Type.Literal(s)));

export const PaymentSchema = Type.Object(
  {
    id: Type.String({ description: 'Prefix pay_' }),
    object: Type.Literal('payment'),
    status: PaymentStatusSchema,
    amount: Type.String({ description: 'Decimal string with two decimals, e.g. "25.00"' }),
    asset_code: Type.String({ description: '<ASSET>.<NETWORK>, e.g. "USDC.ETH"' }),
    metadata: StringMap,
    description: Type.Union([Type.String(), Type.Null()], { description: 'What the customer pays for, or null' }),
    merchant_id: Type.String(),
    environment: Environment,
    checkout_session: Type.Union([Type.String(), Type.Null()], {
      description: 'The checkout session (cs_…) that created the payment, or null',
    }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Payment', description: 'A payment: the object of payment.* events.' },
);

export const CheckoutSessionSchema = Type.Object(
  {
    id: Type.String({ description: 'Prefix cs_' }),
    object: Type.Literal('checkout_session'),
    status: Type.Union(CHECKOUT_SESSION_STATUSES.map((s) => Type.Literal(s))),
    amount: Type.String(),
    asset_code: Type.String(),
    metadata: StringMap,
    description: Type.Union([Type.String(), Type.Null()], { description: 'What the customer pays for, shown on the hosted page, or null' }),
    payment: Type.String({ description: "The session's Payment (pay_…)" }),
    url: Type.String({ description: 'The hosted checkout page' }),
    success_url: Type.String(),
    cancel_url: Type.Union([Type.String(), Type.Null()]),
    expires_at: Timestamp,
    completed_at: Type.Union([Timestamp, Type.Null()]),
    merchant_id: Type.String(),
    environment: Environment,
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'CheckoutSession', description: 'A hosted checkout session: the object of checkout_session.* events.' },
);

/** Strings here are checked by the domain (payments/objects.ts), which says exactly what to send. */
export const PaymentFields = {
  amount: Type.String({ maxLength: 32, description: 'Decimal string, exactly two decimals, "0.01" to "999999999.99"' }),
  asset_code: Type.String({ maxLength: 64, description: '<ASSET>.<NETWORK>: upper-case letters, digits and -, e.g. "USDC-E.ARB"' }),
  metadata: Type.Optional(
    // The same limits as endpoint metadata (schemas.ts), described for objects that keep it as sent.
    Type.Record(Type.String(), Type.String({ maxLength: 500 }), {
      maxProperties: 50,
      propertyNames: { type: 'string', minLength: 1, maxLength: 40 },
      description:
        'Up to 50 string pairs (keys up to 40, values up to 500 characters), stored and echoed unchanged, and in every event of the object.',
    }),
  ),
  description: Type.Optional(
    Type.Union([
      Type.String({
        maxLength: 500,
        description: 'What the customer pays for (up to 500 characters), shown on the hosted checkout page and carried in the events.',
      }),
      Type.Null(),
    ]),
  ),
  double_delivery: Type.Optional(
    Type.Boolean({ description: 'Sandbox only: deliver every event of this object twice (the double-delivery case).' }),
  ),
};

/** The `Idempotency-Key` request header of every create and action (api/idempotency.ts). */
export const IdempotencyHeaders = Type.Object({
  // Its format is checked by withIdempotency (code idempotency_key_invalid), not here.
  'idempotency-key': Type.Optional(Type.String({ description: 'Same key and body within 24 h returns the first response.' })),
});

/**
 * A success response of an operation that takes an Idempotency-Key. The document adds the
 * `Idempotent-Replayed` header to it (openapi/document.ts); `description` names the response.
 */
export const idempotentResponse = <T extends TSchema>(schema: T, description: string): T => ({ ...schema, description });

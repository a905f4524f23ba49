import { Type, type TSchema } from '@sinclair/typebox';

/** Schemas shared by several resources (TypeBox; they also feed the OpenAPI document). */

export const ErrorSchema = Type.Object(
  {
    error: Type.Object({
      type: Type.String(),
      code: Type.String({ description: 'Machine-readable error code, stable across versions.' }),
      message: Type.String(),
      param: Type.Optional(Type.String()),
    }),
  },
  { $id: 'Error' },
);

export const errorResponses = (...codes: number[]) =>
  Object.fromEntries(codes.map((c) => [c, Type.Ref(ErrorSchema)]));

// TypeBox drops a Record's key constraints (it emits `patternProperties: {"^(.*)$": …}`), so the
// key rule is stated with JSON Schema's own `propertyNames`.
export const Metadata = Type.Record(Type.String(), Type.String({ maxLength: 500 }), {
  maxProperties: 50,
  propertyNames: { type: 'string', minLength: 1, maxLength: 40 },
  description: 'Up to 50 string pairs (keys up to 40, values up to 500 characters). On update, keys merge and "" removes a key.',
});

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false });

export const ListQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
    starting_after: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Id of the last object of the previous page.' })),
  },
  { additionalProperties: false },
);

export const ListOf = <T extends TSchema>(item: T) =>
  Type.Object({ object: Type.Literal('list'), data: Type.Array(item), has_more: Type.Boolean() });

export const Timestamp = Type.String({ description: 'UTC, ISO 8601 YYYY-MM-DDThh:mm:ssZ' });

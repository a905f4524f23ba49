import { Type, type TSchema } from '@sinclair/typebox';
import { AppError } from '../../errors.ts';

/** Schemas shared by several resources (TypeBox; they also feed the OpenAPI document). */

export const ErrorSchema = Type.Object(
  {
    error: Type.Object({
      type: Type.String({
        description:
          'The error family: invalid_request_error, authentication_error, permission_error, idempotency_error, rate_limit_error or api_error.',
      }),
      code: Type.String({ description: 'Machine-readable error code, stable across versions.' }),
      message: Type.String({ description: 'What went wrong and what to send instead; for people, not for parsing.' }),
      param: Type.Optional(Type.String({ description: 'The parameter at fault, e.g. enabled_events[1].' })),
    }),
  },
  { $id: 'Error', description: 'The body of every error response.' },
);

/**
 * Error responses particular to a route (404 of an unknown id, 409, 422, 403). The statuses every
 * route of a kind can answer (400, 401, 413, 415, 429, 500, 503) are added to the document by
 * openapi/document.ts from how the app handles errors, so they are not repeated here.
 */
export const errorResponses = (...codes: number[]) => Object.fromEntries(codes.map((c) => [c, Type.Ref(ErrorSchema)]));

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

export const ListOf = <T extends TSchema>(item: T, description?: string) =>
  Type.Object(
    {
      object: Type.Literal('list'),
      data: Type.Array(item),
      has_more: Type.Boolean({ description: 'True when another page follows: pass the last id as starting_after.' }),
    },
    description ? { description } : {},
  );

export const Timestamp = Type.String({ description: 'UTC, ISO 8601 YYYY-MM-DDThh:mm:ssZ' });

/** `created[gte]` / `created[lt]`: the same timestamp form as `created_at`. */
export const CreatedRange = {
  'created[gte]': Type.Optional(
    Type.String({
      pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z$',
      description: 'Created at or after this time (YYYY-MM-DDThh:mm:ssZ).',
    }),
  ),
  'created[lt]': Type.Optional(
    Type.String({
      pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z$',
      description: 'Created before this time (YYYY-MM-DDThh:mm:ssZ).',
    }),
  ),
};

/** A Date from `created[gte]`/`created[lt]` (the schema checked the form; the calendar is checked here). */
export function createdBound(value: string | undefined, param: string): Date | undefined {
  if (value === undefined) return undefined;
  const d = new Date(value);
  if (Number.isNaN(d.getTime()) || d.toISOString().replace(/\.\d{3}Z$/, 'Z') !== value)
    throw new AppError('invalid_request', 'parameter_invalid', `Invalid '${param}': not a date and time (YYYY-MM-DDThh:mm:ssZ).`, {
      param,
    });
  return d;
}

import { describe, expect, it } from 'vitest';
import { Ajv } from 'ajv';
import { Type } from '@sinclair/typebox';
import { EVENT_TYPES } from '@payhooks/contract';
import { validationError } from '../../src/api/errors.ts';
import { EnabledEventTypeSchema, StringEnum } from '../../src/api/v1/event-schemas.ts';

/** Validates like the app does (verbose Ajv, first error) and formats the refusal. */
function refusal(schema: object, value: unknown, part = 'body', refs: object[] = []) {
  const ajv = new Ajv({ allErrors: false, strict: false, verbose: true, coerceTypes: part !== 'body' });
  ajv.addSchema(refs);
  const validate = ajv.compile(schema);
  expect(validate(value)).toBe(false);
  return validationError(validate.errors as never, part);
}

const States = ['pending', 'delivered', 'failed_retrying', 'exhausted', 'cancelled'] as const;

describe('validation errors on closed lists name the allowed values', () => {
  it('an enum in the query string', () => {
    const err = refusal(Type.Object({ state: Type.Optional(StringEnum(States)) }), { state: 'done' }, 'query string');
    expect(err.toBody().error).toEqual({
      type: 'invalid_request_error',
      code: 'parameter_invalid',
      param: 'state',
      message: "Invalid 'state' (got 'done'): state must be one of: pending, delivered, failed_retrying, exhausted, cancelled.",
    });
  });

  it('a union of literals in the body (TypeBox anyOf of const)', () => {
    const err = refusal(Type.Object({ status: Type.Union([Type.Literal('enabled'), Type.Literal('disabled')]) }), { status: 'paused' });
    expect(err.param).toBe('status');
    expect(err.message).toBe("Invalid 'status' (got 'paused'): status must be one of: enabled, disabled.");
  });

  it('an enum in a path parameter', () => {
    const err = refusal(Type.Object({ kind: StringEnum(['live', 'sandbox']) }), { kind: 'prod' }, 'params');
    expect(err.message).toBe("Invalid 'kind' (got 'prod'): kind must be one of: live, sandbox.");
  });

  it('an event type inside an array keeps the stable code event_type_unknown and names its position', () => {
    const err = refusal(
      Type.Object({ enabled_events: Type.Array(Type.Ref(EnabledEventTypeSchema)) }),
      { enabled_events: ['payment.created', 'payment.refunded'] },
      'body',
      [EnabledEventTypeSchema],
    );
    expect(err.code).toBe('event_type_unknown');
    expect(err.param).toBe('enabled_events[1]');
    expect(err.message).toBe(
      `Invalid 'enabled_events[1]' (got 'payment.refunded'): enabled_events[1] must be one of: *, ${EVENT_TYPES.join(', ')}.`,
    );
  });

  it('does not echo a value with control characters or a long one', () => {
    expect(refusal(Type.Object({ s: StringEnum(States) }), { s: 'done\u0000' }).message).toBe(
      "Invalid 's': s must be one of: pending, delivered, failed_retrying, exhausted, cancelled.",
    );
    expect(refusal(Type.Object({ s: StringEnum(States) }), { s: 'x'.repeat(101) }).message).not.toContain('xxx');
  });

  it('a union that is not a closed list keeps the plain message', () => {
    const err = refusal(Type.Object({ d: Type.Union([Type.String(), Type.Null()]) }), { d: 5 });
    expect(err.message).toBe("Invalid 'd': must be string.");
  });
});

import { describe, expect, it } from 'vitest';
import { serializerFactory, validatorCompiler } from '../../src/api/schema-compilers.ts';

const shared = [{ $id: 'Amount', type: 'integer', minimum: 1 }];
const schema = () => ({ type: 'object', properties: { amount: { $ref: 'Amount' } }, required: ['amount'], additionalProperties: false });

describe('route schemas compiled once per process', () => {
  it('the same schema text compiles once, even as another object (each app builds its own)', () => {
    const a = validatorCompiler(shared)({ schema: schema(), httpPart: 'body' });
    const b = validatorCompiler(shared)({ schema: schema(), httpPart: 'body' });
    expect(b).toBe(a);
    expect(a({ amount: 5 })).toBe(true);
    expect(a({ amount: 0 })).toBe(false); // the shared schema it refers to applies
  });

  it('a body is validated strictly and a query string is coerced, for one schema text', () => {
    const body = validatorCompiler(shared)({ schema: schema(), httpPart: 'body' });
    const query = validatorCompiler(shared)({ schema: schema(), httpPart: 'querystring' });
    expect(query).not.toBe(body);
    expect(body({ amount: '5' })).toBe(false);
    const params = { amount: '5' };
    expect(query(params)).toBe(true);
    expect(params.amount).toBe(5);
    expect(body({ amount: 5, extra: true })).toBe(false);
  });

  it('other shared schemas are another compilation', () => {
    const a = validatorCompiler(shared)({ schema: schema(), httpPart: 'body' });
    const b = validatorCompiler([{ $id: 'Amount', type: 'integer', minimum: 10 }])({ schema: schema(), httpPart: 'body' });
    expect(b).not.toBe(a);
    expect(b({ amount: 5 })).toBe(false);
  });

  it('serializers: one per schema text and shared schemas, writing only the declared fields', () => {
    const route = { method: 'GET', url: '/x', httpStatus: '200', schema: { type: 'object', properties: { id: { type: 'string' } } } };
    const a = serializerFactory({}, {})(route);
    const b = serializerFactory({}, {})({ ...route, schema: structuredClone(route.schema) });
    expect(b).toBe(a);
    expect(a({ id: 'evt_1', secret: 'x' })).toBe('{"id":"evt_1"}');
    const other = serializerFactory({}, {})({ ...route, schema: { type: 'object', properties: { name: { type: 'string' } } } });
    expect(other).not.toBe(a);
  });
});

import { describe, expect, it } from 'vitest';
import { statement, substitute } from '../../src/db/statement.ts';

describe('hand-written statements with named parameters (db/statement.ts)', () => {
  const s = statement<{ id: string; at: Date; ids: string[] }, unknown>(
    'example',
    `SELECT :id::text AS id, x::text, '12:30'::time, :at::timestamptz - interval '1 hour' FROM t WHERE id = :id OR id = ANY(:ids::text[])`,
  );

  it('numbers each name once, in the order it first appears, and leaves casts and literals alone', () => {
    expect(s.params).toEqual(['id', 'at', 'ids']);
    expect(s.text).toBe(
      `SELECT $1::text AS id, x::text, '12:30'::time, $2::timestamptz - interval '1 hour' FROM t WHERE id = $1 OR id = ANY($3::text[])`,
    );
  });

  it('binds values in that order; null is a value, undefined is refused', () => {
    const at = new Date(0);
    expect(s.bind({ id: 'a', at, ids: ['b'] })).toEqual(['a', at, ['b']]);
    expect(s.bind({ id: null as unknown as string, at, ids: [] })).toEqual([null, at, []]);
    expect(() => s.bind({ id: 'a', ids: [] } as unknown as { id: string; at: Date; ids: string[] })).toThrow(
      'statement example: no value for :at',
    );
  });

  it('substitutes an SQL expression for every parameter (a generated SQL function) and refuses a name the statement lacks', () => {
    expect(substitute(s, { id: 'v_id', at: 'v_now', ids: 'ARRAY[v_id]' })).toBe(
      `SELECT v_id::text AS id, x::text, '12:30'::time, v_now::timestamptz - interval '1 hour' FROM t WHERE id = v_id OR id = ANY(ARRAY[v_id]::text[])`,
    );
    expect(() => substitute(s, { id: 'a', at: 'b', ids: 'c', other: 'd' } as never)).toThrow('statement example has no parameter :other');
    expect(() => substitute(s, { id: 'a', at: 'b' })).toThrow('statement example: no SQL for :ids');
  });
});

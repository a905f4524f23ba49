import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { arrayLiteral } from '../../src/db/array-literal.ts';

/**
 * The record statement's parameters are array literals built by db/array-literal.ts instead of
 * node-postgres' own serialiser: whatever a receiver answers (quotes, backslashes, braces,
 * commas, the word NULL, newlines, any Unicode) must arrive in the database as it was.
 */
let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase({ migrate: false });
});
afterAll(async () => t?.dispose());

it('text arrays arrive exactly, nulls as nulls', async () => {
  const values = [
    'plain',
    '',
    'NULL',
    'null',
    ' spaced out ',
    'a "quoted" word',
    'back\\slash \\" both',
    'trailing backslash\\',
    '{"json":[1,2,{"x":"y"}]}',
    'comma, and } brace {',
    'line\nbreak\ttab\r',
    'ünïcödé ✓ 🧾 中文',
    '\\\\',
    '"',
    null,
    't=1790000000,v1=abc',
  ];
  const roundTrip = async (v: Array<string | null>) =>
    (await t.database.query<{ v: Array<string | null> }>('SELECT $1::text[] AS v', [arrayLiteral(v)]))[0]!.v;
  // All of them (some hold control characters: built element by element), each alone (most go
  // through JSON's text), and every one without control characters together.
  expect(await roundTrip(values)).toEqual(values);
  for (const v of values) expect(await roundTrip([v])).toEqual([v]);
  const plain = values.filter((v) => v === null || !/[\n\t\r]/.test(v));
  expect(await roundTrip(plain)).toEqual(plain);
});

it('control characters and lone surrogates survive too', async () => {
  const values = ['\u0001\u001f', 'bell\u0007', '\ud83e', 'lone \udc00 low', '🧾\n"\\'];
  const [row] = await t.database.query<{ v: string[] }>('SELECT $1::text[] AS v', [arrayLiteral(values)]);
  // PostgreSQL text holds UTF-8: a lone surrogate can't be stored and arrives as U+FFFD, as it
  // does from node-postgres' own serialiser.
  expect(row!.v).toEqual(values.map((v) => v.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd')));
});

it('timestamps keep their milliseconds; integers, booleans and nulls their values', async () => {
  const dates = [new Date('2026-11-27T17:04:05.123Z'), null, new Date('1999-12-31T23:59:59.999Z'), new Date(0)];
  const [row] = await t.database.query<{ ms: Array<string | null>; i: Array<number | null>; b: Array<boolean | null> }>(
    `SELECT array(SELECT (extract(epoch FROM x) * 1000)::bigint::text FROM unnest($1::timestamptz[]) WITH ORDINALITY u(x, n) ORDER BY n) AS ms,
            $2::int[] AS i, $3::boolean[] AS b`,
    [arrayLiteral(dates), arrayLiteral([200, null, -1, 0, 10_000]), arrayLiteral([true, false, null])],
  );
  expect(row!.ms).toEqual(dates.map((d) => (d ? String(d.getTime()) : null)));
  expect(row!.i).toEqual([200, null, -1, 0, 10_000]);
  expect(row!.b).toEqual([true, false, null]);
});

it('an empty batch is an empty array', async () => {
  const [row] = await t.database.query<{ n: number }>('SELECT cardinality($1::text[]) AS n', [arrayLiteral([])]);
  expect(Number(row!.n)).toBe(0);
});

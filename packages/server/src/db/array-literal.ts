/**
 * A PostgreSQL array literal (`{"a","b",NULL}`) for a statement's array parameter. node-postgres
 * builds the same text itself, but element by element through its generic `prepareValue` (two
 * regular-expression replacements per string, its own date formatting): for the record
 * statement's sixteen columns of a few hundred outcomes that was about 2 µs of a worker's CPU
 * per delivery, and the strings it builds were a large share of what the worker allocates.
 *
 * Usually the literal is JSON's array text with braces for brackets, made by one native
 * `JSON.stringify`: inside double quotes both formats escape `"` and `\` alike with a
 * backslash, PostgreSQL reads an unquoted `null` as NULL and `true`/`false` as booleans, and a
 * Date becomes its ISO 8601 text in UTC, which `timestamptz` reads exactly. They differ only
 * where JSON escapes a control character (`\n` would read back as `n`) or a lone surrogate;
 * an array holding such a string is built element by element instead.
 */
export function arrayLiteral(values: ReadonlyArray<string | number | boolean | Date | null | undefined>): string {
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (typeof v === 'string' && JSON_DIFFERS.test(v)) return elementByElement(values);
  }
  const json = JSON.stringify(values);
  return `{${json.slice(1, -1)}}`;
}

/** Control characters, which JSON escapes as `\n`, `\u0001`...; surrogates, which it may escape (a lone one). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const JSON_DIFFERS = /[\u0000-\u001f\ud800-\udfff]/;

function elementByElement(values: ReadonlyArray<string | number | boolean | Date | null | undefined>): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out += ',';
    const v = values[i];
    if (v === null || v === undefined) out += 'NULL';
    else if (typeof v === 'string') out += `"${NEEDS_ESCAPE.test(v) ? v.replace(ESCAPE, '\\$&') : v}"`;
    else if (typeof v === 'number') out += String(v);
    else if (typeof v === 'boolean') out += v ? 't' : 'f';
    else out += v.toISOString();
  }
  return `${out}}`;
}

const NEEDS_ESCAPE = /["\\]/;
const ESCAPE = /["\\]/g;

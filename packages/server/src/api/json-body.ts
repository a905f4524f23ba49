import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors.ts';

/**
 * The deepest JSON nesting a request body may have (the body itself is level 1). Events'
 * `data.object` is the deepest thing we accept, and real resources are a few levels deep; a
 * limit keeps recursive work on the body (serialising, hashing for Idempotency-Key) bounded,
 * where ~4,000 levels used to overflow the stack.
 */
export const MAX_JSON_DEPTH = 64;

/** A UTF-16 surrogate half on its own: JavaScript strings allow it, UTF-8 and jsonb do not. */
const LONE_SURROGATE = /\p{Cs}/u;

/** `metadata.order` style path for messages and `param`; array indices in brackets. */
function pathOf(parts: (string | number)[]): string {
  return parts.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('') || '(body)';
}

/**
 * Finds the first thing in a parsed body that can't be stored or processed: a string or key
 * with a lone surrogate (PostgreSQL would refuse it in jsonb, or `pg` would silently replace it
 * in text, changing the merchant's data), or nesting deeper than MAX_JSON_DEPTH. Iterative, so
 * the check itself can't overflow the stack.
 */
export function checkJsonValue(value: unknown): AppError | null {
  const stack: Array<{ v: unknown; path: (string | number)[] }> = [{ v: value, path: [] }];
  while (stack.length > 0) {
    const { v, path } = stack.pop()!;
    if (typeof v === 'string') {
      if (LONE_SURROGATE.test(v)) return invalidUnicode(path);
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (path.length >= MAX_JSON_DEPTH) {
      const at = `${pathOf(path.slice(0, 3))}…`;
      return new AppError(
        'invalid_request',
        'nesting_too_deep',
        `The body is nested more than ${MAX_JSON_DEPTH} levels deep (under '${at}'); flatten it.`,
        { param: pathOf(path) },
      );
    }
    if (Array.isArray(v)) {
      v.forEach((item, i) => {
        stack.push({ v: item, path: [...path, i] });
      });
      continue;
    }
    for (const [k, item] of Object.entries(v)) {
      if (LONE_SURROGATE.test(k)) return invalidUnicode(path, k);
      stack.push({ v: item, path: [...path, k] });
    }
  }
  return null;
}

function invalidUnicode(path: (string | number)[], key?: string): AppError {
  const param = pathOf(path);
  const where = key === undefined ? `'${param}'` : `a key of '${param}'`;
  return new AppError(
    'invalid_request',
    'invalid_unicode',
    `${where} contains invalid Unicode (a lone UTF-16 surrogate such as \\ud800); send well-formed UTF-8 text.`,
    {
      param: key === undefined ? param : pathOf([...path, key]),
    },
  );
}

/**
 * Replaces Fastify's JSON parser with the same parser (prototype-poisoning keys refused) plus
 * `checkJsonValue`, so every route, present and future, refuses such bodies with a 400 that
 * names the field before any handler or query sees them.
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    parse(req, body as string, (err, value) => {
      if (err) return done(err, undefined);
      const problem = checkJsonValue(value);
      if (problem) return done(problem, undefined);
      done(null, value);
    });
  });
}

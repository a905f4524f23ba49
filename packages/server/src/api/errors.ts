import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.ts';
import { isUnavailable } from '../db/faults.ts';
import { REQUEST_ID_HEADER } from './request-id.ts';

interface AjvError {
  keyword: string;
  instancePath: string;
  schemaPath?: string;
  params: Record<string, unknown>;
  message?: string;
  /** Set when a `propertyNames` rule failed: the offending key. */
  propertyName?: string;
  /** With Ajv's `verbose`: the schema holding the failed keyword, and the value it refused. */
  parentSchema?: Record<string, unknown>;
  data?: unknown;
}

/** At most this many allowed values are quoted in a message (every enum of the API fits). */
const MAX_QUOTED_VALUES = 30;

/**
 * The values a field accepts when the failed rule is a closed list: an `enum`, or TypeBox's
 * union of literals (`anyOf` of `const`s, which Ajv reports as one `const` error per branch and
 * an `anyOf` error last, all at the same path). Null when the rule is anything else.
 */
function allowedValues(errors: AjvError[]): { values: unknown[]; schema?: Record<string, unknown> } | null {
  const e = errors[0]!;
  if (e.keyword === 'enum' && Array.isArray(e.params.allowedValues)) return { values: e.params.allowedValues, schema: e.parentSchema };
  if (e.keyword !== 'const') return null;
  const values: unknown[] = [];
  // A tagged object's `type` (one literal per branch of a union of objects): every branch's
  // literal at that path, the other branches' errors being about other fields.
  const tags = () => {
    const cut = e.instancePath.lastIndexOf('/');
    const field = e.instancePath.slice(cut + 1);
    // Ajv stops each branch at its first error, so the other branches' literals come from the
    // union's schema (the anyOf at the parent), not from their errors.
    const union = errors.find((x) => x.keyword === 'anyOf' && x.instancePath === e.instancePath.slice(0, cut));
    const branches = (union?.parentSchema?.anyOf ?? []) as { properties?: Record<string, { const?: unknown }> }[];
    const all: unknown[] = Array.isArray(branches) ? branches.map((b) => b.properties?.[field]?.const).filter((v) => v !== undefined) : [];
    if (all.length === 0) all.push(e.params.allowedValue);
    return { values: [...new Set(all)], schema: e.parentSchema };
  };
  for (const err of errors) {
    if (err.instancePath !== e.instancePath) return tags();
    if (err.keyword === 'anyOf') return { values, schema: err.parentSchema };
    if (err.keyword === 'const') values.push(err.params.allowedValue);
    else if (err.keyword === 'enum' && Array.isArray(err.params.allowedValues)) values.push(...err.params.allowedValues);
    else return null;
  }
  return tags();
}

const quote = (v: unknown) => (v === null ? 'null' : typeof v === 'string' ? v : JSON.stringify(v));

/** `status must be one of: pending, delivered, …`, with the value sent when it is short. */
function enumMessage(param: string, values: unknown[], sent: unknown): string {
  const list =
    values.length > MAX_QUOTED_VALUES ? `${values.slice(0, MAX_QUOTED_VALUES).map(quote).join(', ')}, …` : values.map(quote).join(', ');
  // biome-ignore lint/suspicious/noControlCharactersInRegex: a value with control characters is not echoed back in the message
  const got = typeof sent === 'string' && sent.length <= 100 && !/[\u0000-\u001f]/.test(sent) ? ` (got '${sent}')` : '';
  return `Invalid '${param}'${got}: ${param} must be one of: ${list}.`;
}

/** `/enabled_events/0` -> `enabled_events[0]`, `/metadata/k` -> `metadata[k]`. */
function paramOf(path: string, extra?: string): string | undefined {
  const parts = path.split('/').filter(Boolean);
  if (extra) parts.push(extra);
  if (parts.length === 0) return undefined;
  return (
    parts[0] +
    parts
      .slice(1)
      .map((p) => `[${p}]`)
      .join('')
  );
}

/**
 * A tagged union of objects (`{"type": "basic", …} | {"type": "mtls", …}`) sent with a known
 * `type`: only the errors of that type's branch, so the message is about what was meant, not
 * about the first branch's fields.
 */
function tagged(errors: AjvError[]): AjvError[] {
  for (const union of errors) {
    if (union.keyword !== 'anyOf' || union.schemaPath === undefined) continue;
    const tag = (union.data as { type?: unknown } | null)?.type;
    if (typeof tag !== 'string') continue;
    const branches = union.parentSchema?.anyOf as { properties?: { type?: { const?: unknown } } }[] | undefined;
    const i = Array.isArray(branches) ? branches.findIndex((b) => b.properties?.type?.const === tag) : -1;
    if (i < 0) continue;
    const prefix = `${union.schemaPath}/${i}/`;
    const mine = errors.filter((x) => x.schemaPath?.startsWith(prefix));
    if (mine.length > 0) return mine;
  }
  return errors;
}

/** Turns the first schema violation into a 400 that names the field and what to send. */
export function validationError(all: AjvError[], part: string): AppError {
  const errors = tagged(all);
  const e = errors[0]!;
  if (e.keyword === 'additionalProperties') {
    const name = String(e.params.additionalProperty);
    const param = paramOf(e.instancePath, name);
    return new AppError('invalid_request', 'parameter_unknown', `Unknown parameter '${param}' in the ${part}.`, param ? { param } : {});
  }
  if (e.keyword === 'required') {
    const param = paramOf(e.instancePath, String(e.params.missingProperty));
    return new AppError('invalid_request', 'parameter_missing', `Missing required parameter '${param}'.`, param ? { param } : {});
  }
  const param = paramOf(e.instancePath);
  const allowed = param ? allowedValues(errors) : null;
  if (allowed && param) {
    const code = typeof allowed.schema?.['x-error-code'] === 'string' ? allowed.schema['x-error-code'] : 'parameter_invalid';
    return new AppError('invalid_request', code, enumMessage(param, allowed.values, e.data), { param });
  }
  if (e.propertyName !== undefined && param) {
    const key = JSON.stringify(e.propertyName.length > 50 ? `${e.propertyName.slice(0, 50)}…` : e.propertyName);
    return new AppError('invalid_request', 'parameter_invalid', `Invalid key ${key} in '${param}': a key ${e.message ?? 'is invalid'}.`, {
      param,
    });
  }
  if (!param) {
    return new AppError('invalid_request', 'parameter_invalid', `The ${part} ${e.message ?? 'is invalid'}; send a JSON object.`);
  }
  return new AppError('invalid_request', 'parameter_invalid', `Invalid '${param}': ${e.message ?? 'invalid value'}.`, { param });
}

/** Maps Fastify's own client errors (parsing, size, media type) to our error shape. */
function fromFastify(err: FastifyError): AppError | null {
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError(
        'payload_too_large',
        'body_too_large',
        'The request body is too large; management requests are small JSON objects.',
      );
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('unsupported_media_type', 'unsupported_media_type', 'Send the body as JSON with Content-Type: application/json.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('invalid_request', 'invalid_json', 'The body is empty; send a JSON object.');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new AppError('invalid_request', 'invalid_json', 'The body is not valid JSON.');
    // Router errors: they reach errorHandler when it is also Fastify's `frameworkErrors`.
    case 'FST_ERR_BAD_URL':
      return new AppError('invalid_request', 'invalid_url', 'The request path is not a valid URL (bad percent-encoding).');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      // An id this long can't exist: answer like any other unknown id.
      return new AppError('not_found', 'resource_missing', 'No such resource: the id is longer than any id.', { param: 'id' });
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('invalid_request', 'invalid_content_length', 'Content-Length does not match the body.');
  }
  if (err instanceof SyntaxError || err.statusCode === 400) {
    // secure-json-parse rejects __proto__ / constructor.prototype keys with a 400 too.
    return new AppError('invalid_request', 'invalid_json', `The body could not be parsed: ${err.message}`);
  }
  if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
    return new AppError('invalid_request', 'invalid_request', err.message);
  }
  return null;
}

/**
 * PostgreSQL refuses text it can't store: NUL bytes in text (22021) and \u0000 in jsonb
 * (22P05). They come from the client, so they are a 400, never a 500, whichever field or path
 * segment carried them.
 */
const UNSTORABLE_TEXT = new Set(['22021', '22P05']);

/** Seconds a client is asked to wait while the database is unreachable (a restart takes a few). */
export const UNAVAILABLE_RETRY_AFTER_S = 5;

function fromDatabase(err: unknown): AppError | null {
  if (isUnavailable(err)) {
    return new AppError(
      'unavailable',
      'unavailable',
      `The service cannot reach its database right now; retry in ${UNAVAILABLE_RETRY_AFTER_S} s (retry a write with the same idempotency key, so it applies once).`,
      {
        headers: { 'retry-after': String(UNAVAILABLE_RETRY_AFTER_S) },
      },
    );
  }
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 3; e = e.cause as typeof e, depth++) {
    if (typeof e.code === 'string' && UNSTORABLE_TEXT.has(e.code)) {
      return new AppError(
        'invalid_request',
        'invalid_characters',
        'The request contains characters that cannot be stored (such as NUL, \\u0000); remove them.',
      );
    }
  }
  return null;
}

export function errorHandler(
  err: FastifyError & { validation?: AjvError[]; validationContext?: string },
  req: FastifyRequest,
  reply: FastifyReply,
): void {
  let appError: AppError | null = null;
  if (err instanceof AppError) appError = err;
  else if (err.validation)
    appError = validationError(
      err.validation,
      err.validationContext === 'querystring' ? 'query string' : (err.validationContext ?? 'body'),
    );
  else appError = fromDatabase(err) ?? fromFastify(err);
  if (appError?.kind === 'unavailable') req.log.warn({ err }, 'database unavailable; answered 503');
  if (!appError) {
    req.log.error({ err }, 'unhandled error');
    appError = new AppError('internal', 'internal_error', 'Something went wrong on our side; it has been logged. Retry the request.');
  }
  // Framework errors (a malformed URL) are answered before the onRequest hook that sets it.
  if (!reply.hasHeader(REQUEST_ID_HEADER)) void reply.header(REQUEST_ID_HEADER, req.id);
  void reply.code(appError.status).headers(appError.headers).send(appError.toBody());
}

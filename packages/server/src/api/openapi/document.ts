import { EVENT_MAX_BYTES } from '@payhooks/contract';
import { API_BODY_LIMIT } from '../body-limit.ts';
import { UNAVAILABLE_RETRY_AFTER_S } from '../errors.ts';
import { IDEMPOTENCY_WINDOW_MS } from '../idempotency.ts';
import { exampleOf } from './examples.ts';

// Documents are plain JSON: typed loosely, checked by `redocly lint` in the tests.
// biome-ignore lint/suspicious/noExplicitAny: OpenAPI documents are free-form JSON, validated by redocly rather than by types
type Json = any;
export type OpenApiDocument = Json;

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** The operator document: what runs the service, not what integrates with it. */
const isOperatorPath = (path: string) => path.startsWith('/internal/') || path === '/healthz' || path === '/readyz' || path === '/metrics';
/**
 * The portal document: the Merchant Portal page's own JSON API. Not public API: the contract has
 * no machine API for replay in this phase, so a script must not be pointed at the portal's.
 */
const isPortalPath = (path: string) => path.startsWith('/portal/');

export type DocumentKind = 'public' | 'operator' | 'portal';
const kindOf = (path: string): DocumentKind => (isOperatorPath(path) ? 'operator' : isPortalPath(path) ? 'portal' : 'public');

const TAGS: Record<string, string> = {
  webhook_endpoints: 'Where events are delivered: create, list, update, delete endpoints and rotate their signing secrets.',
  webhook_deliveries: 'The delivery log: one delivery per event and endpoint, with every attempt.',
  events: 'Published events, exactly as their deliveries carried them.',
  payments: 'Payments: the objects of payment.* events.',
  checkout_sessions: 'Hosted checkout sessions: a page that collects one payment.',
  sandbox: 'Sandbox-only helpers: move sandbox payments the way the payment rails move live ones.',
  listen: '`payhooks listen`: forward sandbox deliveries to a local receiver.',
  audit_events:
    'The audit trail: who changed what, when, from where, and how it ended (portal, API, internal API, CLI and payhooks itself).',
  signing_keys:
    'Public keys that verify the ed25519 (v1a=) signatures of deliveries: one JWKS document per Platform, public and without authentication.',
  checkout_pages: 'The hosted checkout page a customer opens (HTML for browsers, not JSON).',
  portal: "The Merchant Portal's JSON API, used by its page (`/portal/`): a cookie session, not API keys.",
  portal_pages: "The Merchant Portal's page and assets (HTML for browsers).",
  meta: 'This document.',
  internal: "The operator's publishing API: publish events and move payments, for a payment core in another process.",
  operations: 'Health, readiness and metrics, for load balancers and Prometheus.',
};

interface ErrorDoc {
  name: string;
  description: string;
  example: { type: string; code: string; message: string; param?: string };
  headers?: Record<string, string>;
}

const errorDocs = (): Record<string, ErrorDoc> => ({
  400: {
    name: 'BadRequest',
    description:
      'The request is invalid: a parameter is missing, unknown or malformed, the body is not JSON, or the path is not a valid URL. `param` names the field; for a closed list the message lists the allowed values.',
    example: {
      type: 'invalid_request_error',
      code: 'parameter_invalid',
      message: "Invalid 'state' (got 'done'): state must be one of: pending, delivered, failed_retrying, exhausted, cancelled.",
      param: 'state',
    },
  },
  401: {
    name: 'Unauthorized',
    description: 'No valid credentials: the key (or token, or session) is missing, malformed, unknown or revoked.',
    example: {
      type: 'authentication_error',
      code: 'missing_api_key',
      message: 'No API key given. Send it as `Authorization: Bearer sk_test_…`.',
    },
  },
  403: {
    name: 'Forbidden',
    description:
      'Not allowed for these credentials (e.g. a sandbox-only action with a live key, or a portal change without its CSRF token).',
    example: {
      type: 'permission_error',
      code: 'sandbox_only',
      message:
        'Simulating payment transitions is available to sandbox keys only (sk_test_…); live payments move only through the payment rails.',
    },
  },
  404: {
    name: 'NotFound',
    description: "No such object in the caller's Platform and environment (objects of other tenants are answered the same way).",
    example: { type: 'invalid_request_error', code: 'resource_missing', message: "No such webhook endpoint: 'we_missing'.", param: 'id' },
  },
  409: {
    name: 'Conflict',
    description: 'The Idempotency-Key was used for a different request, or the object is not in a state that allows the operation.',
    example: {
      type: 'idempotency_error',
      code: 'idempotency_key_reused',
      message: 'This Idempotency-Key was used with a different request in the last 24 hours; use a new key for a new request.',
      param: 'Idempotency-Key',
    },
  },
  408: {
    name: 'RequestTimeout',
    description: 'The request headers did not arrive in time (answered by the HTTP parser, on any route); retry.',
    example: { type: 'invalid_request_error', code: 'request_timeout', message: 'The request headers did not arrive in time; retry.' },
  },
  413: {
    name: 'PayloadTooLarge',
    description: `The body is larger than the route accepts (${API_BODY_LIMIT / 1024} KiB for management requests), or an event is larger than ${EVENT_MAX_BYTES / 1024} KiB once serialised (\`param\` names it: \`data.object\`, or \`events[i][data][object]\` in a batch).`,
    example: {
      type: 'invalid_request_error',
      code: 'body_too_large',
      message: 'The request body is too large; management requests are small JSON objects.',
    },
  },
  415: {
    name: 'UnsupportedMediaType',
    description: 'The body is not JSON: send it with `Content-Type: application/json`.',
    example: {
      type: 'invalid_request_error',
      code: 'unsupported_media_type',
      message: 'Send the body as JSON with Content-Type: application/json.',
    },
  },
  422: {
    name: 'Unprocessable',
    description: 'Well-formed but refused: e.g. a live endpoint with a plain-http or private URL, or without the required event types.',
    example: {
      type: 'invalid_request_error',
      code: 'url_insecure',
      message: 'Live endpoints must use https. Use a sandbox key for plain-http testing.',
      param: 'url',
    },
  },
  431: {
    name: 'HeadersTooLarge',
    description: 'The request line and headers exceed 16 KiB (answered by the HTTP parser, on any route).',
    example: {
      type: 'invalid_request_error',
      code: 'headers_too_large',
      message: 'The request line and headers are too large (over 16 KiB); send fewer or shorter headers.',
    },
  },
  429: {
    name: 'TooManyRequests',
    description: 'Rate limited: wait the number of seconds in Retry-After, then retry.',
    example: { type: 'rate_limit_error', code: 'rate_limited', message: 'Too many requests for this API key; retry after 1 s.' },
    headers: { 'Retry-After': 'RetryAfter' },
  },
  500: {
    name: 'InternalError',
    description:
      'A fault on our side, logged with the request id (X-Request-Id). Retry; a write with the same Idempotency-Key applies once.',
    example: {
      type: 'api_error',
      code: 'internal_error',
      message: 'Something went wrong on our side; it has been logged. Retry the request.',
    },
  },
  502: {
    name: 'BadGateway',
    description: "payhooks listen could not forward the delivery to the local receiver (recorded as the attempt's answer).",
    example: {
      type: 'api_error',
      code: 'listen_forward_failed',
      message: 'payhooks listen could not forward the delivery: connect ECONNREFUSED 127.0.0.1:4242',
    },
  },
  503: {
    name: 'Unavailable',
    description: `The database is unreachable for now: retry after Retry-After (${UNAVAILABLE_RETRY_AFTER_S} s), with the same Idempotency-Key for a write.`,
    example: {
      type: 'api_error',
      code: 'unavailable',
      message: `The service cannot reach its database right now; retry in ${UNAVAILABLE_RETRY_AFTER_S} s (retry a write with the same idempotency key, so it applies once).`,
    },
    headers: { 'Retry-After': 'RetryAfter' },
  },
});

const HEADERS = {
  RetryAfter: {
    description: 'Seconds to wait before retrying.',
    schema: { type: 'integer', minimum: 1 },
    example: UNAVAILABLE_RETRY_AFTER_S,
  },
  IdempotentReplayed: {
    description:
      'Present (`true`) when this is the stored response of an earlier request with the same Idempotency-Key: nothing was done again.',
    schema: { type: 'string', enum: ['true'] },
    example: 'true',
  },
};

const PARAMETERS = {
  IdempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description: `Makes a retry safe: the first successful response to this key is stored for ${IDEMPOTENCY_WINDOW_MS / 3_600_000} h and returned again (with \`Idempotent-Replayed: true\`) for the same request; the same key with a different request is a 409. 1 to 255 printable ASCII characters.`,
    schema: { type: 'string', minLength: 1, maxLength: 255 },
    example: 'order-1234-create',
  },
};

/**
 * Statuses every operation of a kind can answer, from how the app handles requests (app.ts,
 * errors.ts, client-errors.ts): any request can be refused by the HTTP parser (400
 * malformed_http, 408, 431); then by authentication, body parsing and size, a too-long id (404),
 * the rate limit, and an unreachable database.
 */
function commonStatuses(security: string | undefined, method: string, path: string): number[] {
  const withBody = method === 'post' || method === 'put' || method === 'patch' || method === 'delete';
  const withId = path.includes('{');
  const statuses: number[] = [400, 408, 431];
  if (security === 'bearerAuth') statuses.push(400, 401, 429, 500, 503);
  else if (security === 'internalToken') statuses.push(400, 401, 404, 500, 503);
  else if (security === 'portalSession') statuses.push(400, 401, 500, 503, ...(withBody ? [403] : []));
  else return statuses;
  if (withBody) statuses.push(413, 415);
  if (withId) statuses.push(404);
  return statuses;
}

const isErrorRef = (response: Json) => response?.content?.['application/json']?.schema?.$ref === '#/components/schemas/Error';

function completeOperation(op: Json, method: string, path: string, schemas: Record<string, Json>): void {
  const security = op.security?.[0] ? Object.keys(op.security[0])[0] : undefined;
  // The Idempotency-Key header, by its real name and described once.
  let idempotent = false;
  if (Array.isArray(op.parameters)) {
    op.parameters = op.parameters.map((p: Json) => {
      if (p.in === 'header' && p.name === 'idempotency-key') {
        idempotent = true;
        return { $ref: '#/components/parameters/IdempotencyKey' };
      }
      return p;
    });
  }
  // Idempotent by a body field rather than the header (internal publishing): replays say so too.
  if (op['x-idempotent-replayed'] === true) idempotent = true;
  delete op['x-idempotent-replayed'];
  // A body that may be left out entirely (actions): documented, not required.
  const optional = op['x-optional-body'];
  if (optional !== undefined) {
    if (optional === true) op.requestBody.required = false;
    else op.requestBody = { required: false, content: { 'application/json': { schema: optional } } };
    delete op['x-optional-body'];
  }
  for (const status of commonStatuses(security, method, path))
    op.responses[status] ??= { content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
  for (const [status, response] of Object.entries<Json>(op.responses)) {
    if (Number(status) >= 400 && isErrorRef(response)) {
      const doc = errorDocs()[status];
      if (!doc) throw new Error(`no documented error response for ${status} (${method.toUpperCase()} ${path})`);
      op.responses[status] = { $ref: `#/components/responses/${doc.name}` };
      continue;
    }
    if (idempotent && status.startsWith('2'))
      response.headers = { 'Idempotent-Replayed': { $ref: '#/components/headers/IdempotentReplayed' }, ...response.headers };
    if (status === '503' && path === '/readyz') response.headers = { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } };
    for (const media of Object.values<Json>(response.content ?? {})) {
      if (media.example === undefined && media.examples === undefined) media.example = exampleOf(media.schema, schemas);
    }
  }
  // Sorted statuses read better than registration order.
  op.responses = Object.fromEntries(Object.entries(op.responses).sort(([a], [b]) => a.localeCompare(b)));
}

function errorComponents(): Json {
  return Object.fromEntries(
    Object.values(errorDocs()).map((e) => [
      e.name,
      {
        description: e.description,
        ...(e.headers
          ? { headers: Object.fromEntries(Object.entries(e.headers).map(([h, ref]) => [h, { $ref: `#/components/headers/${ref}` }])) }
          : {}),
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' }, example: { error: e.example } } },
      },
    ]),
  );
}

function refsIn(value: Json, out: Set<string>): Set<string> {
  if (Array.isArray(value)) for (const v of value) refsIn(v, out);
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === '$ref' && typeof v === 'string') out.add(v);
      else refsIn(v, out);
    }
  }
  return out;
}

/** Keeps the components the document's operations reach (directly or through other components). */
function prune(doc: Json): void {
  const reached = refsIn(doc.paths, new Set());
  for (let grew = true; grew; ) {
    grew = false;
    for (const ref of [...reached]) {
      const [, , section, name] = ref.split('/');
      const target = section && name ? doc.components[section]?.[name] : undefined;
      if (!target) continue;
      for (const r of refsIn(target, new Set())) {
        if (!reached.has(r)) {
          reached.add(r);
          grew = true;
        }
      }
    }
  }
  for (const section of ['schemas', 'responses', 'parameters', 'headers']) {
    const all = doc.components[section] ?? {};
    for (const name of Object.keys(all)) if (!reached.has(`#/components/${section}/${name}`)) delete all[name];
    if (Object.keys(all).length === 0) delete doc.components[section];
  }
  const used = new Set<string>();
  for (const item of Object.values<Json>(doc.paths))
    for (const m of METHODS) for (const req of item[m]?.security ?? []) for (const k of Object.keys(req)) used.add(k);
  for (const name of Object.keys(doc.components.securitySchemes ?? {})) if (!used.has(name)) delete doc.components.securitySchemes[name];
}

const PUBLIC_DESCRIPTION = `The payhooks API: webhook endpoints and their delivery log, events, payments, checkout sessions and the sandbox (under \`/api/v1\`, with an API key), and the relay of \`payhooks listen\`. The hosted checkout page a session's \`url\` points to is HTML for the customer's browser, not part of this document.

Errors are JSON \`{"error": {"type", "code", "message", "param"}}\` with a stable machine-readable \`code\`. Lists are newest first, paged with \`limit\` and \`starting_after\`. Creates and actions take an \`Idempotency-Key\`. Requests Node's HTTP parser refuses before routing are answered with the same error body: 408 \`request_timeout\` (headers too slow), 431 \`headers_too_large\` (over 16 KiB of headers), 400 \`malformed_http\`.

Every delivery is a POST of an \`Event\` (schema below) signed in \`Service-Signature\`; the merchant guide (docs/webhooks.md) explains verification.`;

const PORTAL_DESCRIPTION = `The Merchant Portal page's own JSON API (\`/portal/api\`, a cookie session with a CSRF token), for the page's developers: it changes with the page and is not a public API. Integrations use the public API (\`/api/v1\`, \`/api/v1/openapi.json\`).`;

const OPERATOR_DESCRIPTION = `The operator's side of payhooks: the internal publishing API (\`/internal/v1\`, with \`PAYHOOKS_INTERNAL_TOKEN\`) for a payment core in another process, and the health, readiness and metrics endpoints for load balancers and Prometheus. Keep these on the operator's network.`;

const TITLES: Record<DocumentKind, string> = {
  public: 'payhooks API',
  operator: 'payhooks operator API',
  portal: 'payhooks Merchant Portal API (internal to the portal page)',
};
const DESCRIPTIONS: Record<DocumentKind, string> = {
  public: PUBLIC_DESCRIPTION,
  operator: OPERATOR_DESCRIPTION,
  portal: PORTAL_DESCRIPTION,
};

function documentOf(base: Json, which: DocumentKind, serverUrl: string): Json {
  const paths = Object.fromEntries(Object.entries<Json>(base.paths).filter(([p]) => kindOf(p) === which));
  const used = new Set<string>();
  for (const item of Object.values<Json>(paths)) for (const m of METHODS) for (const t of item[m]?.tags ?? []) used.add(t);
  const doc: Json = {
    openapi: '3.1.0',
    info: {
      title: TITLES[which],
      version: 'v1',
      description: DESCRIPTIONS[which],
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [
      { url: serverUrl, description: which === 'operator' ? "This payhooks server (the operator's network)" : 'This payhooks server' },
    ],
    tags: Object.entries(TAGS)
      .filter(([name]) => used.has(name))
      .map(([name, description]) => ({ name, description })),
    paths,
    components: structuredClone(base.components),
  };
  prune(doc);
  return doc;
}

/**
 * Splits @fastify/swagger's document of every route into the public and the operator document,
 * and completes what route schemas don't say: the error responses each operation can answer
 * (as shared components with examples), the Idempotency-Key, Retry-After and Idempotent-Replayed
 * headers, an example on every response, tags, servers and the license.
 */
export function buildDocuments(generated: Json, options: { serverUrl?: string | undefined }): Record<DocumentKind, Json> {
  const base = structuredClone(generated);
  const schemas = base.components?.schemas ?? {};
  for (const [path, item] of Object.entries<Json>(base.paths ?? {})) {
    for (const m of METHODS) if (item[m]) completeOperation(item[m], m, path, schemas);
  }
  base.components = { ...base.components, responses: errorComponents(), headers: HEADERS, parameters: PARAMETERS };
  const serverUrl = options.serverUrl ?? 'http://localhost:3000';
  return {
    public: documentOf(base, 'public', serverUrl),
    operator: documentOf(base, 'operator', serverUrl),
    portal: documentOf(base, 'portal', serverUrl),
  };
}

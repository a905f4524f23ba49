/**
 * Examples of the documents: one hand-written example per named object, and `exampleOf`, which
 * builds the example of any other schema (lists, small inline objects) from its parts, so every
 * response of both documents shows one. Each is checked against its schema by `redocly lint`.
 */

import { USER_AGENT } from '../../delivery/destinations/http.ts';

const AT = '2026-01-31T12:00:00Z';
const LATER = '2026-01-31T12:00:05Z';

const payment = {
  id: 'pay_2Nf8sK3vQ1xY7rT0',
  object: 'payment',
  status: 'succeeded',
  amount: '25.00',
  asset_code: 'USDC.ETH',
  metadata: { order_id: '1234' },
  description: 'Order #1234: two mugs',
  merchant_id: 'mch_7Hq2Lm9Xc4Vb1Nz8',
  environment: 'live',
  checkout_session: 'cs_5Jd8Wq2Ze6Rt3Yu9',
  created_at: AT,
  updated_at: LATER,
};

const checkoutSession = {
  id: 'cs_5Jd8Wq2Ze6Rt3Yu9',
  object: 'checkout_session',
  status: 'complete',
  amount: '25.00',
  asset_code: 'USDC.ETH',
  metadata: { order_id: '1234' },
  description: 'Order #1234: two mugs',
  payment: 'pay_2Nf8sK3vQ1xY7rT0',
  url: 'https://payhooks.example.com/checkout/cs_5Jd8Wq2Ze6Rt3Yu9',
  success_url: 'https://shop.example/thanks',
  cancel_url: 'https://shop.example/cart',
  expires_at: '2026-01-31T13:00:00Z',
  completed_at: LATER,
  merchant_id: 'mch_7Hq2Lm9Xc4Vb1Nz8',
  environment: 'live',
  created_at: AT,
  updated_at: LATER,
};

const endpoint = {
  id: 'we_3kT9xQ2mZ8pL4wR6',
  object: 'webhook_endpoint',
  url: 'https://shop.example/webhooks',
  enabled_events: ['payment.succeeded', 'payment.failed', 'payment.expired', 'checkout_session.completed'],
  description: 'Order fulfilment',
  metadata: { team: 'checkout' },
  status: 'enabled',
  environment: 'live',
  created_at: AT,
  updated_at: AT,
  delivery_health: { status: 'healthy', consecutive_timeouts: 0, throttled_since: null },
  disabled_reason: null,
  disabled_at: null,
  previous_secret_expires_at: null,
  delivery_order: 'unordered',
  url_has_credentials: false,
  standard_webhooks: false,
  headers: {},
  max_requests_per_second: null,
  paused_until: null,
  health: { state: 'healthy', since: AT, warning: null, disables_at: null },
  authentication: null,
  tls: null,
  asymmetric_signature: true,
  public_keys: [
    {
      object: 'public_key',
      kid: 'aMXEiZe5tb6QiIfEuzewjAonTwpGLqWtPNiGmzNnRxA',
      public_key: 'whpk_639C6Lqmc4UV1F+4W2EcO643SlbFAp3tJUWEJ49JvYc=',
      jwk: {
        kty: 'OKP',
        crv: 'Ed25519',
        x: '639C6Lqmc4UV1F-4W2EcO643SlbFAp3tJUWEJ49JvYc',
        kid: 'aMXEiZe5tb6QiIfEuzewjAonTwpGLqWtPNiGmzNnRxA',
        use: 'sig',
        alg: 'EdDSA',
      },
      created_at: AT,
      expires_at: null,
    },
  ],
};

const attempt = {
  id: 'wha_9Pq3Rs5Tu7Vw1Xy2',
  object: 'delivery_attempt',
  attempt_number: 1,
  trigger: 'automatic',
  succeeded: true,
  started_at: LATER,
  duration_ms: 84,
  status_code: 200,
  response_body: '{"received":true}',
  request_headers: {
    'Content-Type': 'application/json',
    'User-Agent': USER_AGENT,
    'Service-Event-Id': 'evt_1Qw3Er5Ty7Ui9Op0',
    'Service-Signature': 't=1767225600,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd',
  },
  error_kind: null,
  error_message: null,
  worker_id: null,
  rate_limited_ms: null,
};

const delivery = {
  id: 'whd_4Lk6Mn8Bv0Cx2Za3',
  object: 'webhook_delivery',
  event_id: 'evt_1Qw3Er5Ty7Ui9Op0',
  endpoint_id: endpoint.id,
  state: 'delivered',
  cancel_reason: null,
  attempt_count: 1,
  next_attempt_at: null,
  last_attempt_at: LATER,
  created_at: LATER,
  waiting_for: null,
  attempts: [attempt],
};

const event = {
  id: 'evt_1Qw3Er5Ty7Ui9Op0',
  object: 'event',
  type: 'payment.succeeded',
  api_version: 'v1',
  environment: 'live',
  merchant_id: payment.merchant_id,
  created_at: LATER,
  data: { object: payment },
};

const auditEvent = {
  id: 'aud_3kTMd8Hq2Lp5Vx9Zc1Rw7Ny4',
  object: 'audit_event',
  created_at: LATER,
  environment: 'live',
  action: 'webhook_endpoint.update',
  outcome: 'succeeded',
  error_code: null,
  actor: { type: 'embedded_user', id: 'user_8812', email: 'ana@shop.example', name: 'Ana Lima' },
  resource: { type: 'webhook_endpoint', id: endpoint.id },
  changes: { enabled_events: ['payment.succeeded', 'payment.failed', 'payment.expired', 'checkout_session.completed'] },
  origin: { ip: '203.0.113.7', user_agent: 'Mozilla/5.0 (X11; Linux x86_64)', request_id: 'req_7Yp2Kd9Qm4Xw1Vb6' },
};

const failures = { timeout: 1, connection: 0, tls: 0, http_4xx: 0, http_429: 0, http_5xx: 2, endpoint_disabled: 0, other: 0 };
const stats = {
  object: 'webhook_stats',
  endpoint_id: endpoint.id,
  environment: 'live',
  granularity: 'hour',
  from: '2026-01-31T11:00:00Z',
  until: '2026-01-31T13:00:00Z',
  totals: { attempts: 123, successes: 120, failures, latency_ms: { p50: 84, p95: 310, p99: 1130 } },
  data: [
    {
      start: '2026-01-31T11:00:00Z',
      attempts: 60,
      successes: 60,
      failures: { ...failures, timeout: 0, http_5xx: 0 },
      latency_ms: { p50: 80, p95: 240, p99: 400 },
    },
    { start: '2026-01-31T12:00:00Z', attempts: 63, successes: 60, failures, latency_ms: { p50: 88, p95: 340, p99: 1130 } },
  ],
};

/** By component name (`#/components/schemas/<name>`). */
export const COMPONENT_EXAMPLES: Record<string, unknown> = {
  Payment: payment,
  CheckoutSession: checkoutSession,
  WebhookEndpoint: endpoint,
  WebhookEndpointWithSecret: { ...endpoint, secret: 'whsec_8f2b6c1d9e4a7f3b5c0d2e6a9b1f4c7d' },
  DeliveryAttempt: attempt,
  WebhookDelivery: delivery,
  Event: event,
  EventType: 'payment.succeeded',
  EnabledEventType: 'payment.succeeded',
  AuditEvent: auditEvent,
  WebhookStats: stats,
};

type Schema = Record<string, unknown>;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** An example valid against `schema`; `schemas` resolves `#/components/schemas/…` references. */
export function exampleOf(schema: Schema | undefined, schemas: Record<string, Schema>, depth = 0): unknown {
  if (!schema || depth > 12) return null;
  if (schema.example !== undefined) return schema.example;
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  if (typeof schema.$ref === 'string') {
    const name = schema.$ref.replace('#/components/schemas/', '');
    const written = COMPONENT_EXAMPLES[name];
    if (written === undefined) return exampleOf(schemas[name], schemas, depth + 1);
    // A required property added to the schema after its example was written gets its own
    // example (or default) here, so the written example stays valid with no edit of this file.
    const generated = exampleOf(schemas[name], schemas, depth + 1);
    if (!isObject(written) || !isObject(generated)) return written;
    const required = (schemas[name]?.required ?? []) as string[];
    const missing = required.filter((k) => !(k in written)).map((k) => [k, generated[k]]);
    return missing.length === 0 ? written : { ...written, ...Object.fromEntries(missing) };
  }
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.allOf)) return Object.assign({}, ...(schema.allOf as Schema[]).map((s) => exampleOf(s, schemas, depth + 1)));
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if (schema.default !== undefined) return schema.default;
  for (const key of ['anyOf', 'oneOf'] as const) {
    const branches = schema[key];
    if (Array.isArray(branches)) {
      const branch = (branches as Schema[]).find((b) => b.type !== 'null') ?? branches[0];
      return exampleOf(branch as Schema, schemas, depth + 1);
    }
  }
  const type = Array.isArray(schema.type) ? (schema.type as string[]).find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries((schema.properties ?? {}) as Record<string, Schema>)) out[k] = exampleOf(v, schemas, depth + 1);
      return out;
    }
    case 'array':
      return schema.items ? [exampleOf(schema.items as Schema, schemas, depth + 1)] : [];
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return typeof schema.minimum === 'number' ? schema.minimum : 0;
    case 'boolean':
      return true;
    default:
      return null;
  }
}

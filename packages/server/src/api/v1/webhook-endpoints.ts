import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import { AppError, notFound } from '../../errors.ts';
import { withIdempotency } from '../idempotency.ts';
import { MAX_EXPIRE_PREVIOUS_IN, MAX_REQUESTS_PER_SECOND } from '../../endpoints/service.ts';
import { MAX_CUSTOM_HEADERS, MAX_CUSTOM_HEADER_BYTES } from '../../endpoints/custom-headers.ts';
import { ListOf, ListQuery, Metadata, Timestamp, errorResponses } from './schemas.ts';
import { EnabledEventTypeSchema } from './event-schemas.ts';
import { IdempotencyHeaders, idempotentResponse } from './payment-schemas.ts';

export const EnabledEvents = Type.Array(Type.Ref(EnabledEventTypeSchema), {
  minItems: 1,
  maxItems: 100,
  description: 'Event types to deliver to this endpoint, or ["*"] for every type.',
});
export const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  description:
    'Absolute http(s) URL; live endpoints need https. Or a message broker: amqps://user:password@host/vhost?exchange=…&routing_key=… (RabbitMQ, an exchange you declared) or tls://user:password@host?subject=… (NATS JetStream); live endpoints need amqps or tls. Credentials are stored encrypted and never shown again.',
});
export const Description = Type.Union([Type.String({ maxLength: 5000 }), Type.Null()]);
export const DeliveryOrder = Type.Union([Type.Literal('unordered'), Type.Literal('per_object')], {
  description:
    'unordered (default): deliveries go as soon as they are due, in any order. per_object: the events about one object (data.object.id) go one at a time, in the order they were published; a later one waits while an earlier one is pending or failed_retrying (see waiting_for on the delivery) and goes once it is delivered or exhausted. Other objects are never held up.',
});

export const MaxRequestsPerSecond = Type.Union([Type.Integer({ minimum: 1, maximum: MAX_REQUESTS_PER_SECOND }), Type.Null()], {
  description:
    'Most requests a second the endpoint is sent, across every worker (null, the default: no cap). Under a backlog deliveries wait for their turn (each attempt shows how long in rate_limited_ms); about 95% of the cap is used, so that varying network delays rarely make a second at the receiver see more than the cap (then one more request). Manual replays and resends are not held by it.',
});
export const StandardWebhooks = Type.Boolean({
  description:
    "Also send the Standard Webhooks headers (webhook-id: the event id; webhook-timestamp: the same t as Service-Signature; webhook-signature: v1,<base64> per live secret), so a receiver can verify with a Standard Webhooks library given this endpoint's whsec_ secret. Service-Event-Id and Service-Signature are sent either way. Turning it on for an endpoint whose secret predates it answers 409 secret_not_standard_webhooks_compatible: roll the secret first.",
});
/** What a request may send: the names and values are checked by endpoints/custom-headers.ts, for their own error codes. */
export const CustomHeadersInput = Type.Union([Type.Record(Type.String(), Type.String()), Type.Null()], {
  description: `Your own request headers, sent with every attempt and never signed, e.g. {"Authorization": "Basic …"}. Replaces the whole set on update; null or {} removes them. At most ${MAX_CUSTOM_HEADERS} headers and ${MAX_CUSTOM_HEADER_BYTES} bytes of names and values; names are tokens, values printable ASCII. Refused (400 header_reserved): Content-Type, Content-Length, Content-Encoding, User-Agent, Host, Expect, traceparent, tracestate, the hop-by-hop headers (Connection, Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade, Proxy-*), and Service-* and webhook-* names.`,
});

/** RFC 7617: the user-id ends at the first colon; neither part may hold a control character. */
export const AuthenticationInputSchema = Type.Union(
  [
    Type.Object(
      {
        type: Type.Literal('basic'),
        username: Type.String({ minLength: 1, maxLength: 255, description: 'No colon.' }),
        password: Type.String({ minLength: 1, maxLength: 1024, description: 'Stored encrypted; never shown again.' }),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        type: Type.Literal('mtls'),
        certificate: Type.String({ minLength: 1, maxLength: 65536, description: 'The client certificate, then its chain (PEM).' }),
        private_key: Type.String({
          minLength: 1,
          maxLength: 65536,
          description: "The certificate's private key (unencrypted PEM); stored encrypted, never shown again.",
        }),
        expire_previous_in: Type.Optional(
          Type.Integer({
            minimum: 0,
            maximum: MAX_EXPIRE_PREVIOUS_IN,
            description:
              'When this replaces a client certificate: seconds the replaced one is still presented if the receiver refuses the new one (default 86400 = 24 h; 0: not kept), so your gateway can be taught to trust the new certificate in the meantime.',
          }),
        ),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        type: Type.Literal('oauth2_client_credentials'),
        token_url: Type.String({
          minLength: 1,
          maxLength: 2048,
          description: "The authorization server's token endpoint: https, under the same address rules as endpoint URLs.",
        }),
        client_id: Type.String({ minLength: 1, maxLength: 255 }),
        client_secret: Type.String({ minLength: 1, maxLength: 1024, description: 'Stored encrypted; never shown again.' }),
        scope: Type.Optional(
          Type.Union([Type.String({ minLength: 1, maxLength: 1024 }), Type.Null()], { description: 'Space-separated scopes to ask for.' }),
        ),
        audience: Type.Optional(
          Type.Union([Type.String({ minLength: 1, maxLength: 1024 }), Type.Null()], {
            description: 'Sent as the audience parameter, for authorization servers that issue tokens per API.',
          }),
        ),
        client_auth_method: Type.Optional(
          Type.Union([Type.Literal('client_secret_basic'), Type.Literal('client_secret_post')], {
            description: 'How the client authenticates at the token endpoint (default client_secret_basic).',
          }),
        ),
      },
      { additionalProperties: false },
    ),
    Type.Null(),
  ],
  {
    description:
      'How payhooks authenticates to your receiver beside the signature, for a gateway that wants its own credentials: {"type": "mtls", "certificate", "private_key"} presents a client certificate in the TLS handshake; {"type": "basic", "username", "password"} sends Authorization: Basic with every attempt; {"type": "oauth2_client_credentials", "token_url", "client_id", "client_secret", "scope"?, "audience"?, "client_auth_method"?} gets an access token from your authorization server (cached until shortly before it expires, fetched again once when the receiver answers 401) and sends Authorization: Bearer. Basic and OAuth 2.0 for HTTP endpoints, a client certificate for https, amqps:// and tls:// (NATS); passwords, keys and client secrets are stored encrypted and never shown; the delivery log shows Authorization: Basic [redacted] or Bearer [redacted]. Replaced whole on update; null removes it. Not with a custom Authorization header.',
  },
);

export const TlsInputSchema = Type.Union(
  [
    Type.Object(
      { ca_certificates: Type.String({ minLength: 1, maxLength: 65536, description: 'PEM certificates, at most 10.' }) },
      { additionalProperties: false },
    ),
    Type.Null(),
  ],
  {
    description:
      'For a receiver on a private PKI: {"ca_certificates": PEM} adds certificate authorities this endpoint trusts beside the public ones, verified as strictly (the hostname included); verification is never turned off. For https, amqps:// and tls:// (NATS) URLs, and an OAuth 2.0 token URL. Replaced whole on update; null removes them.',
  },
);

export const AsymmetricSignature = Type.Boolean({
  description:
    'Also sign with ed25519: Service-Signature gets a v1a=<base64> entry per public key in public_keys, over the same t.rawbody bytes as v1, which a receiver verifies with the public key alone. The first time it is turned on, payhooks makes the key pair (the private key is stored encrypted and never shown). On create, absent means the Platform default.',
});

const Ed25519JwkSchema = Type.Object(
  {
    kty: Type.Literal('OKP'),
    crv: Type.Literal('Ed25519'),
    x: Type.String({ description: 'base64url of the 32 public key bytes.' }),
    kid: Type.String({ description: 'The RFC 7638 thumbprint of the key.' }),
    use: Type.Literal('sig'),
    alg: Type.Literal('EdDSA'),
  },
  { description: 'The public key as a JWK, as listed in the Platform JWKS document.' },
);

export const PublicKeySchema = Type.Object(
  {
    object: Type.Literal('public_key'),
    kid: Type.String({ description: 'The JWK kid (RFC 7638 thumbprint).' }),
    public_key: Type.String({ description: 'whpk_<base64 of the 32 key bytes>: what the receiver libraries take.' }),
    jwk: Ed25519JwkSchema,
    created_at: Timestamp,
    expires_at: Type.Union([Timestamp, Type.Null()], {
      description: 'For a rotated-out key, when it stops signing (and leaves the JWKS); null for the current key.',
    }),
  },
  { $id: 'PublicKey', description: 'An ed25519 public key that signs deliveries to the endpoint (v1a=).' },
);

const endpointProperties = {
  id: Type.String({ description: 'Prefix we_' }),
  object: Type.Literal('webhook_endpoint'),
  url: Type.String(),
  enabled_events: Type.Array(Type.Ref(EnabledEventTypeSchema)),
  description: Description,
  metadata: Type.Record(Type.String(), Type.String()),
  status: Type.Union([Type.Literal('enabled'), Type.Literal('disabled')]),
  environment: Type.Union([Type.Literal('live'), Type.Literal('sandbox')]),
  created_at: Timestamp,
  updated_at: Timestamp,
  delivery_health: Type.Object(
    {
      status: Type.Union([Type.Literal('healthy'), Type.Literal('throttled')]),
      consecutive_timeouts: Type.Integer(),
      throttled_since: Type.Union([Timestamp, Type.Null()]),
    },
    { description: 'throttled: its attempts kept timing out, so it gets one attempt at a time until it answers again.' },
  ),
  disabled_reason: Type.Union([Type.Literal('manual'), Type.Literal('failing'), Type.Null()], {
    description:
      'Why it is disabled: manual (API or portal), or failing (every delivery failed for PAYHOOKS_AUTO_DISABLE_AFTER); null while enabled.',
  }),
  disabled_at: Type.Union([Timestamp, Type.Null()]),
  previous_secret_expires_at: Type.Union([Timestamp, Type.Null()], {
    description: 'After a rotation, until when the previous secret still signs (a second v1= in Service-Signature); null otherwise.',
  }),
  delivery_order: DeliveryOrder,
  url_has_credentials: Type.Boolean({
    description: 'A broker URL was given with user:password@: they are stored encrypted and never shown (url omits them).',
  }),
  max_requests_per_second: MaxRequestsPerSecond,
  paused_until: Type.Union([Timestamp, Type.Null()], {
    description:
      'The endpoint answered 429 or 503 with Retry-After: no automatic attempt is sent until then (at most an hour ahead); the failed attempt is retried on its schedule, or at this time if later. Null when not paused.',
  }),
  standard_webhooks: StandardWebhooks,
  headers: Type.Record(Type.String(), Type.String(), {
    description: 'Your own request headers, sent with every attempt (HTTP headers; message headers for a broker); {} when none.',
  }),
  asymmetric_signature: AsymmetricSignature,
  authentication: Type.Union(
    [
      Type.Object({ type: Type.Literal('basic'), username: Type.String() }, { additionalProperties: false }),
      Type.Object(
        {
          type: Type.Literal('mtls'),
          subject: Type.String(),
          issuer: Type.String(),
          fingerprint: Type.String({ description: 'SHA-256 of the client certificate, colon-separated hex.' }),
          not_after: Type.String({ description: 'When the client certificate expires. UTC, ISO 8601 YYYY-MM-DDThh:mm:ssZ' }),
          previous: Type.Union(
            [
              Type.Object(
                {
                  subject: Type.String(),
                  issuer: Type.String(),
                  fingerprint: Type.String(),
                  not_after: Type.String(),
                  expires_at: Type.String({ description: 'Until when it is presented when the receiver refuses the current one.' }),
                },
                { additionalProperties: false },
              ),
              Type.Null(),
            ],
            { description: 'The replaced client certificate while its overlap lasts (see expire_previous_in); null: none.' },
          ),
        },
        { additionalProperties: false },
      ),
      Type.Object(
        {
          type: Type.Literal('oauth2_client_credentials'),
          token_url: Type.String(),
          client_id: Type.String(),
          scope: Type.Union([Type.String(), Type.Null()]),
          audience: Type.Union([Type.String(), Type.Null()]),
          client_auth_method: Type.Union([Type.Literal('client_secret_basic'), Type.Literal('client_secret_post')]),
        },
        { additionalProperties: false },
      ),
      Type.Null(),
    ],
    {
      description:
        'How payhooks authenticates to the receiver beside the signature, without its secret (basic: the username; mtls: the client certificate; oauth2_client_credentials: everything but the client secret); null: none.',
    },
  ),
  tls: Type.Union([Type.Object({ ca_certificates: Type.String() }, { additionalProperties: false }), Type.Null()], {
    description: 'Certificate authorities trusted for this endpoint beside the public ones (PEM, as given); null: the public ones only.',
  }),
  health: Type.Object(
    {
      state: Type.Union([Type.Literal('healthy'), Type.Literal('failing'), Type.Literal('disabled'), Type.Literal('recovered')]),
      since: Type.String({
        description: 'When it entered this state (healthy: its last recovery, or its creation). UTC, ISO 8601 YYYY-MM-DDThh:mm:ssZ',
      }),
      warning: Type.Union([Type.Literal(50), Type.Literal(90), Type.Null()], {
        description:
          'While failing: 50 or 90 once its failures have lasted that share (%) of the auto-disable window (PAYHOOKS_AUTO_DISABLE_AFTER); null otherwise.',
      }),
      disables_at: Type.Union([Timestamp, Type.Null()], {
        description: 'While failing: when it will be disabled if no delivery succeeds (null when auto-disable is off).',
      }),
    },
    {
      description:
        'failing: every attempt has failed for PAYHOOKS_HEALTH_FAILING_AFTER (at least PAYHOOKS_HEALTH_FAILING_ATTEMPTS of them); recovered: a 2xx came after (shown for a day); disabled: the endpoint is disabled. Each change but disabled-by-hand is also sent as webhook_endpoint.failing, webhook_endpoint.disabled or webhook_endpoint.recovered.',
    },
  ),
  platform_id: Type.Optional(
    Type.Union([Type.String(), Type.Null()], {
      description:
        "Only in events sent to an operator endpoint: the Platform whose endpoint this is. On an operator endpoint as the internal API shows it: the Platform it hears about (null: every Platform's).",
    }),
  ),
  public_keys: Type.Array(Type.Ref(PublicKeySchema), {
    description:
      'The ed25519 public keys that sign, new first (two during a rotation overlap); empty while asymmetric_signature is false. Also in GET /platforms/{platform_id}/jwks.json.',
  }),
};

export const WebhookEndpointSchema = Type.Object(endpointProperties, {
  $id: 'WebhookEndpoint',
  description: 'A webhook endpoint: where and which events are delivered. Never carries its signing secret.',
});

export const CreatedEndpointSchema = Type.Object(
  {
    ...endpointProperties,
    secret: Type.String({ description: 'whsec_ signing secret. Returned only in this response (spec 2.3, 4.1 rule 2).' }),
  },
  {
    $id: 'WebhookEndpointWithSecret',
    description: 'A webhook endpoint with its signing secret: only the create and rotate_secret responses carry it.',
  },
);
/** What deleting an endpoint answers (the API's and the internal API's operator endpoints). */
export const DeletedEndpointSchema = Type.Object(
  { id: Type.String(), object: Type.Literal('webhook_endpoint'), deleted: Type.Literal(true) },
  { description: 'The endpoint is deleted.' },
);
export const CreatedEndpoint = Type.Ref(CreatedEndpointSchema);

/** The rotate body, for the document only (rotateParameters checks it: no body at all is fine). */
export const RotateBody = Type.Object(
  {
    expire_previous_in: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_EXPIRE_PREVIOUS_IN,
        description: 'Seconds the previous secret keeps signing (default 86400).',
      }),
    ),
  },
  { additionalProperties: false },
);

/**
 * How an endpoint is described and sent to, each optional, as every route that writes an
 * endpoint takes them (v1, the portal, the internal API's operator endpoints; the OpenAPI
 * documents read the same schemas): a new per-endpoint setting is one entry here.
 */
export const EndpointSettings = {
  description: Type.Optional(Description),
  metadata: Type.Optional(Metadata),
  delivery_order: Type.Optional(DeliveryOrder),
  standard_webhooks: Type.Optional(StandardWebhooks),
  headers: Type.Optional(CustomHeadersInput),
  max_requests_per_second: Type.Optional(MaxRequestsPerSecond),
  asymmetric_signature: Type.Optional(AsymmetricSignature),
  authentication: Type.Optional(AuthenticationInputSchema),
  tls: Type.Optional(TlsInputSchema),
};

export const CreateEndpointBody = Type.Object(
  { url: Url, enabled_events: EnabledEvents, ...EndpointSettings },
  { additionalProperties: false },
);

export const UpdateEndpointBody = Type.Object(
  {
    url: Type.Optional(Url),
    enabled_events: Type.Optional(EnabledEvents),
    status: Type.Optional(Type.Union([Type.Literal('enabled'), Type.Literal('disabled')])),
    ...EndpointSettings,
  },
  { additionalProperties: false },
);

/**
 * The rotate body: none, `{}`, or `{expire_previous_in}` (seconds; range checked by the
 * service). Checked here rather than by a route schema so that a POST with no body at all, the
 * usual call, is accepted, like the other action routes.
 */
export function rotateParameters(body: unknown, action = 'rotate_secret'): { expire_previous_in?: number } {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body))
    throw new AppError('invalid_request', 'parameter_invalid', 'Send no body, {} or {"expire_previous_in": <seconds>}.');
  const unknown = Object.keys(body).find((k) => k !== 'expire_previous_in');
  if (unknown !== undefined)
    throw new AppError('invalid_request', 'parameter_unknown', `Unknown parameter '${unknown}': ${action} takes only expire_previous_in.`, {
      param: unknown,
    });
  const value = (body as { expire_previous_in?: unknown }).expire_previous_in;
  if (value === undefined) return {};
  if (typeof value !== 'number')
    throw new AppError(
      'invalid_request',
      'parameter_invalid',
      `expire_previous_in must be a whole number of seconds from 0 to ${MAX_EXPIRE_PREVIOUS_IN} (7 days).`,
      { param: 'expire_previous_in' },
    );
  return { expire_previous_in: value };
}

export const EndpointIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 255 }) }, { additionalProperties: false });

/**
 * A path id that can't be an endpoint id (wrong prefix, stray characters, NUL) is answered
 * exactly like an unknown one: 404, no query. Only ids the service could have made reach it.
 */
const ENDPOINT_ID = /^we_[0-9A-Za-z]{1,64}$/;
export function endpointId(id: string): string {
  if (!ENDPOINT_ID.test(id)) throw notFound('webhook endpoint', id);
  return id;
}

/** `/api/v1/webhook_endpoints`: spec 4.1. Every handler works inside the caller's Scope. */
export const webhookEndpointRoutes =
  (ctx: ServiceContext): FastifyPluginAsyncTypebox =>
  async (app) => {
    const tags = ['webhook_endpoints'];
    const security = [{ bearerAuth: [] }];

    app.post(
      '/webhook_endpoints',
      {
        config: { audit: { action: 'webhook_endpoint.create', resource: 'webhook_endpoint' } },
        schema: {
          tags,
          security,
          operationId: 'createWebhookEndpoint',
          summary: 'Create a webhook endpoint',
          headers: IdempotencyHeaders,
          body: CreateEndpointBody,
          response: {
            201: idempotentResponse(CreatedEndpoint, 'The endpoint, with its signing secret (shown only here).'),
            ...errorResponses(409, 422),
          },
        },
      },
      async (req, reply) => {
        const body: Static<typeof CreateEndpointBody> = req.body;
        const result = await withIdempotency(
          ctx,
          req.scope,
          req.headers['idempotency-key'],
          { method: 'POST', path: '/api/v1/webhook_endpoints', body },
          async (tx) => ({
            status: 201,
            body: await ctx.endpoints.create(req.scope, body, tx),
          }),
        );
        if (result.replayed) void reply.header('idempotent-replayed', 'true');
        return reply.code(result.status as 201).send(result.body as Static<typeof CreatedEndpoint>);
      },
    );

    app.get(
      '/webhook_endpoints',
      {
        schema: {
          tags,
          security,
          operationId: 'listWebhookEndpoints',
          summary: 'List webhook endpoints (newest first)',
          querystring: ListQuery,
          response: { 200: ListOf(Type.Ref(WebhookEndpointSchema), 'A page of endpoints.') },
        },
      },
      async (req) => ctx.endpoints.list(req.scope, { limit: req.query.limit ?? 20, startingAfter: req.query.starting_after }),
    );

    app.get(
      '/webhook_endpoints/:id',
      {
        schema: {
          tags,
          security,
          operationId: 'retrieveWebhookEndpoint',
          summary: 'Retrieve a webhook endpoint',
          params: EndpointIdParams,
          response: { 200: Type.Ref(WebhookEndpointSchema, { description: 'The endpoint.' }), ...errorResponses(404) },
        },
      },
      async (req) => ctx.endpoints.get(req.scope, endpointId(req.params.id)),
    );

    app.patch(
      '/webhook_endpoints/:id',
      {
        config: { audit: { action: 'webhook_endpoint.update', resource: 'webhook_endpoint' } },
        schema: {
          tags,
          security,
          operationId: 'updateWebhookEndpoint',
          summary: 'Update a webhook endpoint',
          params: EndpointIdParams,
          body: UpdateEndpointBody,
          response: { 200: Type.Ref(WebhookEndpointSchema, { description: 'The updated endpoint.' }), ...errorResponses(404, 409, 422) },
        },
      },
      async (req) => ctx.endpoints.update(req.scope, endpointId(req.params.id), req.body),
    );

    app.post(
      '/webhook_endpoints/:id/rotate_secret',
      {
        config: { audit: { action: 'webhook_endpoint.rotate_secret', resource: 'webhook_endpoint' } },
        schema: {
          tags,
          security,
          operationId: 'rotateWebhookEndpointSecret',
          summary: 'Rotate the signing secret',
          'x-optional-body': RotateBody,
          description: `The new whsec_ secret is returned only in this response; the previous one keeps signing until previous_secret_expires_at. Body: none, {} or {"expire_previous_in": seconds} (0 to ${MAX_EXPIRE_PREVIOUS_IN}, default 86400 = 24 h; 0 stops the previous secret at once). Until then every attempt's Service-Signature carries one v1= per live secret, the new one first.`,
          params: EndpointIdParams,
          headers: IdempotencyHeaders,
          response: {
            200: idempotentResponse(CreatedEndpoint, 'The endpoint, with its new signing secret (shown only here).'),
            ...errorResponses(404, 409),
          },
        },
      },
      async (req, reply) => {
        const id = endpointId(req.params.id);
        const body = rotateParameters(req.body);
        const result = await withIdempotency(
          ctx,
          req.scope,
          req.headers['idempotency-key'],
          { method: 'POST', path: `/api/v1/webhook_endpoints/${id}/rotate_secret`, body },
          async (tx) => ({
            status: 200,
            body: await ctx.endpoints.rotateSecret(req.scope, id, body.expire_previous_in, tx),
          }),
        );
        if (result.replayed) void reply.header('idempotent-replayed', 'true');
        else ctx.metrics.rotations.inc();
        return reply.code(200).send(result.body as Static<typeof CreatedEndpoint>);
      },
    );

    app.post(
      '/webhook_endpoints/:id/rotate_signing_key',
      {
        config: { audit: { action: 'webhook_endpoint.rotate_signing_key', resource: 'webhook_endpoint' } },
        schema: {
          tags,
          security,
          operationId: 'rotateWebhookEndpointSigningKey',
          summary: 'Rotate the ed25519 key pair',
          'x-optional-body': RotateBody,
          description: `For an endpoint with asymmetric_signature on: a new key pair signs from now on (the first v1a=), and the previous one keeps signing (a second v1a=) and stays in public_keys and the Platform JWKS until its expires_at. Body: none, {} or {"expire_previous_in": seconds} (0 to ${MAX_EXPIRE_PREVIOUS_IN}, default 86400 = 24 h; 0 drops the previous key at once). No private key is ever returned.`,
          params: EndpointIdParams,
          headers: IdempotencyHeaders,
          response: {
            200: idempotentResponse(Type.Ref(WebhookEndpointSchema), 'The endpoint, with its new public key first in public_keys.'),
            ...errorResponses(404, 409),
          },
        },
      },
      async (req, reply) => {
        const id = endpointId(req.params.id);
        const body = rotateParameters(req.body, 'rotate_signing_key');
        const result = await withIdempotency(
          ctx,
          req.scope,
          req.headers['idempotency-key'],
          { method: 'POST', path: `/api/v1/webhook_endpoints/${id}/rotate_signing_key`, body },
          async (tx) => ({
            status: 200,
            body: await ctx.endpoints.rotateSigningKey(req.scope, id, body.expire_previous_in, tx),
          }),
        );
        if (result.replayed) void reply.header('idempotent-replayed', 'true');
        return reply.code(200).send(result.body as Static<typeof WebhookEndpointSchema>);
      },
    );

    app.delete(
      '/webhook_endpoints/:id',
      {
        config: { audit: { action: 'webhook_endpoint.delete', resource: 'webhook_endpoint' } },
        schema: {
          tags,
          security,
          operationId: 'deleteWebhookEndpoint',
          summary: 'Delete a webhook endpoint (its pending deliveries are cancelled)',
          params: EndpointIdParams,
          response: {
            200: DeletedEndpointSchema,
            ...errorResponses(404),
          },
        },
      },
      async (req) => ctx.endpoints.delete(req.scope, endpointId(req.params.id)),
    );
  };

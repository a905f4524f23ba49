import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { EVENT_TYPES, WILDCARD_EVENT_TYPE } from '@payhooks/contract';
import type { ServiceContext } from '../../context.ts';
import { notFound } from '../../errors.ts';
import { withIdempotency } from '../idempotency.ts';
import { ListOf, ListQuery, Metadata, Timestamp, errorResponses } from './schemas.ts';

const EventTypeName = Type.String({ minLength: 1, maxLength: 100, description: `'${WILDCARD_EVENT_TYPE}' or one of: ${EVENT_TYPES.join(', ')}` });
const EnabledEvents = Type.Array(EventTypeName, { minItems: 1, maxItems: 100 });
const Url = Type.String({ minLength: 1, maxLength: 2048, description: 'Absolute http(s) URL; live endpoints need https.' });
const Description = Type.Union([Type.String({ maxLength: 5000 }), Type.Null()]);

const endpointProperties = {
    id: Type.String({ description: 'Prefix we_' }),
    object: Type.Literal('webhook_endpoint'),
    url: Type.String(),
    enabled_events: Type.Array(Type.String()),
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
};

export const WebhookEndpointSchema = Type.Object(endpointProperties, { $id: 'WebhookEndpoint' });

const CreatedEndpoint = Type.Object({
  ...endpointProperties,
  secret: Type.String({ description: 'whsec_ signing secret. Returned only in this response (spec 2.3, 4.1 rule 2).' }),
});

const CreateBody = Type.Object(
  { url: Url, enabled_events: EnabledEvents, description: Type.Optional(Description), metadata: Type.Optional(Metadata) },
  { additionalProperties: false },
);

const UpdateBody = Type.Object(
  {
    url: Type.Optional(Url),
    enabled_events: Type.Optional(EnabledEvents),
    description: Type.Optional(Description),
    metadata: Type.Optional(Metadata),
    status: Type.Optional(Type.Union([Type.Literal('enabled'), Type.Literal('disabled')])),
  },
  { additionalProperties: false },
);

const EndpointIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 255 }) }, { additionalProperties: false });

/**
 * A path id that can't be an endpoint id (wrong prefix, stray characters, NUL) is answered
 * exactly like an unknown one: 404, no query. Only ids the service could have made reach it.
 */
const ENDPOINT_ID = /^we_[0-9A-Za-z]{1,64}$/;
function endpointId(id: string): string {
  if (!ENDPOINT_ID.test(id)) throw notFound('webhook endpoint', id);
  return id;
}

const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(Type.String({ description: 'Same key and body within 24 h returns the first response.' })),
});

/** `/api/v1/webhook_endpoints`: spec 4.1. Every handler works inside the caller's Scope. */
export const webhookEndpointRoutes = (ctx: ServiceContext): FastifyPluginAsyncTypebox => async (app) => {
  const tags = ['webhook_endpoints'];
  const security = [{ bearerAuth: [] }];

  app.post(
    '/webhook_endpoints',
    {
      schema: {
        tags, security, summary: 'Create a webhook endpoint', headers: IdempotencyHeaders, body: CreateBody,
        response: { 200: CreatedEndpoint, 201: CreatedEndpoint, ...errorResponses(400, 401, 409, 413, 422, 429) },
      },
    },
    async (req, reply) => {
      const body: Static<typeof CreateBody> = req.body;
      const result = await withIdempotency(ctx, req.scope, req.headers['idempotency-key'], { method: 'POST', path: '/api/v1/webhook_endpoints', body }, async (tx) => ({
        status: 201,
        body: await ctx.endpoints.create(req.scope, body, tx),
      }));
      if (result.replayed) void reply.header('idempotent-replayed', 'true');
      return reply.code(result.status as 201).send(result.body as Static<typeof CreatedEndpoint>);
    },
  );

  app.get(
    '/webhook_endpoints',
    { schema: { tags, security, summary: 'List webhook endpoints (newest first)', querystring: ListQuery, response: { 200: ListOf(Type.Ref(WebhookEndpointSchema)), ...errorResponses(400, 401, 429) } } },
    async (req) => ctx.endpoints.list(req.scope, { limit: req.query.limit ?? 20, startingAfter: req.query.starting_after }),
  );

  app.get(
    '/webhook_endpoints/:id',
    { schema: { tags, security, summary: 'Retrieve a webhook endpoint', params: EndpointIdParams, response: { 200: Type.Ref(WebhookEndpointSchema), ...errorResponses(401, 404, 429) } } },
    async (req) => ctx.endpoints.get(req.scope, endpointId(req.params.id)),
  );

  app.patch(
    '/webhook_endpoints/:id',
    { schema: { tags, security, summary: 'Update a webhook endpoint', params: EndpointIdParams, body: UpdateBody, response: { 200: Type.Ref(WebhookEndpointSchema), ...errorResponses(400, 401, 404, 413, 422, 429) } } },
    async (req) => ctx.endpoints.update(req.scope, endpointId(req.params.id), req.body),
  );

  app.delete(
    '/webhook_endpoints/:id',
    {
      schema: {
        tags, security, summary: 'Delete a webhook endpoint', params: EndpointIdParams,
        response: { 200: Type.Object({ id: Type.String(), object: Type.Literal('webhook_endpoint'), deleted: Type.Literal(true) }), ...errorResponses(401, 404, 429) },
      },
    },
    async (req) => ctx.endpoints.delete(req.scope, endpointId(req.params.id)),
  );
};

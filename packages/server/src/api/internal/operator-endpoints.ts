import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import { OPERATIONAL_EVENT_TYPES } from '@payhooks/contract';
import { requestOrigin } from '../request-origin.ts';
import { ListOf, errorResponses } from '../v1/schemas.ts';
import { StringEnum } from '../v1/event-schemas.ts';
import {
  CreatedEndpointSchema,
  DeletedEndpointSchema,
  EndpointIdParams,
  EndpointSettings,
  RotateBody,
  Url,
  WebhookEndpointSchema,
  endpointId,
  rotateParameters,
} from '../v1/webhook-endpoints.ts';
import { DeliverySchema, ListDeliveriesQuery, deliveryFilters } from '../v1/webhook-deliveries.ts';

const OperatorEvents = Type.Array(StringEnum(['*', ...OPERATIONAL_EVENT_TYPES] as const, { 'x-error-code': 'event_type_unknown' }), {
  minItems: 1,
  maxItems: 10,
  description: `Which endpoint health events it receives: ${OPERATIONAL_EVENT_TYPES.join(', ')}, or ["*"] for all of them (the default).`,
});

const CreateBody = Type.Object(
  {
    url: Url,
    environment: StringEnum(['live', 'sandbox'] as const, { description: "It hears about this environment's endpoints." }),
    platform_id: Type.Optional(
      Type.Union([Type.String({ minLength: 1, maxLength: 64 }), Type.Null()], {
        description: 'The Platform (plt_…) whose endpoints it hears about; null or left out: every Platform of the fleet.',
      }),
    ),
    enabled_events: Type.Optional(OperatorEvents),
    ...EndpointSettings,
  },
  { additionalProperties: false },
);

const UpdateBody = Type.Object(
  {
    url: Type.Optional(Url),
    enabled_events: Type.Optional(OperatorEvents),
    status: Type.Optional(Type.Union([Type.Literal('enabled'), Type.Literal('disabled')])),
    ...EndpointSettings,
  },
  { additionalProperties: false },
);

const ListQuery = Type.Object(
  { environment: Type.Optional(StringEnum(['live', 'sandbox'] as const, { description: 'Only this environment’s.' })) },
  { additionalProperties: false },
);

/**
 * `/internal/v1/operator_endpoints`: the payment service's own endpoints for endpoint health
 * events (tenancy/operator-endpoints.ts), per Platform or fleet-wide, with their delivery log.
 * Signed, retried and logged like a merchant's endpoint; no merchant ever sees them.
 */
export const internalOperatorEndpointRoutes =
  (ctx: ServiceContext): FastifyPluginAsyncTypebox =>
  async (app) => {
    const operators = ctx.operatorEndpoints;
    const base = { tags: ['internal'], security: [{ internalToken: [] }] };
    const audit = (action: string) => ({ audit: { action, resource: 'webhook_endpoint' } });

    app.post(
      '/operator_endpoints',
      {
        config: audit('webhook_endpoint.create'),
        schema: {
          ...base,
          operationId: 'createOperatorEndpoint',
          summary: "Register an endpoint for endpoint health events (one Platform's, or every Platform's)",
          description:
            'It receives webhook_endpoint.failing (again with health.warning 50 and 90 before auto-disable), webhook_endpoint.disabled and webhook_endpoint.recovered for the endpoints of platform_id (every Platform when null) in its environment, each carrying the endpoint and its platform_id, signed with its own secret (returned only here) and retried like any delivery. Turn payhooks’ own mail off per Platform with PUT /platforms/{platform_id}/alert_settings.',
          body: CreateBody,
          response: {
            201: Type.Ref(CreatedEndpointSchema, { description: 'The endpoint and its signing secret (shown only here).' }),
            ...errorResponses(400, 404, 422),
          },
        },
      },
      async (req, reply) => reply.code(201).send(await operators.create(req.body, requestOrigin(req))),
    );

    app.get(
      '/operator_endpoints',
      {
        schema: {
          ...base,
          operationId: 'listOperatorEndpoints',
          summary: 'Every operator endpoint (at most 100 per environment), newest first',
          querystring: ListQuery,
          response: {
            200: Type.Object(
              { object: Type.Literal('list'), data: Type.Array(Type.Ref(WebhookEndpointSchema)), has_more: Type.Literal(false) },
              { description: 'Every operator endpoint, each with the Platform it hears about (platform_id; null: every Platform).' },
            ),
          },
        },
      },
      async (req) => ({ object: 'list' as const, data: await operators.list(req.query.environment), has_more: false as const }),
    );

    app.get(
      '/operator_endpoints/:id',
      {
        schema: {
          ...base,
          operationId: 'retrieveOperatorEndpoint',
          summary: 'Retrieve an operator endpoint',
          params: EndpointIdParams,
          response: { 200: Type.Ref(WebhookEndpointSchema, { description: 'The operator endpoint.' }), ...errorResponses(404) },
        },
      },
      async (req) => operators.get(endpointId(req.params.id)),
    );

    app.patch(
      '/operator_endpoints/:id',
      {
        config: audit('webhook_endpoint.update'),
        schema: {
          ...base,
          operationId: 'updateOperatorEndpoint',
          summary: 'Update an operator endpoint (the Platform it hears about stays: register another)',
          params: EndpointIdParams,
          body: UpdateBody,
          response: {
            200: Type.Ref(WebhookEndpointSchema, { description: 'The updated operator endpoint.' }),
            ...errorResponses(400, 404, 422),
          },
        },
      },
      async (req) => operators.update(endpointId(req.params.id), req.body, requestOrigin(req)),
    );

    app.post(
      '/operator_endpoints/:id/rotate_secret',
      {
        config: audit('webhook_endpoint.rotate_secret'),
        schema: {
          ...base,
          operationId: 'rotateOperatorEndpointSecret',
          summary: 'Rotate its signing secret (the previous one keeps signing for expire_previous_in seconds)',
          'x-optional-body': RotateBody,
          params: EndpointIdParams,
          response: {
            200: Type.Ref(CreatedEndpointSchema, { description: 'The endpoint and its new signing secret (shown only here).' }),
            ...errorResponses(400, 404),
          },
        },
      },
      async (req) => {
        const body = rotateParameters(req.body);
        return operators.rotateSecret(endpointId(req.params.id), body.expire_previous_in, requestOrigin(req));
      },
    );

    app.delete(
      '/operator_endpoints/:id',
      {
        config: audit('webhook_endpoint.delete'),
        schema: {
          ...base,
          operationId: 'deleteOperatorEndpoint',
          summary: 'Delete an operator endpoint (its pending deliveries are cancelled)',
          params: EndpointIdParams,
          response: {
            200: DeletedEndpointSchema,
            ...errorResponses(404),
          },
        },
      },
      async (req) => operators.delete(endpointId(req.params.id), requestOrigin(req)),
    );

    app.get(
      '/operator_endpoints/:id/deliveries',
      {
        schema: {
          ...base,
          operationId: 'listOperatorEndpointDeliveries',
          summary: "An operator endpoint's delivery log, newest first, with each attempt",
          params: EndpointIdParams,
          querystring: Type.Omit(ListDeliveriesQuery, ['endpoint_id']),
          response: { 200: ListOf(Type.Ref(DeliverySchema), 'A page of its deliveries.'), ...errorResponses(400, 404) },
        },
      },
      async (req) => {
        const id = endpointId(req.params.id);
        const scope = await operators.scopeFor(id, requestOrigin(req));
        return ctx.deliveries.list(scope, { ...deliveryFilters(req.query), endpointId: id });
      },
    );
  };

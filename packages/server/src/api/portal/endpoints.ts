import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { EVENT_TYPES, REQUIRED_LIVE_EVENT_TYPES, WILDCARD_EVENT_TYPE } from '@payhooks/contract';
import type { ServiceContext } from '../../context.ts';
import { endpointStats } from '../../delivery/stats.ts';
import { AppError } from '../../errors.ts';
import { sendTestEvent } from './test-event.ts';
import { scopeOf } from '../../accounts/sessions.ts';
import { requestOrigin } from '../request-origin.ts';
import { IdParams, endpointId } from './ids.ts';
import { CreateEndpointBody as CreateBody, UpdateEndpointBody as UpdateBody, rotateParameters } from '../v1/webhook-endpoints.ts';
import { endpointAsSeenBy } from './redaction.ts';

const ListQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
    starting_after: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  },
  { additionalProperties: false },
);
const BulkBody = Type.Object(
  { since: Type.String({ minLength: 1, maxLength: 40, description: 'ISO 8601 time' }) },
  { additionalProperties: false },
);

/**
 * `/portal/api/endpoints`: Webhooks -> Endpoints. Every handler calls the same EndpointService
 * as the machine API, in the session's Scope, so tenant isolation is the same code.
 */
export const endpointRoutes =
  (ctx: ServiceContext): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get('/catalog', { config: { role: 'viewer' } }, async () => ({
      event_types: EVENT_TYPES,
      wildcard: WILDCARD_EVENT_TYPE,
      required_live_event_types: REQUIRED_LIVE_EVENT_TYPES,
    }));

    app.get('/endpoints', { schema: { querystring: ListQuery }, config: { role: 'viewer' } }, async (req) => {
      const scope = scopeOf(req.portalSession, requestOrigin(req));
      const page = await ctx.endpoints.list(scope, { limit: req.query.limit ?? 20, startingAfter: req.query.starting_after });
      const stats = await endpointStats(
        ctx.database,
        scope,
        page.data.map((e) => e.id),
        ctx.clock.now(),
      );
      const role = req.portalSession.role;
      return { ...page, data: page.data.map((e) => ({ ...endpointAsSeenBy(role, e), stats: stats.get(e.id) })) };
    });

    app.post(
      '/endpoints',
      {
        schema: { body: CreateBody },
        config: { role: 'developer', audit: { action: 'webhook_endpoint.create', resource: 'webhook_endpoint' } },
      },
      async (req, reply) => {
        const created = await ctx.endpoints.create(scopeOf(req.portalSession, requestOrigin(req)), req.body);
        return reply.code(201).send(created); // the one portal response that carries the whsec_ secret
      },
    );

    app.get('/endpoints/:id', { schema: { params: IdParams }, config: { role: 'viewer' } }, async (req) => {
      const scope = scopeOf(req.portalSession, requestOrigin(req));
      const endpoint = await ctx.endpoints.get(scope, endpointId(req.params.id));
      const stats = await endpointStats(ctx.database, scope, [endpoint.id], ctx.clock.now());
      return { ...endpointAsSeenBy(req.portalSession.role, endpoint), stats: stats.get(endpoint.id) };
    });

    app.patch(
      '/endpoints/:id',
      {
        schema: { params: IdParams, body: UpdateBody },
        config: { role: 'developer', audit: { action: 'webhook_endpoint.update', resource: 'webhook_endpoint' } },
      },
      async (req) => ctx.endpoints.update(scopeOf(req.portalSession, requestOrigin(req)), endpointId(req.params.id), req.body),
    );

    app.delete(
      '/endpoints/:id',
      {
        schema: { params: IdParams },
        config: { role: 'developer', audit: { action: 'webhook_endpoint.delete', resource: 'webhook_endpoint' } },
      },
      async (req) => ctx.endpoints.delete(scopeOf(req.portalSession, requestOrigin(req)), endpointId(req.params.id)),
    );

    // "Roll secret": the same rotation as the machine API; this response carries the new secret once.
    app.post(
      '/endpoints/:id/rotate_secret',
      {
        schema: { params: IdParams },
        config: { role: 'developer', audit: { action: 'webhook_endpoint.rotate_secret', resource: 'webhook_endpoint' } },
      },
      async (req) => {
        const rotated = await ctx.endpoints.rotateSecret(
          scopeOf(req.portalSession, requestOrigin(req)),
          endpointId(req.params.id),
          rotateParameters(req.body).expire_previous_in,
        );
        ctx.metrics.rotations.inc();
        return rotated;
      },
    );

    // "Roll signing key": the ed25519 key pair's rotation; no private key ever leaves the service.
    app.post(
      '/endpoints/:id/rotate_signing_key',
      {
        schema: { params: IdParams },
        config: { role: 'developer', audit: { action: 'webhook_endpoint.rotate_signing_key', resource: 'webhook_endpoint' } },
      },
      async (req) =>
        ctx.endpoints.rotateSigningKey(
          scopeOf(req.portalSession, requestOrigin(req)),
          endpointId(req.params.id),
          rotateParameters(req.body, 'rotate_signing_key').expire_previous_in,
        ),
    );

    app.post(
      '/endpoints/:id/test_event',
      {
        schema: { params: IdParams },
        config: { role: 'developer', audit: { action: 'webhook_endpoint.test_event', resource: 'webhook_endpoint' } },
      },
      async (req, reply) => {
        // No body (Send test event), or {type} (Send example): read here, so a POST without a body stays valid.
        const type = (req.body as { type?: unknown } | null | undefined)?.type;
        if (type !== undefined && typeof type !== 'string')
          throw new AppError('invalid_request', 'example_type_unsupported', "Invalid 'type': send an event type such as payment.failed.", {
            param: 'type',
          });
        const sent = await sendTestEvent(ctx, scopeOf(req.portalSession, requestOrigin(req)), endpointId(req.params.id), type);
        return reply.code(201).send({
          object: 'test_event',
          event_id: sent.event.id,
          type: sent.event.type,
          delivery_id: sent.delivery_id,
          payment_id: sent.payment.id,
        });
      },
    );

    const sinceOf = (raw: string) => {
      const since = new Date(raw);
      if (Number.isNaN(since.getTime()))
        throw new AppError('invalid_request', 'parameter_invalid', `Invalid 'since': send an ISO 8601 time such as 2026-01-31T12:00:00Z.`, {
          param: 'since',
        });
      return since;
    };

    // "Replay all failed since…" asks first: how many deliveries it would replay (a dry run).
    app.get(
      '/endpoints/:id/bulk_replays/preview',
      { schema: { params: IdParams, querystring: BulkBody }, config: { role: 'developer' } },
      async (req) => {
        const scope = scopeOf(req.portalSession, requestOrigin(req));
        const endpoint = await ctx.endpoints.getRow(scope, endpointId(req.params.id));
        const since = sinceOf(req.query.since);
        return {
          object: 'bulk_replay_preview',
          endpoint_id: endpoint.id,
          since: since.toISOString(),
          count: await ctx.bulkReplays.count(scope, endpoint.id, since),
        };
      },
    );

    app.post(
      '/endpoints/:id/bulk_replays',
      {
        schema: { params: IdParams, body: BulkBody },
        config: { role: 'developer', audit: { action: 'webhook_endpoint.bulk_replay', resource: 'webhook_endpoint' } },
      },
      async (req, reply) => {
        const scope = scopeOf(req.portalSession, requestOrigin(req));
        const endpoint = await ctx.endpoints.getRow(scope, endpointId(req.params.id));
        return reply.code(202).send(await ctx.bulkReplays.start(scope, endpoint.id, sinceOf(req.body.since)));
      },
    );

    app.get('/bulk_replays/:id', { schema: { params: IdParams }, config: { role: 'viewer' } }, async (req) =>
      ctx.bulkReplays.get(scopeOf(req.portalSession, requestOrigin(req)), req.params.id),
    );
  };

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { and, eq, inArray } from 'drizzle-orm';
import type { ServiceContext } from '../../context.ts';
import { events, webhookEndpoints } from '../../db/schema.ts';
import { scopeOf } from '../../accounts/sessions.ts';
import { requestOrigin } from '../request-origin.ts';
import type { Scope } from '../../scope.ts';
import { IdParams } from './ids.ts';
import { attemptAsSeenBy } from './redaction.ts';
import type { Role } from '../../accounts/roles.ts';
import { Type } from '@sinclair/typebox';
import { DeliveryFilters, deliveryFilters } from '../v1/webhook-deliveries.ts';

/** The log's filters of the public API, and the object an event is about (find by payment id). */
const PortalDeliveriesQuery = Type.Object(
  { ...DeliveryFilters, object_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })) },
  { additionalProperties: false },
);

/** Event types and endpoint URLs for a page of deliveries, read in the same Scope. */
async function labels(ctx: ServiceContext, scope: Scope, eventIds: string[], endpointIds: string[]) {
  const db = ctx.database.db;
  const [evs, eps] = await Promise.all([
    eventIds.length
      ? db
          .select({ id: events.id, type: events.type })
          .from(events)
          .where(and(eq(events.platformId, scope.platformId), eq(events.environment, scope.environment), inArray(events.id, eventIds)))
      : [],
    endpointIds.length
      ? db
          .select({ id: webhookEndpoints.id, url: webhookEndpoints.url, deletedAt: webhookEndpoints.deletedAt })
          .from(webhookEndpoints)
          .where(
            and(
              eq(webhookEndpoints.platformId, scope.platformId),
              eq(webhookEndpoints.environment, scope.environment),
              inArray(webhookEndpoints.id, endpointIds),
            ),
          )
      : [],
  ]);
  return {
    types: new Map(evs.map((e) => [e.id, e.type])),
    endpoints: new Map(eps.map((e) => [e.id, { url: e.url, deleted: e.deletedAt !== null }])),
  };
}

/**
 * `/portal/api/deliveries`: the delivery log per endpoint and per event, a delivery with its
 * event and attempts, the manual attempts (DeliveryService.replay / resend) and cancelling one.
 */
export const deliveryRoutes =
  (ctx: ServiceContext): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get('/deliveries', { schema: { querystring: PortalDeliveriesQuery }, config: { role: 'viewer' } }, async (req) => {
      const scope = scopeOf(req.portalSession, requestOrigin(req));
      const role = req.portalSession.role;
      const page = await ctx.deliveries.list(scope, { ...deliveryFilters(req.query), objectId: req.query.object_id });
      const l = await labels(ctx, scope, [...new Set(page.data.map((d) => d.event_id))], [...new Set(page.data.map((d) => d.endpoint_id))]);
      return {
        ...page,
        // The list shows the latest attempt only; the delivery page has them all.
        data: page.data.map(({ attempts, ...d }) => ({
          ...d,
          event_type: l.types.get(d.event_id) ?? null,
          endpoint_url: l.endpoints.get(d.endpoint_id)?.url ?? null,
          last_attempt: attemptAsSeenBy(role, attempts.at(-1) ?? null),
        })),
      };
    });

    const detail = async (scope: Scope, id: string, role: Role) => {
      const got = await ctx.deliveries.get(scope, id);
      const delivery = { ...got, attempts: got.attempts.map((a) => attemptAsSeenBy(role, a)) };
      const [body, l] = await Promise.all([
        ctx.events.getBody(scope, delivery.event_id),
        labels(ctx, scope, [delivery.event_id], [delivery.endpoint_id]),
      ]);
      const endpoint = l.endpoints.get(delivery.endpoint_id);
      return {
        ...delivery,
        event_type: l.types.get(delivery.event_id) ?? null,
        endpoint_url: endpoint?.url ?? null,
        endpoint_deleted: endpoint?.deleted ?? true,
        /** The exact bytes every attempt sent; the page pretty-prints them. */
        event_body: body,
      };
    };

    app.get('/deliveries/:id', { schema: { params: IdParams }, config: { role: 'viewer' } }, async (req) =>
      detail(scopeOf(req.portalSession, requestOrigin(req)), req.params.id, req.portalSession.role),
    );

    app.post(
      '/deliveries/:id/replay',
      {
        schema: { params: IdParams },
        config: { role: 'developer', audit: { action: 'webhook_delivery.replay', resource: 'webhook_delivery' } },
      },
      async (req) => {
        const scope = scopeOf(req.portalSession, requestOrigin(req));
        await ctx.deliveries.replay(scope, req.params.id);
        return detail(scope, req.params.id, req.portalSession.role);
      },
    );

    app.post(
      '/deliveries/:id/resend',
      {
        schema: { params: IdParams },
        config: { role: 'developer', audit: { action: 'webhook_delivery.resend', resource: 'webhook_delivery' } },
      },
      async (req) => {
        const scope = scopeOf(req.portalSession, requestOrigin(req));
        await ctx.deliveries.resend(scope, req.params.id);
        return detail(scope, req.params.id, req.portalSession.role);
      },
    );

    // No more attempts for a delivery that has not finished (an ordered endpoint's blocker).
    app.post(
      '/deliveries/:id/cancel',
      {
        schema: { params: IdParams },
        config: { role: 'developer', audit: { action: 'webhook_delivery.cancel', resource: 'webhook_delivery' } },
      },
      async (req) => {
        const scope = scopeOf(req.portalSession, requestOrigin(req));
        await ctx.deliveries.cancel(scope, req.params.id);
        return detail(scope, req.params.id, req.portalSession.role);
      },
    );
  };

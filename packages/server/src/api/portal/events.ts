import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { WebhookEvent } from '@payhooks/contract';
import type { ServiceContext } from '../../context.ts';
import { scopeOf } from '../../accounts/sessions.ts';
import { requestOrigin } from '../request-origin.ts';
import { IdParams } from './ids.ts';
import { eventTypeCatalog } from '../v1/event-types.ts';
import { SENDABLE_EXAMPLE_TYPES } from './test-event.ts';

/** `/portal/api/events/:id`: one event of the session's scope, with its stored body. */
export const eventRoutes =
  (ctx: ServiceContext): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get('/event_types', { config: { role: 'viewer' } }, async () => ({
      object: 'list' as const,
      data: eventTypeCatalog().map((e) => ({ ...e, sendable: SENDABLE_EXAMPLE_TYPES.includes(e.type) })),
      has_more: false,
    }));

    app.get('/events/:id', { schema: { params: IdParams }, config: { role: 'viewer' } }, async (req) => {
      const body = await ctx.events.getBody(scopeOf(req.portalSession, requestOrigin(req)), req.params.id);
      const event = JSON.parse(body) as WebhookEvent;
      return { id: event.id, object: 'event', type: event.type, created_at: event.created_at, body };
    });
  };

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import { scopeOf } from '../../accounts/sessions.ts';
import { requestOrigin } from '../request-origin.ts';
import { StatsQuery, statsFor } from '../v1/webhook-stats.ts';
import { IdParams, endpointId } from './ids.ts';

/**
 * `/portal/api/stats` and `/portal/api/endpoints/:id/stats`: the charts' data, the same answer
 * as the API's (`statsFor`) in the session's scope. Viewers read them: they hold no secret.
 */
export const statsRoutes =
  (ctx: ServiceContext): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get('/stats', { schema: { querystring: StatsQuery }, config: { role: 'viewer' } }, async (req) =>
      statsFor(ctx, scopeOf(req.portalSession, requestOrigin(req)), null, req.query),
    );
    app.get('/endpoints/:id/stats', { schema: { params: IdParams, querystring: StatsQuery }, config: { role: 'viewer' } }, async (req) =>
      statsFor(ctx, scopeOf(req.portalSession, requestOrigin(req)), endpointId(req.params.id), req.query),
    );
  };

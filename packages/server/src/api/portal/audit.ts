import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import { AuditQuery, auditFilters } from '../v1/audit-events.ts';

const PortalAuditQuery = Type.Object(
  { ...AuditQuery.properties, environment: Type.Optional(Type.Union([Type.Literal('sandbox'), Type.Literal('live')])) },
  { additionalProperties: false },
);

/** `/portal/api/audit_events` (admins): the Platform's trail, both environments, with the API's filters. */
export const auditRoutes =
  (ctx: ServiceContext): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get('/audit_events', { schema: { querystring: PortalAuditQuery }, config: { role: 'admin' } }, async (req) =>
      ctx.audit.list(
        ctx.database.db,
        req.portalSession.platformId,
        { ...auditFilters(req.query), environment: req.query.environment },
        {
          limit: req.query.limit ?? 50,
          startingAfter: req.query.starting_after,
        },
      ),
    );
  };

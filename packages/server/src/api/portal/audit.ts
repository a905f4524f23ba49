import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import { AuditQuery, auditFilters } from '../v1/audit-events.ts';

const PortalAuditQuery = Type.Object(
  { ...AuditQuery.properties, environment: Type.Optional(Type.Union([Type.Literal('sandbox'), Type.Literal('live')])) },
  { additionalProperties: false },
);

/**
 * `/portal/api/audit_events` (admins): the Platform's trail with the API's filters. A password
 * session reads both environments; an embedded one only its link's environment and the
 * Platform-wide entries (docs/portal.md, "The audit log"), like an API key.
 */
export const auditRoutes =
  (ctx: ServiceContext): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get('/audit_events', { schema: { querystring: PortalAuditQuery }, config: { role: 'admin' } }, async (req) => {
      const session = req.portalSession;
      let environment = req.query.environment;
      if (session.kind === 'embedded') {
        if (environment && environment !== session.environment)
          throw new AppError(
            'forbidden',
            'environment_locked',
            `This session was opened for ${session.environment}: open Webhooks in ${environment} from your dashboard to read its entries.`,
            { param: 'environment' },
          );
        environment = session.environment;
      }
      return ctx.audit.list(
        ctx.database.db,
        session.platformId,
        { ...auditFilters(req.query), environment },
        {
          limit: req.query.limit ?? 50,
          startingAfter: req.query.starting_after,
        },
      );
    });
  };

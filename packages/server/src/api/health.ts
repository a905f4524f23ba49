import { sql } from 'drizzle-orm';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../context.ts';
import { UNAVAILABLE_RETRY_AFTER_S } from './errors.ts';

const tags = ['operations'];
const security: [] = [];
const Database = Type.Union([Type.Literal('postgres'), Type.Literal('pglite')], { description: 'The database this process uses.' });

/** `/healthz`: the process answers. `/readyz`: and its database does too. */
export function healthRoutes(ctx: ServiceContext) {
  return async (app: FastifyInstance) => {
    app.get(
      '/healthz',
      {
        schema: {
          tags,
          security,
          operationId: 'health',
          summary: 'Liveness: the process answers (no database check)',
          response: {
            200: Type.Object({ status: Type.Literal('ok') }, { description: 'The process is up.', examples: [{ status: 'ok' }] }),
          },
        },
      },
      async () => ({ status: 'ok' }),
    );
    app.get(
      '/readyz',
      {
        schema: {
          tags,
          security,
          operationId: 'ready',
          summary: 'Readiness: the process and its database answer (for the load balancer)',
          response: {
            200: Type.Object(
              { status: Type.Literal('ready'), database: Database },
              { description: 'Ready to serve.', examples: [{ status: 'ready', database: 'postgres' }] },
            ),
            503: Type.Object(
              { status: Type.Literal('unavailable'), database: Database },
              {
                description: `The database does not answer; Retry-After: ${UNAVAILABLE_RETRY_AFTER_S}.`,
                examples: [{ status: 'unavailable', database: 'postgres' }],
              },
            ),
          },
        },
      },
      async (_req, reply) => {
        try {
          await ctx.database.db.execute(sql`SELECT 1`);
          return { status: 'ready', database: ctx.database.kind };
        } catch (err) {
          ctx.logger.warn({ err }, 'readiness check failed');
          return reply
            .code(503)
            .header('retry-after', String(UNAVAILABLE_RETRY_AFTER_S))
            .send({ status: 'unavailable', database: ctx.database.kind });
        }
      },
    );
  };
}

import { sql } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../context.ts';
import { UNAVAILABLE_RETRY_AFTER_S } from './errors.ts';

/** `/healthz`: the process answers. `/readyz`: and its database does too. */
export function healthRoutes(ctx: ServiceContext) {
  return async (app: FastifyInstance) => {
    app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
    app.get('/readyz', { schema: { hide: true } }, async (_req, reply) => {
      try {
        await ctx.database.db.execute(sql`SELECT 1`);
        return { status: 'ready', database: ctx.database.kind };
      } catch (err) {
        ctx.logger.warn({ err }, 'readiness check failed');
        return reply.code(503).header('retry-after', String(UNAVAILABLE_RETRY_AFTER_S)).send({ status: 'unavailable', database: ctx.database.kind });
      }
    });
  };
}

import cookie from '@fastify/cookie';
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import { SessionStore, type PortalSession } from '../../portal/sessions.ts';
import { deliveryRoutes } from './deliveries.ts';
import { endpointRoutes } from './endpoints.ts';
import { eventRoutes } from './events.ts';
import { SESSION_COOKIE, checkCsrf, checkOrigin, isMutation, securityHeaders } from './security.ts';
import { sessionRoutes } from './session.ts';
import { settingsRoutes } from './settings.ts';
import { SignInLimiter } from './sign-in-limits.ts';
import type { WindowCounters } from '../window-counters.ts';
import { DEFAULT_PORTAL_DIST, portalStatic } from './static.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the portal's session hook on /portal/api routes. */
    portalSession: PortalSession;
  }
  interface FastifyContextConfig {
    /** A portal API route that needs no session (sign-in). */
    public?: boolean;
  }
}

/**
 * The Merchant Portal: the static UI under /portal/ and its JSON API under /portal/api/.
 * Every API route but sign-in needs a session (cookie); every mutation passes the Origin check,
 * and every mutation in a session the CSRF token check. Handlers build their Scope from the
 * session (Platform + chosen environment) and call the same domain services as /api/v1.
 */
interface PortalOptions {
  dist?: string | undefined;
  /** The counters of the sign-in limits, shared by every API process. */
  counters: WindowCounters;
}

export async function portal(root: FastifyInstance, ctx: ServiceContext, options: PortalOptions): Promise<void> {
  await root.register(async (app) => portalScope(app, ctx, options));
}

async function portalScope(app: FastifyInstance, ctx: ServiceContext, options: PortalOptions): Promise<void> {
  // The portal's page and assets are not in the OpenAPI documents; its JSON API is, from
  // api/openapi/overlays.ts (whose entries override this).
  app.addHook('onRoute', (route) => {
    route.schema = { ...(route.schema ?? {}), hide: true };
  });
  await app.register(cookie);
  const sessions = new SessionStore(ctx.database.db, () => ctx.clock.now());

  await app.register(
    async (api) => {
      api.addHook('onRequest', async (req, reply) => {
        securityHeaders(reply);
        void reply.header('cache-control', 'no-store');
        if (isMutation(req)) checkOrigin(req);
        if (req.routeOptions.config.public) return;
        const session = await sessions.find(req.cookies[SESSION_COOKIE]);
        if (!session) throw new AppError('authentication', 'not_signed_in', 'Sign in to the portal first (your session may have ended).');
        req.portalSession = session;
        if (isMutation(req)) checkCsrf(req, session);
      });
      await api.register(sessionRoutes(ctx, sessions, new SignInLimiter(options.counters, ctx.secrets)));
      await api.register(endpointRoutes(ctx));
      await api.register(deliveryRoutes(ctx));
      await api.register(eventRoutes(ctx));
      await api.register(settingsRoutes(ctx));
    },
    { prefix: '/portal/api' },
  );
  await portalStatic(app, options.dist ?? DEFAULT_PORTAL_DIST);
}

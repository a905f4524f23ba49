import cookie from '@fastify/cookie';
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import type { PortalSession } from '../../accounts/sessions.ts';
import { requireRole, type Role } from '../../accounts/roles.ts';
import { sessionSubject } from '../../accounts/deps.ts';
import { requestOrigin } from '../request-origin.ts';
import { deliveryRoutes } from './deliveries.ts';
import { endpointRoutes } from './endpoints.ts';
import { statsRoutes } from './stats.ts';
import { eventRoutes } from './events.ts';
import { checkCsrf, checkOrigin, isMutation, securityHeaders, sessionToken } from './security.ts';
import { sessionRoutes } from './session.ts';
import { settingsRoutes } from './settings.ts';
import { teamRoutes } from './team.ts';
import { accountRoutes } from './account.ts';
import { auditRoutes } from './audit.ts';
import { SignInLimiter } from './sign-in-limits.ts';
import type { WindowCounters } from '../window-counters.ts';
import { DEFAULT_PORTAL_DIST, portalStatic } from './static.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the portal's session hook on /portal/api routes. */
    portalSession: PortalSession;
  }
  interface FastifyContextConfig {
    /** A portal API route that needs no session (sign-in, invitations, resets, the payment service's link). */
    public?: boolean;
    /** The least role a portal API route needs (accounts/roles.ts); every route but the public ones declares one. */
    role?: Role;
    /** Usable by a session that must still set up two-factor sign-in (the set-up itself, who am I, sign out). */
    beforeTwoFactorSetup?: boolean;
    /**
     * Our portal users' team (users, invitations): not for a session the payment service's link
     * opened, which gets no more than its link named (docs/decisions/embedded-sessions-get-what-the-link-names.md).
     */
    passwordSessionOnly?: boolean;
  }
}

/**
 * The Merchant Portal: the static UI under /portal/ and its JSON API under /portal/api/.
 * Every API route but the public ones needs a session (its cookie, or the bearer token of a page
 * opened through the payment service's link) and declares the least role it needs, checked here
 * for every request; every mutation passes the Origin check, and every mutation in a session the
 * CSRF token check. Handlers build their Scope from the session (Platform + environment + who)
 * and call the same domain services as /api/v1.
 */
interface PortalOptions {
  dist?: string | undefined;
  /** The counters of the sign-in limits, shared by every API process. */
  counters: WindowCounters;
}

export async function portal(root: FastifyInstance, ctx: ServiceContext, options: PortalOptions): Promise<void> {
  await root.register(async (app) => portalScope(app, ctx, options));
}

const SESSION_ENDED: Record<'idle' | 'expired', (ctx: ServiceContext) => AppError> = {
  idle: (ctx) =>
    new AppError(
      'authentication',
      'session_idle',
      `Your session ended after ${Math.round(ctx.config.portalIdleTimeoutMs / 60_000)} minutes without activity. Sign in again.`,
    ),
  expired: (ctx) =>
    new AppError(
      'authentication',
      'session_expired',
      `Your session reached its ${Math.round(ctx.config.portalSessionLifetimeMs / 3_600_000)}-hour limit. Sign in again.`,
    ),
};

async function portalScope(app: FastifyInstance, ctx: ServiceContext, options: PortalOptions): Promise<void> {
  const frameAncestors = ctx.config.portalFrameAncestors;
  // The portal's page and assets are not in the OpenAPI documents; its JSON API is, from
  // api/openapi/overlays.ts (whose entries override this).
  app.addHook('onRoute', (route) => {
    route.schema = { ...(route.schema ?? {}), hide: true };
  });
  await app.register(cookie);

  await app.register(
    async (api) => {
      api.addHook('onRoute', (route) => {
        const config = (route.config ?? {}) as { public?: boolean; role?: Role };
        if (!config.public && !config.role)
          throw new Error(`${route.method} ${route.url}: every portal API route declares the least role it needs (config.role).`);
      });
      api.addHook('onRequest', async (req, reply) => {
        securityHeaders(reply, frameAncestors);
        void reply.header('cache-control', 'no-store');
        if (isMutation(req)) checkOrigin(req);
        const config = req.routeOptions.config;
        if (config.public) return;
        const found = await ctx.sessions.find(sessionToken(req));
        if (!found) throw new AppError('authentication', 'not_signed_in', 'Sign in to the portal first (your session may have ended).');
        if ('ended' in found) throw SESSION_ENDED[found.ended](ctx);
        const session = found.session;
        req.portalSession = session;
        req.auditSubject = sessionSubject(session, requestOrigin(req), session.environment);
        if (isMutation(req)) checkCsrf(req, session);
        if (session.needsTwoFactorSetup && !config.beforeTwoFactorSetup)
          throw new AppError(
            'forbidden',
            'two_factor_setup_required',
            'Your team requires two-factor sign-in: set it up under Account before doing anything else.',
          );
        requireRole(session.role, config.role!);
        if (config.passwordSessionOnly && session.kind === 'embedded')
          throw new AppError(
            'forbidden',
            'embedded_session_not_allowed',
            "Your payment service's dashboard manages who has access: a session opened from it can't see or change payhooks portal users or invitations.",
          );
      });
      const limiter = new SignInLimiter(options.counters, ctx.secrets);
      await api.register(sessionRoutes(ctx, limiter));
      await api.register(endpointRoutes(ctx));
      await api.register(statsRoutes(ctx));
      await api.register(deliveryRoutes(ctx));
      await api.register(eventRoutes(ctx));
      await api.register(settingsRoutes(ctx));
      await api.register(teamRoutes(ctx, limiter));
      await api.register(accountRoutes(ctx, limiter));
      await api.register(auditRoutes(ctx));
    },
    { prefix: '/portal/api' },
  );
  await portalStatic(app, options.dist ?? DEFAULT_PORTAL_DIST, frameAncestors);
}

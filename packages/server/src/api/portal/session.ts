import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import type { PortalSession } from '../../accounts/sessions.ts';
import { getPortalTheme } from '../../tenancy/settings.ts';
import { requestOrigin } from '../request-origin.ts';
import { SESSION_COOKIE, cookieOptions } from './security.ts';
import type { SignInLimiter } from './sign-in-limits.ts';

const SignInBody = Type.Object(
  { email: Type.String({ minLength: 1, maxLength: 254 }), password: Type.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
);
const TwoFactorBody = Type.Object(
  { challenge: Type.String({ minLength: 1, maxLength: 100 }), code: Type.String({ minLength: 1, maxLength: 20 }) },
  { additionalProperties: false },
);
const LinkBody = Type.Object({ token: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false });
const EnvironmentBody = Type.Object(
  { environment: Type.Union([Type.Literal('sandbox'), Type.Literal('live')]) },
  { additionalProperties: false },
);

/**
 * What the page needs about who is signed in: the CSRF token it sends back on mutations, the
 * role (it hides what the role can't do; the server refuses it anyway), when the session ends,
 * the Platform's theme, and for an embedded session where "Back" goes and which page may frame it.
 */
export async function sessionView(ctx: ServiceContext, session: PortalSession) {
  return {
    object: 'portal_session' as const,
    kind: session.kind,
    user: { id: session.userId, email: session.email, name: session.name },
    role: session.role,
    platform: { id: session.platformId, name: session.platformName },
    environment: session.environment,
    /** Embedded sessions stay in the environment their link named. */
    environment_locked: session.kind === 'embedded',
    csrf_token: session.csrfToken,
    expires_at: session.expiresAt.toISOString(),
    idle_timeout_seconds: Math.round(ctx.sessions.limits.idleMs / 1000),
    needs_two_factor_setup: session.needsTwoFactorSetup,
    return_url: session.returnUrl,
    theme: await getPortalTheme(ctx.database.db, session.platformId),
    /** The origins allowed to frame the portal: the page tells them its height, and no one else. */
    frame_ancestors: ctx.config.portalFrameAncestors,
    password_sign_in: ctx.config.portalPasswordSignIn,
  };
}

const signInEmail = (body: { email: string }) => body.email.trim().toLowerCase();

/** A password session's cookie (an embedded page carries its token in a header instead). */
export function setSessionCookie(req: FastifyRequest, reply: FastifyReply, token: string, session: PortalSession): void {
  void reply.setCookie(SESSION_COOKIE, token, cookieOptions(req, session.expiresAt));
}

/**
 * `/portal/api/session`: sign in (then the two-factor step when the user has it on), open the
 * payment service's link, who am I, switch environment, sign out.
 */
export const sessionRoutes =
  (ctx: ServiceContext, limiter: SignInLimiter): FastifyPluginAsyncTypebox =>
  async (app) => {
    const { signIn } = ctx.accounts;

    app.post(
      '/session',
      { schema: { body: SignInBody }, config: { public: true, audit: { action: 'session.create', resource: 'portal_session' } } },
      async (req, reply) => {
        const email = signInEmail(req.body);
        await limiter.check(req, email);
        const result = await signIn.password(email, req.body.password, requestOrigin(req));
        // A device becomes known for the email only once it has signed in fully.
        if (result.kind === 'two_factor')
          return { object: 'two_factor_challenge' as const, challenge: result.challenge, expires_at: result.expiresAt.toISOString() };
        setSessionCookie(req, reply, result.token, result.session);
        limiter.remember(req, reply, email);
        return sessionView(ctx, result.session);
      },
    );

    app.post(
      '/session/two_factor',
      { schema: { body: TwoFactorBody }, config: { public: true, audit: { action: 'session.create', resource: 'portal_session' } } },
      async (req, reply) => {
        // Counted against the challenge's email, like the password before it.
        const email = await signIn.challengeEmail(req.body.challenge);
        if (email) await limiter.check(req, email);
        else await limiter.checkAddress(req);
        const result = await signIn.twoFactor(req.body.challenge, req.body.code, requestOrigin(req));
        if (result.kind !== 'session') throw new Error('a two-factor step ends in a session');
        setSessionCookie(req, reply, result.token, result.session);
        if (email) limiter.remember(req, reply, email);
        return sessionView(ctx, result.session);
      },
    );

    // The page of a link from the payment service (`/portal/launch#token=…`) trades the token
    // for a session here. The session token comes back in the body, not as a cookie: the page
    // may be in the payment service's frame, where the browser may not send our cookies.
    app.post(
      '/session/link',
      { schema: { body: LinkBody }, config: { public: true, audit: { action: 'session.create', resource: 'portal_session' } } },
      async (req) => {
        await limiter.checkAddress(req);
        const { token, session } = await ctx.accounts.links.open(req.body.token, requestOrigin(req));
        return { ...(await sessionView(ctx, session)), session_token: token };
      },
    );

    app.get('/session', { config: { role: 'viewer', beforeTwoFactorSetup: true } }, async (req) => sessionView(ctx, req.portalSession));

    app.put(
      '/session/environment',
      {
        schema: { body: EnvironmentBody },
        config: { role: 'viewer', audit: { action: 'session.switch_environment', resource: 'portal_session' } },
      },
      async (req) => {
        await signIn.switchEnvironment(req.portalSession, req.body.environment, requestOrigin(req));
        return sessionView(ctx, { ...req.portalSession, environment: req.body.environment });
      },
    );

    app.delete(
      '/session',
      { config: { role: 'viewer', beforeTwoFactorSetup: true, audit: { action: 'session.delete', resource: 'portal_session' } } },
      async (req, reply) => {
        await signIn.signOut(req.portalSession, requestOrigin(req));
        void reply.clearCookie(SESSION_COOKIE, cookieOptions(req));
        return { object: 'portal_session', signed_out: true };
      },
    );
  };

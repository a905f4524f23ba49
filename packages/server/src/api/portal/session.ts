import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import { decoyHash, verifyPassword } from '../../portal/passwords.ts';
import { findUserByEmail } from '../../portal/users.ts';
import type { PortalSession, SessionStore } from '../../portal/sessions.ts';
import { SESSION_COOKIE, cookieOptions } from './security.ts';
import type { SignInLimiter } from './sign-in-limits.ts';

const SignInBody = Type.Object(
  { email: Type.String({ minLength: 1, maxLength: 254 }), password: Type.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
);
const EnvironmentBody = Type.Object(
  { environment: Type.Union([Type.Literal('sandbox'), Type.Literal('live')]) },
  { additionalProperties: false },
);

/** What the page needs about who is signed in, including the CSRF token it sends back on mutations. */
export function sessionView(session: PortalSession) {
  return {
    object: 'portal_session',
    user: { id: session.userId, email: session.email },
    platform: { id: session.platformId, name: session.platformName },
    environment: session.environment,
    csrf_token: session.csrfToken,
    expires_at: session.expiresAt.toISOString(),
  };
}

const signInEmail = (body: { email: string }) => body.email.trim().toLowerCase();

/** `/portal/api/session`: sign in, who am I, switch environment, sign out. */
export const sessionRoutes =
  (ctx: ServiceContext, sessions: SessionStore, limiter: SignInLimiter): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.post('/session', { schema: { body: SignInBody }, config: { public: true } }, async (req, reply) => {
      const email = signInEmail(req.body);
      await limiter.check(req, email);
      const user = await findUserByEmail(ctx.database.db, email);
      // An unknown email costs the same scrypt as a wrong password, and gets the same answer.
      const ok = await verifyPassword(req.body.password, user?.passwordHash ?? (await decoyHash(ctx.passwordCost)));
      if (!user || !ok) throw new AppError('authentication', 'invalid_credentials', 'Incorrect email or password.');
      const { token, expiresAt } = await sessions.create(user);
      const session = (await sessions.find(token))!;
      void reply.setCookie(SESSION_COOKIE, token, cookieOptions(req, expiresAt));
      limiter.remember(req, reply, email);
      return sessionView(session);
    });

    app.get('/session', async (req) => sessionView(req.portalSession));

    app.put('/session/environment', { schema: { body: EnvironmentBody } }, async (req) => {
      await sessions.setEnvironment(req.portalSession, req.body.environment);
      return sessionView({ ...req.portalSession, environment: req.body.environment });
    });

    app.delete('/session', async (req, reply) => {
      await sessions.destroy(req.portalSession);
      void reply.clearCookie(SESSION_COOKIE, cookieOptions(req));
      return { object: 'portal_session', signed_out: true };
    });
  };

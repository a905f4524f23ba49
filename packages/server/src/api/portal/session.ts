import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import { decoyHash, verifyPassword } from '../../portal/passwords.ts';
import { findUserByEmail } from '../../portal/users.ts';
import type { PortalSession, SessionStore } from '../../portal/sessions.ts';
import { SESSION_COOKIE, cookieOptions } from './security.ts';

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

/**
 * Sign-in attempts are limited per client address (10 a minute, bursts of 30) and per email
 * (5 a minute, bursts of 10), whether they succeed or not, so guessing passwords is slow from
 * one address and for one account across many addresses.
 */
export const SIGN_IN_LIMITS = { perAddress: { perSecond: 10 / 60, burst: 30 }, perEmail: { perSecond: 5 / 60, burst: 10 } };

const signInEmail = (body: { email: string }) => body.email.trim().toLowerCase();

/** `/portal/api/session`: sign in, who am I, switch environment, sign out. */
export const sessionRoutes =
  (ctx: ServiceContext, sessions: SessionStore): FastifyPluginAsyncTypebox =>
  async (app) => {
    const perAddress = app.rateLimits.limit(
      'sign-in-address',
      SIGN_IN_LIMITS.perAddress,
      (req) => req.ip,
      'Too many sign-in attempts from this address',
    );
    const perEmail = app.rateLimits.limit(
      'sign-in-email',
      SIGN_IN_LIMITS.perEmail,
      (req) => signInEmail(req.body as { email: string }),
      'Too many sign-in attempts for this account',
    );

    app.post('/session', { schema: { body: SignInBody }, config: { public: true } }, async (req, reply) => {
      const email = signInEmail(req.body);
      await perAddress(req);
      await perEmail(req);
      const user = await findUserByEmail(ctx.database.db, email);
      // An unknown email costs the same scrypt as a wrong password, and gets the same answer.
      const ok = await verifyPassword(req.body.password, user?.passwordHash ?? (await decoyHash()));
      if (!user || !ok) throw new AppError('authentication', 'invalid_credentials', 'Incorrect email or password.');
      const { token, expiresAt } = await sessions.create(user);
      const session = (await sessions.find(token))!;
      void reply.setCookie(SESSION_COOKIE, token, cookieOptions(req, expiresAt));
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

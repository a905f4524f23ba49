import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import { requestOrigin } from '../request-origin.ts';
import type { SignInLimiter } from './sign-in-limits.ts';

const PasswordChange = Type.Object(
  { current_password: Type.String({ minLength: 1, maxLength: 200 }), new_password: Type.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
);
const CodeBody = Type.Object({ code: Type.String({ minLength: 1, maxLength: 20 }) }, { additionalProperties: false });
const HealthMailBody = Type.Object({ health_mail: Type.Boolean() }, { additionalProperties: false });
const PasswordBody = Type.Object({ password: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false });

/**
 * `/portal/api/account`: one's own password and two-factor sign-in (portal users; the payment
 * service's users manage theirs in its own portal). Every form that takes the password again
 * counts against the same limits as sign-in.
 */
export const accountRoutes =
  (ctx: ServiceContext, limiter: SignInLimiter): FastifyPluginAsyncTypebox =>
  async (app) => {
    const { own } = ctx.accounts;
    const byEmail = async (req: { portalSession: { email: string | null } } & Parameters<SignInLimiter['check']>[0]) =>
      limiter.check(req, (req.portalSession.email ?? '').toLowerCase());

    app.get('/account', { config: { role: 'viewer', beforeTwoFactorSetup: true } }, async (req) => own.view(req.portalSession));

    app.put(
      '/account/password',
      {
        schema: { body: PasswordChange },
        config: { role: 'viewer', audit: { action: 'portal_user.password_change', resource: 'portal_user' } },
      },
      async (req) => {
        await byEmail(req);
        await own.changePassword(req.portalSession, req.body.current_password, req.body.new_password, requestOrigin(req));
        return own.view(req.portalSession);
      },
    );

    app.put(
      '/account/health_mail',
      {
        schema: { body: HealthMailBody },
        config: { role: 'viewer', audit: { action: 'portal_user.health_mail', resource: 'portal_user' } },
      },
      async (req) => {
        await own.setHealthMail(req.portalSession, req.body.health_mail, requestOrigin(req));
        return own.view(req.portalSession);
      },
    );

    app.post(
      '/account/two_factor/setup',
      {
        config: { role: 'viewer', beforeTwoFactorSetup: true, audit: { action: 'portal_user.two_factor_setup', resource: 'portal_user' } },
      },
      async (req) => own.beginTwoFactor(req.portalSession, requestOrigin(req)),
    );

    app.post(
      '/account/two_factor/enable',
      {
        schema: { body: CodeBody },
        config: { role: 'viewer', beforeTwoFactorSetup: true, audit: { action: 'portal_user.two_factor_enable', resource: 'portal_user' } },
      },
      async (req) => {
        await byEmail(req);
        return own.enableTwoFactor(req.portalSession, req.body.code, requestOrigin(req));
      },
    );

    app.delete(
      '/account/two_factor',
      {
        schema: { body: PasswordBody },
        config: { role: 'viewer', audit: { action: 'portal_user.two_factor_disable', resource: 'portal_user' } },
      },
      async (req) => {
        await byEmail(req);
        await own.disableTwoFactor(req.portalSession, req.body.password, requestOrigin(req));
        return own.view(req.portalSession);
      },
    );

    app.post(
      '/account/two_factor/recovery_codes',
      {
        schema: { body: PasswordBody },
        config: { role: 'viewer', audit: { action: 'portal_user.recovery_codes_regenerate', resource: 'portal_user' } },
      },
      async (req) => {
        await byEmail(req);
        return own.regenerateRecoveryCodes(req.portalSession, req.body.password, requestOrigin(req));
      },
    );
  };

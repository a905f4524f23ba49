import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import { sessionSubject } from '../../accounts/deps.ts';
import { getPlatformSettings, updatePlatformSettings } from '../../tenancy/settings.ts';
import { requestOrigin } from '../request-origin.ts';

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);
const SettingsBody = Type.Object(
  {
    display_name: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    require_two_factor: Type.Optional(Type.Boolean()),
    asymmetric_signature_default: Type.Optional(Type.Boolean()),
    alerts: Type.Optional(
      Type.Object(
        {
          mail_live: Type.Optional(Type.Boolean()),
          mail_sandbox: Type.Optional(Type.Boolean()),
          emails: Type.Optional(Type.Array(Type.String({ maxLength: 254 }), { maxItems: 20 })),
          endpoint_link_template: Type.Optional(Nullable(Type.String({ maxLength: 500 }))),
        },
        { additionalProperties: false },
      ),
    ),
    theme: Type.Optional(
      Type.Object(
        {
          accent_color: Type.Optional(Nullable(Type.String({ maxLength: 7 }))),
          name: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
          logo: Type.Optional(Nullable(Type.String({ maxLength: 100_000 }))),
          mode: Type.Optional(Type.Union([Type.Literal('light'), Type.Literal('dark'), Type.Literal('auto')])),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

/**
 * `/portal/api/settings` (admins): the shop's name on the hosted checkout page, whether the team
 * must use two-factor sign-in, and the portal's look inside the payment service's portal.
 */
export const settingsRoutes =
  (ctx: ServiceContext): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get('/settings', { config: { role: 'admin' } }, async (req) => getPlatformSettings(ctx.database.db, req.portalSession.platformId));
    app.put(
      '/settings',
      { schema: { body: SettingsBody }, config: { role: 'admin', audit: { action: 'settings.update', resource: 'platform' } } },
      async (req) => updatePlatformSettings(ctx.database.db, ctx.audit, sessionSubject(req.portalSession, requestOrigin(req)), req.body),
    );
  };

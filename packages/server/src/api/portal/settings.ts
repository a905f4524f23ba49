import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import { getShopSettings, setDisplayName } from '../../tenancy/shop-settings.ts';

const SettingsBody = Type.Object(
  { display_name: Type.Union([Type.String({ maxLength: 200 }), Type.Null()]) },
  { additionalProperties: false },
);

/** `/portal/api/settings`: the shop's name on the hosted checkout page (defaults to the Platform's name). */
export const settingsRoutes =
  (ctx: ServiceContext): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get('/settings', async (req) => getShopSettings(ctx.database.db, req.portalSession.platformId));
    app.put('/settings', { schema: { body: SettingsBody } }, async (req) =>
      setDisplayName(ctx.database.db, req.portalSession.platformId, req.body.display_name),
    );
  };

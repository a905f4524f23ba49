import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import { platformExists } from '../../tenancy/platforms.ts';
import { getPlatformSettings, updatePlatformSettings } from '../../tenancy/settings.ts';
import { requestOrigin } from '../request-origin.ts';
import { errorResponses } from '../v1/schemas.ts';

const Params = Type.Object({ platform_id: Type.String({ minLength: 1, maxLength: 64 }) });
const AlertSettingsBody = Type.Object(
  {
    mail_live: Type.Optional(Type.Boolean({ description: "payhooks mails the team about live endpoints' health (default true)." })),
    mail_sandbox: Type.Optional(Type.Boolean({ description: 'The same for sandbox endpoints (default false).' })),
    emails: Type.Optional(
      Type.Array(Type.String({ maxLength: 254 }), { maxItems: 20, description: 'More recipients than the developers and admins.' }),
    ),
    endpoint_link_template: Type.Optional(
      Type.Union([Type.String({ maxLength: 500 }), Type.Null()], {
        description:
          "Your portal's page of an endpoint, with {endpoint_id}, e.g. https://dashboard.example.com/webhooks/endpoints/{endpoint_id}.",
      }),
    ),
  },
  { additionalProperties: false },
);
const AlertSettingsView = Type.Object(
  {
    object: Type.Literal('alert_settings'),
    platform_id: Type.String(),
    mail_live: Type.Boolean(),
    mail_sandbox: Type.Boolean(),
    emails: Type.Array(Type.String()),
    endpoint_link_template: Type.Union([Type.String(), Type.Null()]),
  },
  { description: "Who payhooks mails when a Platform's endpoint starts failing, is warned, disabled or recovers." },
);

/**
 * `/internal/v1/platforms/{platform_id}/alert_settings`: the payment service chooses, per
 * Platform, whether payhooks mails the merchant's team about endpoint health (and to whom, with a
 * link into its own portal), or turns it off to alert through its own channels.
 */
export const internalAlertSettingsRoutes =
  (ctx: ServiceContext): FastifyPluginAsyncTypebox =>
  async (app) => {
    const view = async (platformId: string) => {
      if (!(await platformExists(ctx.database.db, platformId)))
        throw new AppError('not_found', 'resource_missing', `No such Platform: '${platformId}'.`, { param: 'platform_id' });
      const { alerts } = await getPlatformSettings(ctx.database.db, platformId);
      return { object: 'alert_settings' as const, platform_id: platformId, ...alerts };
    };
    const base = { tags: ['internal'], security: [{ internalToken: [] }], params: Params };
    app.get(
      '/platforms/:platform_id/alert_settings',
      {
        schema: {
          ...base,
          operationId: 'getAlertSettings',
          summary: "A Platform's health mail settings",
          response: { 200: AlertSettingsView, ...errorResponses(404) },
        },
      },
      async (req) => view(req.params.platform_id),
    );
    app.put(
      '/platforms/:platform_id/alert_settings',
      {
        schema: {
          ...base,
          operationId: 'updateAlertSettings',
          summary: "Change a Platform's health mail settings; fields left out stay",
          body: AlertSettingsBody,
          response: { 200: AlertSettingsView, ...errorResponses(404) },
        },
        config: { audit: { action: 'settings.update', resource: 'platform' } },
      },
      async (req) => {
        const platformId = req.params.platform_id;
        await view(platformId);
        await updatePlatformSettings(
          ctx.database.db,
          ctx.audit,
          { platformId, environment: null, actor: { type: 'internal', id: 'internal_token' }, origin: requestOrigin(req) },
          { alerts: req.body },
        );
        return view(platformId);
      },
    );
  };

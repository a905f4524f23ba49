import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import { ROLES } from '../../accounts/roles.ts';
import { requestOrigin } from '../request-origin.ts';
import { errorResponses } from '../v1/schemas.ts';
import { StringEnum } from '../v1/event-schemas.ts';

const SessionRequest = Type.Object(
  {
    merchant_id: Type.String({ minLength: 1, maxLength: 64, description: 'The merchant (mch_…) whose Webhooks section the user opens.' }),
    environment: StringEnum(['sandbox', 'live'] as const, { description: 'The environment the session shows; it stays in it.' }),
    user: Type.Object(
      {
        id: Type.String({ minLength: 1, maxLength: 200, description: "Your user's id: the audit trail names them by it." }),
        email: Type.Optional(Type.Union([Type.String({ maxLength: 254 }), Type.Null()])),
        name: Type.Optional(Type.Union([Type.String({ maxLength: 200 }), Type.Null()])),
      },
      { additionalProperties: false },
    ),
    role: StringEnum(ROLES, {
      description:
        'viewer: read-only, never a secret; developer: endpoints, secrets, test events, replay; admin: also settings and the audit log.',
      'x-error-code': 'role_invalid',
    }),
    return_url: Type.Optional(
      Type.Union([Type.String({ maxLength: 2048, description: "Where the portal's Back link leads (your portal's page)." }), Type.Null()]),
    ),
  },
  { additionalProperties: false },
);

const SessionLink = Type.Object(
  {
    object: Type.Literal('portal_session_link'),
    url: Type.String({
      description:
        'Open it once, within a minute: as the src of an iframe on an origin in PAYHOOKS_PORTAL_FRAME_ANCESTORS, or as a page. Never log it or send it to the browser other than to open it.',
    }),
    expires_at: Type.String({ description: 'When the unopened link stops working (ISO 8601).' }),
  },
  { description: 'A single-use link that starts a portal session for your user.' },
);

/**
 * `POST /internal/v1/portal_sessions`: the payment service's backend asks for a portal session
 * for one of its merchant users (accounts/portal-links.ts). Internal token only.
 */
export const internalPortalSessionRoutes =
  (ctx: ServiceContext): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.post(
      '/portal_sessions',
      {
        schema: {
          tags: ['internal'],
          security: [{ internalToken: [] }],
          operationId: 'createPortalSession',
          summary: "A single-use link into the Merchant Portal's Webhooks section for one of your merchant users",
          body: SessionRequest,
          response: { 201: SessionLink, ...errorResponses(404) },
        },
        config: { audit: { action: 'portal_session.issue', resource: 'portal_session_link' } },
      },
      async (req, reply) => reply.code(201).send(await ctx.accounts.links.issue(req.body, requestOrigin(req))),
    );
  };

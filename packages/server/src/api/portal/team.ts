import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import { sessionSubject } from '../../accounts/deps.ts';
import { ROLES } from '../../accounts/roles.ts';
import { requestOrigin } from '../request-origin.ts';
import { IdParams } from './ids.ts';
import { setSessionCookie, sessionView } from './session.ts';
import type { SignInLimiter } from './sign-in-limits.ts';

const Role = Type.Union(
  ROLES.map((r) => Type.Literal(r)),
  { 'x-error-code': 'role_invalid' },
);
const InviteBody = Type.Object({ email: Type.String({ minLength: 1, maxLength: 254 }), role: Role }, { additionalProperties: false });
const RoleBody = Type.Object({ role: Role }, { additionalProperties: false });
const TokenBody = Type.Object({ token: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false });
const AcceptBody = Type.Object(
  {
    token: Type.String({ minLength: 1, maxLength: 100 }),
    password: Type.String({ minLength: 1, maxLength: 200 }),
    name: Type.Optional(Type.Union([Type.String({ maxLength: 100 }), Type.Null()])),
  },
  { additionalProperties: false },
);
const ResetBody = Type.Object(
  { token: Type.String({ minLength: 1, maxLength: 100 }), password: Type.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
);

/**
 * The team (admins): users and their roles, invitations; and the two forms a single-use link
 * opens without a session: accepting an invitation, choosing a new password after an operator's
 * reset. Reading what a link is for is a POST too, so the token never sits in a URL.
 */
export const teamRoutes =
  (ctx: ServiceContext, limiter: SignInLimiter): FastifyPluginAsyncTypebox =>
  async (app) => {
    const { team, resets } = ctx.accounts;
    const subject = (req: Parameters<typeof requestOrigin>[0]) => sessionSubject(req.portalSession, requestOrigin(req));

    app.get('/users', { config: { role: 'admin', passwordSessionOnly: true } }, async (req) => ({
      object: 'list',
      data: await team.list(req.portalSession.platformId),
      has_more: false,
    }));

    app.patch(
      '/users/:id',
      {
        schema: { params: IdParams, body: RoleBody },
        config: { role: 'admin', passwordSessionOnly: true, audit: { action: 'portal_user.role_change', resource: 'portal_user' } },
      },
      async (req) => team.changeRole(subject(req), req.params.id, req.body.role),
    );

    app.delete(
      '/users/:id',
      {
        schema: { params: IdParams },
        config: { role: 'admin', passwordSessionOnly: true, audit: { action: 'portal_user.remove', resource: 'portal_user' } },
      },
      async (req) => ({ ...(await team.remove(subject(req), req.params.id, req.portalSession)), deleted: true }),
    );

    app.get('/invitations', { config: { role: 'admin', passwordSessionOnly: true } }, async (req) => ({
      object: 'list',
      data: await team.invitations(req.portalSession.platformId),
      has_more: false,
    }));

    app.post(
      '/invitations',
      {
        schema: { body: InviteBody },
        config: { role: 'admin', passwordSessionOnly: true, audit: { action: 'portal_user.invite', resource: 'invitation' } },
      },
      async (req, reply) => reply.code(201).send(await team.invite(subject(req), req.body.email, req.body.role)),
    );

    app.delete(
      '/invitations/:id',
      {
        schema: { params: IdParams },
        config: { role: 'admin', passwordSessionOnly: true, audit: { action: 'invitation.revoke', resource: 'invitation' } },
      },
      async (req) => ({ ...(await team.revokeInvitation(subject(req), req.params.id)), deleted: true }),
    );

    app.post(
      '/invitation/inspect',
      { schema: { body: TokenBody }, config: { public: true, audit: { exempt: 'reads what an invitation is for; changes nothing' } } },
      async (req) => {
        await limiter.checkAddress(req);
        return { object: 'invitation_preview', ...(await team.inspectInvitation(req.body.token)) };
      },
    );

    app.post(
      '/invitation/accept',
      { schema: { body: AcceptBody }, config: { public: true, audit: { action: 'portal_user.create', resource: 'portal_user' } } },
      async (req, reply) => {
        await limiter.checkAddress(req);
        const { token, session } = await team.acceptInvitation(req.body.token, req.body, requestOrigin(req));
        setSessionCookie(req, reply, token, session);
        return sessionView(ctx, session);
      },
    );

    app.post(
      '/password_reset/inspect',
      {
        schema: { body: TokenBody },
        config: { public: true, audit: { exempt: 'reads which account a reset link is for; changes nothing' } },
      },
      async (req) => {
        await limiter.checkAddress(req);
        return { object: 'password_reset_preview', ...(await resets.inspect(req.body.token)) };
      },
    );

    app.post(
      '/password_reset',
      { schema: { body: ResetBody }, config: { public: true, audit: { action: 'portal_user.password_reset', resource: 'portal_user' } } },
      async (req) => {
        await limiter.checkAddress(req);
        return { object: 'password_reset', ...(await resets.complete(req.body.token, req.body.password, requestOrigin(req))), done: true };
      },
    );
  };

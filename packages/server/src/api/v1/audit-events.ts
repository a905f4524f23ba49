import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import { CreatedRange, ListOf, Timestamp, createdBound } from './schemas.ts';
import { StringEnum } from './event-schemas.ts';

const ACTOR_TYPES = ['user', 'embedded_user', 'api_key', 'internal', 'operator', 'system', 'customer'] as const;
const OUTCOMES = ['succeeded', 'failed', 'denied'] as const;
const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

export const AuditEventSchema = Type.Object(
  {
    id: Type.String({ description: 'Prefix aud_' }),
    object: Type.Literal('audit_event'),
    created_at: Timestamp,
    environment: Type.Union([StringEnum(['sandbox', 'live'] as const), Type.Null()], {
      description: 'The environment the change was in; null for Platform-wide changes (team, settings).',
    }),
    action: Type.String({
      description: '<resource>.<verb>, such as webhook_endpoint.create, webhook_delivery.replay, portal_user.role_change.',
    }),
    outcome: StringEnum(OUTCOMES, { description: 'denied: refused for lack of rights (401, 403); failed: refused for another reason.' }),
    error_code: Nullable(Type.String({ description: "The refusal's error code." })),
    actor: Type.Object({
      type: StringEnum(ACTOR_TYPES, {
        description:
          "user: a portal user; embedded_user: the payment service's user in an embedded portal session (id: the payment service's user id); api_key; internal: the internal API token; operator: the CLI; system: payhooks itself (automatic endpoint disable); customer: the hosted checkout page.",
      }),
      id: Nullable(Type.String()),
      email: Nullable(Type.String()),
      name: Nullable(Type.String()),
    }),
    resource: Type.Object({ type: Type.String(), id: Nullable(Type.String()) }),
    changes: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
      description: 'The fields changed and their new values. Never a secret, a password or a token.',
    }),
    origin: Type.Object({
      ip: Nullable(Type.String({ description: 'The client address, as PAYHOOKS_TRUST_PROXY resolves it.' })),
      user_agent: Nullable(Type.String()),
      request_id: Nullable(Type.String({ description: 'The Request-Id of the request that made the change.' })),
    }),
  },
  { $id: 'AuditEvent', description: 'One entry of the audit trail: who changed what, when, from where, and how it ended.' },
);

/** The trail's filters and pages; the portal's audit log takes the same (and an environment). */
export const AuditQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })),
    starting_after: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Id of the last entry of the previous page.' })),
    actor_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'usr_…, key_…, or the payment service user id.' })),
    actor_type: Type.Optional(StringEnum(ACTOR_TYPES)),
    action: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    resource_type: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    resource_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    outcome: Type.Optional(StringEnum(OUTCOMES)),
    ...CreatedRange,
  },
  { additionalProperties: false },
);

export function auditFilters(q: Static<typeof AuditQuery>) {
  return {
    actorId: q.actor_id,
    actorType: q.actor_type,
    action: q.action,
    resourceType: q.resource_type,
    resourceId: q.resource_id,
    outcome: q.outcome,
    createdGte: createdBound(q['created[gte]'], 'created[gte]'),
    createdLt: createdBound(q['created[lt]'], 'created[lt]'),
  };
}

/**
 * `/api/v1/audit_events`: the Platform's audit trail for its own tooling. A key reads the
 * entries of its environment and the Platform-wide ones (team, settings), newest first.
 */
export const auditEventRoutes =
  (ctx: ServiceContext): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get(
      '/audit_events',
      {
        schema: {
          tags: ['audit_events'],
          security: [{ bearerAuth: [] }],
          operationId: 'listAuditEvents',
          summary: 'List audit entries (newest first)',
          querystring: AuditQuery,
          response: { 200: ListOf(Type.Ref(AuditEventSchema), 'A page of audit entries.') },
        },
      },
      async (req) =>
        ctx.audit.list(
          ctx.database.db,
          req.scope.platformId,
          { ...auditFilters(req.query), environment: req.scope.environment },
          {
            limit: req.query.limit ?? 50,
            startingAfter: req.query.starting_after,
          },
        ),
    );
  };

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuditSubject, AuditTrail } from '../audit/trail.ts';
import type { Db } from '../db/client.ts';

/**
 * What a route that changes something records in the audit trail, declared on the route
 * (`config.audit`): the action and resource of its entries, or why it has none (`exempt`, with
 * the reason). Every POST, PUT, PATCH and DELETE route must declare one or the app refuses to
 * start, so a new route can't be left out of the trail.
 */
export type RouteAudit = { action: string; resource: string } | { exempt: string };

declare module 'fastify' {
  interface FastifyContextConfig {
    audit?: RouteAudit;
  }
  interface FastifyRequest {
    /** Who is acting, once the request's credentials were checked: an API key, a portal session, the internal token. */
    auditSubject?: AuditSubject;
  }
}

const MUTATIONS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export const isMutatingRoute = (method: string) => MUTATIONS.has(method);

/** At registration: a changing route without an audit declaration is a programming error. */
export function requireAuditDeclaration(route: { method: string | string[]; url: string; config?: unknown }): void {
  const methods = [route.method].flat();
  if (!methods.some(isMutatingRoute)) return;
  const audit = (route.config as { audit?: RouteAudit } | undefined)?.audit;
  if (!audit)
    throw new Error(
      `${methods.join(',')} ${route.url} changes state but declares no audit entry (config.audit): declare one, or exempt it with a reason.`,
    );
  if ('exempt' in audit && audit.exempt.trim().length < 10) throw new Error(`${route.url}: say why it is exempt from the audit trail.`);
}

function errorCodeOf(payload: unknown): string | null {
  if (typeof payload !== 'string' || !payload.startsWith('{')) return null;
  try {
    const code = (JSON.parse(payload) as { error?: { code?: unknown } }).error?.code;
    return typeof code === 'string' ? code : null;
  } catch {
    return null;
  }
}

/**
 * The refusals worth an entry: no right to do it (401, 403: `denied`), a resource that is not
 * the caller's to see (404), or a rule of ours that refused the change (409, 422: `failed`).
 * Malformed requests (400, 413, 415) are not attempts at a change, throttled ones (429) are the
 * limiter's business, and 5xx are ours, in the error log.
 */
const AUDITED_REFUSALS = new Set([401, 403, 404, 409, 422]);

/**
 * Refused changes: a change that succeeds records its entry in its own transaction (the
 * services call AuditTrail.record); a refused one was rolled back with it, so its entry (with the
 * error's code) is written here, before the answer leaves. Only when we know who tried: an
 * unauthenticated request has no actor.
 */
export function installAuditOfFailures(app: FastifyInstance, trail: AuditTrail, db: Db): void {
  app.addHook('onSend', async (req: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const audit = req.routeOptions.config?.audit;
    if (!audit || 'exempt' in audit || !AUDITED_REFUSALS.has(reply.statusCode) || !req.auditSubject) return payload;
    const params = req.params as { id?: unknown } | undefined;
    try {
      await trail.record(db, req.auditSubject, {
        action: audit.action,
        resourceType: audit.resource,
        resourceId: typeof params?.id === 'string' ? params.id : null,
        outcome: reply.statusCode === 401 || reply.statusCode === 403 ? 'denied' : 'failed',
        errorCode: errorCodeOf(payload) ?? `http_${reply.statusCode}`,
      });
    } catch (err) {
      req.log.error({ err }, 'audit entry of a refused change not written');
    }
    return payload;
  });
}

import { and, eq, gte, isNull, lt, or, type SQL } from 'drizzle-orm';
import type { Logger } from 'pino';
import { formatEventTimestamp } from '@payhooks/contract';
import type { Clock } from '../clock.ts';
import type { Db, Queryable } from '../db/client.ts';
import { runAfterCommit } from '../db/after-commit.ts';
import { auditEvents, type AuditEventRow, type Environment } from '../db/schema.ts';
import { listPage, pageOf, type ListPage } from '../db/pagination.ts';
import { newId } from '../ids.ts';
import type { Actor, RequestOrigin } from '../scope.ts';

export type AuditOutcome = 'succeeded' | 'failed' | 'denied';

/** Whose trail an entry joins and who acted: a Scope fits, and so does a Platform-wide action. */
export interface AuditSubject {
  /** null: the installation (an operator command on no Platform). */
  platformId: string | null;
  /** null: Platform-wide (users, settings, keys of both environments). */
  environment: Environment | null;
  actor: Actor;
  origin?: RequestOrigin | undefined;
}

/** A subject on one Platform (every portal and API action). */
export type PlatformSubject = AuditSubject & { platformId: string };

export interface AuditEntry {
  /** `<resource>.<verb>`: `webhook_endpoint.create`, `portal_user.role_change`, … */
  action: string;
  resourceType: string;
  resourceId: string | null;
  /** The fields changed, with their new values: never a secret or a password (see `scrub`). */
  changes?: Record<string, unknown> | null | undefined;
  outcome?: AuditOutcome;
  errorCode?: string | null;
  /** Overrides the subject's environment (null: Platform-wide). */
  environment?: Environment | null;
}

/** An entry as the API, the portal and the log line show it. */
export interface AuditEvent {
  id: string;
  object: 'audit_event';
  created_at: string;
  environment: Environment | null;
  action: string;
  outcome: AuditOutcome;
  error_code: string | null;
  actor: { type: Actor['type']; id: string | null; email: string | null; name: string | null };
  resource: { type: string; id: string | null };
  changes: Record<string, unknown> | null;
  origin: { ip: string | null; user_agent: string | null; request_id: string | null };
}

/**
 * Field names whose values never enter the trail, whatever a caller passes: secrets, passwords,
 * tokens, TOTP and recovery codes. Values that look like one of our secrets are masked too.
 */
const SECRET_FIELD = /secret|password|token|totp|recovery|credential|api_?key$|^key$/i;
const SECRET_VALUE = /\b(whsec_|sk_live_|sk_test_)[A-Za-z0-9_-]+/g;

function scrub(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return value.replace(SECRET_VALUE, '$1…');
  if (value === null || typeof value !== 'object' || depth > 4) return value;
  if (Array.isArray(value)) return value.map((v) => scrub(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = SECRET_FIELD.test(k) ? '[redacted]' : scrub(v, depth + 1);
  return out;
}

const clip = (s: string | null | undefined, max: number) => {
  if (s === null || s === undefined) return null;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
  const clean = s.replace(/[\u0000-\u001f\u007f]/g, ' ');
  return clean.length > max ? `${clean.slice(0, max)}…` : clean;
};

export function toAuditEvent(row: AuditEventRow): AuditEvent {
  return {
    id: row.id,
    object: 'audit_event',
    created_at: formatEventTimestamp(row.createdAt),
    environment: row.environment,
    action: row.action,
    outcome: row.outcome,
    error_code: row.errorCode,
    actor: { type: row.actorType, id: row.actorId, email: row.actorEmail, name: row.actorName },
    resource: { type: row.resourceType, id: row.resourceId },
    changes: row.changes,
    origin: { ip: row.ip, user_agent: row.userAgent, request_id: row.requestId },
  };
}

export interface AuditFilters {
  actorId?: string | undefined;
  actorType?: string | undefined;
  action?: string | undefined;
  resourceType?: string | undefined;
  resourceId?: string | undefined;
  outcome?: AuditOutcome | undefined;
  createdGte?: Date | undefined;
  createdLt?: Date | undefined;
  /** Only this environment's entries and the Platform-wide ones (API keys see theirs only). */
  environment?: Environment | undefined;
}

/**
 * The audit trail (docs/architecture.md, "The audit trail"). `record` is the
 * one function every change calls, inside the transaction of the change it records, so a change
 * never commits without its entry; the same entry is logged as one structured line once that
 * transaction has committed. Refused and failed attempts are recorded by the HTTP layer after
 * the rollback (api/audit-hook.ts). The table is append-only in the database (migration 0022).
 */
export class AuditTrail {
  private readonly logger: Logger;
  private readonly clock: Clock;

  constructor(deps: { logger: Logger; clock: Clock }) {
    this.logger = deps.logger;
    this.clock = deps.clock;
  }

  async record(q: Queryable, subject: AuditSubject, entry: AuditEntry): Promise<AuditEvent> {
    const environment = entry.environment === undefined ? subject.environment : entry.environment;
    const row: AuditEventRow = {
      id: newId('auditEvent'),
      createdAt: this.clock.now(),
      platformId: subject.platformId,
      environment,
      actorType: subject.actor.type,
      actorId: clip(subject.actor.id, 200),
      actorEmail: clip(subject.actor.email, 254),
      actorName: clip(subject.actor.name, 200),
      ip: clip(subject.origin?.ip, 64),
      userAgent: clip(subject.origin?.userAgent, 300),
      requestId: clip(subject.origin?.requestId, 64),
      action: entry.action,
      resourceType: entry.resourceType,
      resourceId: clip(entry.resourceId, 200),
      changes: entry.changes ? (scrub(entry.changes) as Record<string, unknown>) : null,
      outcome: entry.outcome ?? 'succeeded',
      errorCode: entry.errorCode ?? null,
    };
    await q.insert(auditEvents).values(row);
    const event = toAuditEvent(row);
    runAfterCommit(q, () => this.log(event, subject.platformId));
    return event;
  }

  /** The entry as one structured log line, for the log pipeline that keeps a copy off this database. */
  private log(event: AuditEvent, platformId: string | null): void {
    const who = `${event.actor.type}${event.actor.id ? ` ${event.actor.id}` : ''}`;
    const what = `${event.resource.type}${event.resource.id ? ` ${event.resource.id}` : ''}`;
    this.logger.info(
      { audit: { ...event, platform_id: platformId } },
      `audit: ${event.action} ${event.outcome} by ${who} on ${what}${event.error_code ? ` (${event.error_code})` : ''}`,
    );
  }

  /** One Platform's entries, newest first, filtered, with Stripe-style `starting_after` cursors. */
  async list(
    db: Db,
    platformId: string,
    filters: AuditFilters,
    page: { limit: number; startingAfter?: string | undefined },
  ): Promise<ListPage<AuditEvent>> {
    const where: (SQL | undefined)[] = [eq(auditEvents.platformId, platformId)];
    if (filters.environment) where.push(or(eq(auditEvents.environment, filters.environment), isNull(auditEvents.environment)));
    if (filters.actorId) where.push(eq(auditEvents.actorId, filters.actorId));
    if (filters.actorType) where.push(eq(auditEvents.actorType, filters.actorType as Actor['type']));
    if (filters.action) where.push(eq(auditEvents.action, filters.action));
    if (filters.resourceType) where.push(eq(auditEvents.resourceType, filters.resourceType));
    if (filters.resourceId) where.push(eq(auditEvents.resourceId, filters.resourceId));
    if (filters.outcome) where.push(eq(auditEvents.outcome, filters.outcome));
    if (filters.createdGte) where.push(gte(auditEvents.createdAt, filters.createdGte));
    if (filters.createdLt) where.push(lt(auditEvents.createdAt, filters.createdLt));
    const { rows, hasMore } = await pageOf<AuditEventRow>(db, auditEvents, and(...where), { ...page, what: 'audit event' });
    return listPage(rows.map(toAuditEvent), hasMore);
  }
}

import { randomBytes, timingSafeEqual } from 'node:crypto';
import { and, eq, lt, or, sql } from 'drizzle-orm';
import type { Clock } from '../clock.ts';
import type { Db, Queryable } from '../db/client.ts';
import { platforms, portalSessions, portalUsers, type Environment, type ExternalUser } from '../db/schema.ts';
import type { Actor, RequestOrigin, Scope } from '../scope.ts';
import type { Role } from './roles.ts';
import { hashToken } from './tokens.ts';

/**
 * A portal session, whichever way it started: a password sign-in (`password`: one of our portal
 * users, whose role and email are read from the user at every request, so a role change or a
 * removal applies at once) or a link the payment service asked for (`embedded`: the payment
 * service's user, with the role it named, bound to one Platform and one environment).
 */
export interface PortalSession {
  tokenHash: string;
  kind: 'password' | 'embedded';
  /** `usr_…` for a password session; the payment service's own user id for an embedded one. */
  userId: string;
  email: string | null;
  name: string | null;
  role: Role;
  platformId: string;
  platformName: string;
  environment: Environment;
  csrfToken: string;
  createdAt: Date;
  /** The absolute end: `PAYHOOKS_PORTAL_SESSION_LIFETIME` after it started. */
  expiresAt: Date;
  lastSeenAt: Date;
  /** Embedded sessions: where "Back" leads in the payment service's portal. */
  returnUrl: string | null;
  /** Signed in with a password where two-factor sign-in is required, not enrolled yet. */
  needsTwoFactorSetup: boolean;
}

export interface SessionLimits {
  /** Ends a session this long after its last request (`PAYHOOKS_PORTAL_IDLE_TIMEOUT`). */
  idleMs: number;
  /** Ends every session this long after it started (`PAYHOOKS_PORTAL_SESSION_LIFETIME`). */
  lifetimeMs: number;
}

export type SessionLookup = { session: PortalSession } | { ended: 'idle' | 'expired' } | null;

/** The actor the audit trail names for what a session does. */
export function actorOf(session: PortalSession): Actor {
  return {
    type: session.kind === 'password' ? 'user' : 'embedded_user',
    id: session.userId,
    email: session.email,
    name: session.name,
  };
}

/** The Scope every portal query runs in: the session's Platform and environment, and who acts. */
export function scopeOf(session: PortalSession, origin?: RequestOrigin): Scope {
  return { platformId: session.platformId, environment: session.environment, actor: actorOf(session), origin };
}

/** Constant-time check of the CSRF header against the session's token. */
export function csrfMatches(session: PortalSession, sent: string | undefined): boolean {
  if (!sent) return false;
  const a = Buffer.from(session.csrfToken);
  const b = Buffer.from(sent);
  return a.length === b.length && timingSafeEqual(a, b);
}

export type NewSession =
  | { kind: 'password'; userId: string; platformId: string; needsTwoFactorSetup?: boolean }
  | {
      kind: 'embedded';
      platformId: string;
      environment: Environment;
      role: Role;
      user: ExternalUser;
      returnUrl: string | null;
    };

/**
 * Server-side sessions in the database. The session token (the cookie's value, or the bearer
 * token of an embedded page) is 32 random bytes; the table keeps their SHA-256 only. Password
 * sessions start in sandbox, the safe environment to look around in.
 */
export class SessionStore {
  private readonly db: Db;
  private readonly clock: Clock;
  readonly limits: SessionLimits;

  constructor(deps: { db: Db; clock: Clock; limits: SessionLimits }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.limits = deps.limits;
  }

  async create(input: NewSession, q: Queryable = this.db): Promise<{ token: string; session: PortalSession }> {
    const token = randomBytes(32).toString('base64url');
    const now = this.clock.now();
    await q.insert(portalSessions).values({
      tokenHash: hashToken(token),
      kind: input.kind,
      userId: input.kind === 'password' ? input.userId : null,
      platformId: input.platformId,
      environment: input.kind === 'password' ? 'sandbox' : input.environment,
      role: input.kind === 'embedded' ? input.role : null,
      externalUser: input.kind === 'embedded' ? input.user : null,
      returnUrl: input.kind === 'embedded' ? input.returnUrl : null,
      needsTwoFactorSetup: input.kind === 'password' && input.needsTwoFactorSetup === true,
      csrfToken: randomBytes(32).toString('base64url'),
      createdAt: now,
      lastSeenAt: now,
      expiresAt: new Date(now.getTime() + this.limits.lifetimeMs),
    });
    // Ended sessions of anyone are swept on sign-in: cheap (indexed) and keeps the table small.
    await q
      .delete(portalSessions)
      .where(or(lt(portalSessions.expiresAt, now), lt(portalSessions.lastSeenAt, new Date(now.getTime() - this.limits.idleMs))));
    const found = await this.read(hashToken(token), q);
    return { token, session: found! };
  }

  private async read(tokenHash: string, q: Queryable = this.db): Promise<PortalSession | null> {
    const [row] = await q
      .select({
        tokenHash: portalSessions.tokenHash,
        kind: portalSessions.kind,
        userId: portalSessions.userId,
        userEmail: portalUsers.email,
        userName: portalUsers.name,
        userRole: portalUsers.role,
        role: portalSessions.role,
        externalUser: portalSessions.externalUser,
        platformId: portalSessions.platformId,
        platformName: platforms.name,
        environment: portalSessions.environment,
        csrfToken: portalSessions.csrfToken,
        createdAt: portalSessions.createdAt,
        expiresAt: portalSessions.expiresAt,
        lastSeenAt: portalSessions.lastSeenAt,
        returnUrl: portalSessions.returnUrl,
        needsTwoFactorSetup: portalSessions.needsTwoFactorSetup,
      })
      .from(portalSessions)
      .leftJoin(portalUsers, eq(portalUsers.id, portalSessions.userId))
      .innerJoin(platforms, eq(platforms.id, portalSessions.platformId))
      .where(eq(portalSessions.tokenHash, tokenHash));
    if (!row) return null;
    const password = row.kind === 'password';
    return {
      tokenHash: row.tokenHash,
      kind: row.kind,
      userId: password ? row.userId! : row.externalUser!.id,
      email: password ? row.userEmail : row.externalUser!.email,
      name: password ? row.userName : row.externalUser!.name,
      role: (password ? row.userRole : row.role)!,
      platformId: row.platformId,
      platformName: row.platformName,
      environment: row.environment,
      csrfToken: row.csrfToken,
      createdAt: row.createdAt,
      expiresAt: row.expiresAt,
      lastSeenAt: row.lastSeenAt,
      returnUrl: row.returnUrl,
      needsTwoFactorSetup: row.needsTwoFactorSetup,
    };
  }

  /**
   * The live session for a token, or why it ended (idle, or past its lifetime: the page says
   * which), or null (unknown, or signed out). A live session's `last_seen_at` moves forward at
   * most once a minute (or a quarter of the idle timeout), not on every request.
   */
  async find(token: string | undefined): Promise<SessionLookup> {
    if (!token || token.length > 100) return null;
    const session = await this.read(hashToken(token));
    if (!session) return null;
    const now = this.clock.now();
    const ended = session.expiresAt <= now ? 'expired' : session.lastSeenAt.getTime() + this.limits.idleMs <= now.getTime() ? 'idle' : null;
    if (ended) {
      await this.db.delete(portalSessions).where(eq(portalSessions.tokenHash, session.tokenHash));
      return { ended };
    }
    if (now.getTime() - session.lastSeenAt.getTime() >= Math.min(60_000, this.limits.idleMs / 4)) {
      await this.db.update(portalSessions).set({ lastSeenAt: now }).where(eq(portalSessions.tokenHash, session.tokenHash));
      session.lastSeenAt = now;
    }
    return { session };
  }

  /** When the session ends if nothing more happens in it. */
  endsAt(session: PortalSession): Date {
    return new Date(Math.min(session.expiresAt.getTime(), session.lastSeenAt.getTime() + this.limits.idleMs));
  }

  async setEnvironment(session: PortalSession, environment: Environment, q: Queryable = this.db): Promise<void> {
    await q.update(portalSessions).set({ environment }).where(eq(portalSessions.tokenHash, session.tokenHash));
  }

  async completeTwoFactorSetup(session: PortalSession, q: Queryable = this.db): Promise<void> {
    await q.update(portalSessions).set({ needsTwoFactorSetup: false }).where(eq(portalSessions.tokenHash, session.tokenHash));
  }

  async destroy(session: PortalSession, q: Queryable = this.db): Promise<void> {
    await q.delete(portalSessions).where(eq(portalSessions.tokenHash, session.tokenHash));
  }

  /** Ends every session of a portal user (removed, password changed or reset), but `keep`. */
  async destroyForUser(userId: string, q: Queryable = this.db, keep?: PortalSession): Promise<void> {
    await q
      .delete(portalSessions)
      .where(and(eq(portalSessions.userId, userId), keep ? sql`${portalSessions.tokenHash} <> ${keep.tokenHash}` : undefined));
  }
}

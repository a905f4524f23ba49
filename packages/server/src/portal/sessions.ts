import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { and, eq, gt, lt } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { platforms, portalSessions, portalUsers, type Environment } from '../db/schema.ts';
import type { Scope } from '../tenancy/scope.ts';

/** A signed-in portal user, as the session hook finds it. */
export interface PortalSession {
  tokenHash: string;
  userId: string;
  email: string;
  platformId: string;
  platformName: string;
  environment: Environment;
  csrfToken: string;
  expiresAt: Date;
}

/** Sessions end 12 hours after sign-in (absolute), like a working day; signing out ends them at once. */
export const SESSION_LIFETIME_MS = 12 * 3_600_000;

const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

/** The Scope every portal query runs in: the session's Platform and the environment it switched to. */
export function scopeOf(session: PortalSession): Scope {
  return { platformId: session.platformId, environment: session.environment, apiKeyId: `portal:${session.userId}` };
}

/** Constant-time check of the CSRF header against the session's token. */
export function csrfMatches(session: PortalSession, sent: string | undefined): boolean {
  if (!sent) return false;
  const a = Buffer.from(session.csrfToken);
  const b = Buffer.from(sent);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Server-side sessions in the database. The cookie carries 32 random bytes; the table keeps
 * their SHA-256 only. Sessions start in sandbox, the safe environment to look around in.
 */
export class SessionStore {
  constructor(
    private readonly db: Db,
    private readonly now: () => Date,
  ) {}

  async create(user: { id: string; platformId: string }): Promise<{ token: string; expiresAt: Date }> {
    const token = randomBytes(32).toString('base64url');
    const expiresAt = new Date(this.now().getTime() + SESSION_LIFETIME_MS);
    await this.db.insert(portalSessions).values({
      tokenHash: hashToken(token),
      userId: user.id,
      platformId: user.platformId,
      environment: 'sandbox',
      csrfToken: randomBytes(32).toString('base64url'),
      expiresAt,
    });
    // Expired sessions of anyone are swept on sign-in: cheap (indexed) and keeps the table small.
    await this.db.delete(portalSessions).where(lt(portalSessions.expiresAt, this.now()));
    return { token, expiresAt };
  }

  /** The live session for a cookie token, or null (unknown, expired or signed out). */
  async find(token: string | undefined): Promise<PortalSession | null> {
    if (!token || token.length > 100) return null;
    const [row] = await this.db
      .select({
        tokenHash: portalSessions.tokenHash,
        userId: portalSessions.userId,
        email: portalUsers.email,
        platformId: portalSessions.platformId,
        platformName: platforms.name,
        environment: portalSessions.environment,
        csrfToken: portalSessions.csrfToken,
        expiresAt: portalSessions.expiresAt,
      })
      .from(portalSessions)
      .innerJoin(portalUsers, eq(portalUsers.id, portalSessions.userId))
      .innerJoin(platforms, eq(platforms.id, portalSessions.platformId))
      .where(and(eq(portalSessions.tokenHash, hashToken(token)), gt(portalSessions.expiresAt, this.now())));
    return row ?? null;
  }

  async setEnvironment(session: PortalSession, environment: Environment): Promise<void> {
    await this.db.update(portalSessions).set({ environment }).where(eq(portalSessions.tokenHash, session.tokenHash));
  }

  async destroy(session: PortalSession): Promise<void> {
    await this.db.delete(portalSessions).where(eq(portalSessions.tokenHash, session.tokenHash));
  }
}

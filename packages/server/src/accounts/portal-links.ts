import { asc, eq } from 'drizzle-orm';
import { merchants, platforms, type Environment, type ExternalUser } from '../db/schema.ts';
import { AppError, notFound } from '../errors.ts';
import { isOperatorPlatform, type RequestOrigin } from '../scope.ts';
import { portalLink, type AccountDeps } from './deps.ts';
import type { Role } from './roles.ts';
import type { PortalSession } from './sessions.ts';
import { issueToken, useToken } from './tokens.ts';

/** An unopened link stops working after a minute: it goes straight from the payment service's backend into a frame. */
export const PORTAL_LINK_TTL_MS = 60_000;

export interface PortalLinkRequest {
  merchant_id: string;
  environment: Environment;
  user: { id: string; email?: string | null | undefined; name?: string | null | undefined };
  role: Role;
  return_url?: string | null | undefined;
}

export interface IssuedPortalLink {
  object: 'portal_session_link';
  url: string;
  expires_at: string;
}

/** `return_url`: an absolute http(s) URL (the page renders it as a link; no other scheme may run). */
function returnUrl(raw: string | null | undefined): string | null {
  if (raw === null || raw === undefined) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    url = new URL('invalid:');
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password || raw.length > 2048) {
    throw new AppError('invalid_request', 'parameter_invalid', "Invalid 'return_url': send an absolute http(s) URL without credentials.", {
      param: 'return_url',
    });
  }
  return url.toString();
}

/**
 * Sign-in from the payment service: its backend asks for a link for one of its merchant users
 * (`POST /internal/v1/portal_sessions`), and the link, opened in a frame of its portal or as a
 * page, starts an ordinary portal session for that user: single-use, valid for a minute, bound
 * to the merchant's Platform and the one environment named. No payhooks password is involved.
 */
export class PortalLinks {
  constructor(private readonly deps: AccountDeps) {}

  async issue(input: PortalLinkRequest, origin: RequestOrigin): Promise<IssuedPortalLink> {
    const { db, clock, audit } = this.deps;
    const [merchant] = await db
      .select({ platformId: merchants.platformId })
      .from(merchants)
      .where(eq(merchants.id, input.merchant_id))
      .orderBy(asc(merchants.id));
    if (!merchant || isOperatorPlatform(merchant.platformId)) throw notFound('merchant', input.merchant_id, 'merchant_id');
    const user: ExternalUser = { id: input.user.id, email: input.user.email ?? null, name: input.user.name ?? null };
    const details = { environment: input.environment, user, return_url: returnUrl(input.return_url), merchant_id: input.merchant_id };
    return db.transaction(async (tx) => {
      const { token, row } = await issueToken(tx, {
        purpose: 'portal_link',
        platformId: merchant.platformId,
        role: input.role,
        details,
        now: clock.now(),
        ttlMs: PORTAL_LINK_TTL_MS,
      });
      await audit.record(
        tx,
        { platformId: merchant.platformId, environment: input.environment, actor: { type: 'internal', id: 'internal_token' }, origin },
        {
          action: 'portal_session.issue',
          resourceType: 'portal_session_link',
          resourceId: row.id,
          changes: { user_id: user.id, user_email: user.email, role: input.role, merchant_id: input.merchant_id },
        },
      );
      return {
        object: 'portal_session_link' as const,
        url: portalLink(this.deps, 'launch', token),
        expires_at: row.expiresAt.toISOString(),
      };
    });
  }

  /** Opens a link once: the session it starts, or a 401 for a link used before, expired or unknown. */
  async open(token: string, origin: RequestOrigin): Promise<{ token: string; session: PortalSession }> {
    const { db, clock, audit, sessions } = this.deps;
    return db.transaction(async (tx) => {
      const link = await useToken(tx, 'portal_link', token, clock.now());
      if (!link)
        throw new AppError(
          'authentication',
          'portal_link_invalid',
          'This link has been used or has expired (links work once, within a minute): open Webhooks again from your dashboard.',
        );
      const details = link.details as { environment: Environment; user: ExternalUser; return_url: string | null };
      const [platform] = await tx.select({ id: platforms.id }).from(platforms).where(eq(platforms.id, link.platformId));
      if (!platform) throw new AppError('authentication', 'portal_link_invalid', 'This link is no longer valid.');
      const started = await sessions.create(
        {
          kind: 'embedded',
          platformId: link.platformId,
          environment: details.environment,
          role: link.role!,
          user: details.user,
          returnUrl: details.return_url,
        },
        tx,
      );
      await audit.record(
        tx,
        {
          // The environment the link named: an embedded session's sign-in is that environment's entry.
          platformId: link.platformId,
          environment: details.environment,
          actor: { type: 'embedded_user', id: details.user.id, email: details.user.email, name: details.user.name },
          origin,
        },
        {
          action: 'session.create',
          resourceType: 'portal_session',
          resourceId: null,
          changes: { method: 'portal_link', link: link.id, role: link.role },
        },
      );
      return started;
    });
  }
}

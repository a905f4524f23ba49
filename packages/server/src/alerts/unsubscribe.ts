import { eq } from 'drizzle-orm';
import type { AuditTrail } from '../audit/trail.ts';
import type { Db } from '../db/client.ts';
import { platforms, portalUsers } from '../db/schema.ts';
import { AppError } from '../errors.ts';
import type { RequestOrigin } from '../scope.ts';
import type { SecretBox } from '../security/encryption.ts';
import { alertSettingsOf } from './settings.ts';

/**
 * The one-click unsubscribe link of a health mail (RFC 8058): signed, so only the mail's
 * recipient can use it, and naming what it ends: a team member's health mail (`u.<user id>`), or
 * one alert address of a Platform (`a.<platform id>.<address, base64url>`).
 */
const PURPOSE = 'health mail unsubscribe';

export type Subscriber = { user: string } | { platformId: string; email: string };

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64url');

function tokenOf(secrets: SecretBox, who: Subscriber): string {
  const body = 'user' in who ? `u.${who.user}` : `a.${who.platformId}.${b64(who.email)}`;
  return `${body}.${secrets.tag(PURPOSE, body)}`;
}

export function unsubscribeUrl(secrets: SecretBox, publicUrl: string, who: Subscriber): string {
  return `${publicUrl}/email/unsubscribe?token=${tokenOf(secrets, who)}`;
}

/** The subscriber a token names, or null when it is not one we made. */
export function readToken(secrets: SecretBox, token: string): Subscriber | null {
  if (token.length > 600 || !/^[A-Za-z0-9_.-]+$/.test(token)) return null;
  const cut = token.lastIndexOf('.');
  if (cut < 0) return null;
  const body = token.slice(0, cut);
  if (!secrets.verifyTag(PURPOSE, body, token.slice(cut + 1))) return null;
  const [kind, a, b] = body.split('.');
  if (kind === 'u' && a && b === undefined) return { user: a };
  if (kind === 'a' && a && b) return { platformId: a, email: Buffer.from(b, 'base64url').toString('utf8') };
  return null;
}

/** Ends the mail a token names; audited on the Platform's trail. Idempotent: a second click changes nothing. */
export async function unsubscribe(
  deps: { db: Db; secrets: SecretBox; audit: AuditTrail },
  token: string,
  origin: RequestOrigin,
): Promise<{ email: string }> {
  const who = readToken(deps.secrets, token);
  if (!who)
    throw new AppError(
      'invalid_request',
      'unsubscribe_link_invalid',
      'This unsubscribe link is not valid: use the link of a recent mail.',
      {
        param: 'token',
      },
    );
  return deps.db.transaction(async (tx) => {
    if ('user' in who) {
      const [user] = await tx.update(portalUsers).set({ healthMail: false }).where(eq(portalUsers.id, who.user)).returning();
      if (!user) return { email: '' }; // removed since: nothing more is mailed to them anyway
      await deps.audit.record(
        tx,
        {
          platformId: user.platformId,
          environment: null,
          actor: { type: 'user', id: user.id, email: user.email, name: user.name },
          origin,
        },
        { action: 'health_mail.unsubscribe', resourceType: 'portal_user', resourceId: user.id, changes: { health_mail: false } },
      );
      return { email: user.email };
    }
    const [platform] = await tx
      .select({ alerts: platforms.alertSettings })
      .from(platforms)
      .where(eq(platforms.id, who.platformId))
      .for('update');
    if (!platform) return { email: who.email };
    const settings = alertSettingsOf(platform.alerts);
    if (settings.emails.includes(who.email)) {
      const next = { ...settings, emails: settings.emails.filter((e) => e !== who.email) };
      await tx.update(platforms).set({ alertSettings: next }).where(eq(platforms.id, who.platformId));
      await deps.audit.record(
        tx,
        {
          platformId: who.platformId,
          environment: null,
          actor: { type: 'system', id: 'unsubscribe_link', email: who.email, name: null },
          origin,
        },
        { action: 'health_mail.unsubscribe', resourceType: 'platform', resourceId: who.platformId, changes: { removed_email: who.email } },
      );
    }
    return { email: who.email };
  });
}

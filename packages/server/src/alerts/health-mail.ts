import { and, asc, desc, eq, gte, inArray, isNull, lt, sql } from 'drizzle-orm';
import { runAlone, statement } from '../db/statement.ts';
import type { Logger } from 'pino';
import { formatEventTimestamp } from '@payhooks/contract';
import type { Mailer } from '../accounts/mailer.ts';
import type { Clock } from '../clock.ts';
import type { Database, Tx } from '../db/client.ts';
import {
  deliveryAttempts,
  healthNotices,
  platforms,
  portalUsers,
  webhookDeliveries,
  webhookEndpoints,
  type HealthNoticeKind,
} from '../db/schema.ts';
import { healthOf } from '../endpoints/health.ts';
import type { SecretBox } from '../security/encryption.ts';
import { alertSettingsOf, endpointLink } from './settings.ts';
import { unsubscribeUrl } from './unsubscribe.ts';

/** Platforms (and environments) mailed per run; the rest wait for the next. */
const GROUPS_PER_RUN = 50;
/** Changes in one mail at most; more go in the next. */
const NOTICES_PER_MAIL = 50;
/** Sent notices are kept this long, then deleted. */
const SENT_KEPT_MS = 30 * 86_400_000;
/** How far back a mail counts a failing endpoint's exhausted deliveries. */
const EXHAUSTED_WINDOW_MS = 7 * 86_400_000;

const GROUPS = statement<Record<string, never>, { platform_id: string; environment: 'live' | 'sandbox' }>(
  'health_mail_groups',
  `SELECT platform_id, environment FROM health_notices WHERE sent_at IS NULL GROUP BY platform_id, environment LIMIT ${GROUPS_PER_RUN}`,
);

export interface HealthMailDeps {
  database: Database;
  clock: Clock;
  logger: Logger;
  mailer: Mailer | null;
  secrets: SecretBox;
  publicUrl: () => string;
}

/**
 * Mails the health changes not mailed yet (alerts/notices.ts wrote them with each change), one
 * mail per Platform and environment with all of its waiting changes in it: one change reads as
 * itself, several as a digest. Each run locks the notices it mails (SKIP LOCKED), so of several
 * workers one mails each change; they are marked sent in the same transaction, after the mail
 * went out. A mail server that refuses leaves them for the next run (a recipient mailed before the
 * refusal may get it twice). Mail off for that environment, no recipient, or no SMTP server: the
 * changes are marked sent without a mail.
 */
export async function sendHealthMail(deps: HealthMailDeps): Promise<{ mails: number; notices: number }> {
  const { database, clock } = deps;
  const now = clock.now();
  let mails = 0;
  let notices = 0;
  const groups = await runAlone(database, GROUPS, {});
  for (const g of groups) {
    const sent = await database.db.transaction(async (tx) => {
      const rows = await tx
        .select()
        .from(healthNotices)
        .where(and(eq(healthNotices.platformId, g.platform_id), eq(healthNotices.environment, g.environment), isNull(healthNotices.sentAt)))
        .orderBy(asc(healthNotices.createdAt), asc(healthNotices.id))
        .limit(NOTICES_PER_MAIL)
        .for('update', { skipLocked: true });
      if (rows.length === 0) return null;
      const mailed = await mailGroup(deps, tx, g.platform_id, g.environment, rows, now);
      await tx
        .update(healthNotices)
        .set({ sentAt: now })
        .where(
          inArray(
            healthNotices.id,
            rows.map((r) => r.id),
          ),
        );
      return { mailed, count: rows.length };
    });
    if (!sent) continue;
    mails += sent.mailed;
    notices += sent.count;
  }
  await database.db.delete(healthNotices).where(lt(healthNotices.sentAt, new Date(now.getTime() - SENT_KEPT_MS)));
  return { mails, notices };
}

interface Recipient {
  email: string;
  unsubscribe: string;
}

type Notice = typeof healthNotices.$inferSelect;

async function mailGroup(
  deps: HealthMailDeps,
  tx: Tx,
  platformId: string,
  environment: 'live' | 'sandbox',
  rows: Notice[],
  now: Date,
): Promise<number> {
  const [platform] = await tx
    .select({ name: platforms.name, alerts: platforms.alertSettings })
    .from(platforms)
    .where(eq(platforms.id, platformId));
  if (!platform || !deps.mailer) return 0;
  const settings = alertSettingsOf(platform.alerts);
  if (!(environment === 'live' ? settings.mail_live : settings.mail_sandbox)) return 0;
  const publicUrl = deps.publicUrl();
  const team = await tx
    .select({ id: portalUsers.id, email: portalUsers.email })
    .from(portalUsers)
    .where(and(eq(portalUsers.platformId, platformId), inArray(portalUsers.role, ['developer', 'admin']), eq(portalUsers.healthMail, true)))
    .orderBy(asc(portalUsers.createdAt), asc(portalUsers.id));
  const recipients = new Map<string, Recipient>();
  for (const u of team)
    recipients.set(u.email.toLowerCase(), { email: u.email, unsubscribe: unsubscribeUrl(deps.secrets, publicUrl, { user: u.id }) });
  for (const email of settings.emails)
    if (!recipients.has(email))
      recipients.set(email, { email, unsubscribe: unsubscribeUrl(deps.secrets, publicUrl, { platformId, email }) });
  if (recipients.size === 0) return 0;

  const sections: string[] = [];
  const headlines: string[] = [];
  for (const n of rows) {
    const [endpoint] = await tx.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, n.endpointId));
    if (!endpoint) continue;
    // What the change is (a headline) and what to do about it, between the lines every notice has.
    let headline: string;
    let body: string[];
    if (n.kind === 'certificate_expiring') {
      const shown = endpoint.authenticationShown ?? {};
      // Replaced (or removed) since the notice: nothing left to warn about.
      if (endpoint.authenticationType !== 'mtls' || !endpoint.certificateWarned?.startsWith(`${shown.fingerprint}/`)) continue;
      const expired = Date.parse(shown.not_after ?? '') <= now.getTime();
      headline = expired ? 'has an expired client certificate' : `has a client certificate that expires at ${shown.not_after}`;
      body = [
        `Client certificate: ${oneLine(shown.subject ?? '', 200)}, issued by ${oneLine(shown.issuer ?? '', 200)}, SHA-256 ${shown.fingerprint}.`,
        expired
          ? `It expired at ${shown.not_after}: your receiver's gateway refuses it, so deliveries fail. Give the endpoint a new certificate, then replay what failed.`
          : `Give the endpoint a new certificate before ${shown.not_after}. The one it replaces is still presented for a day when your gateway refuses the new one, so you can add the new CA to your gateway in the meantime.`,
      ];
    } else {
      const d = await details(tx, endpoint.id, now);
      const health = healthOf(endpoint, now);
      headline = headlineOf(n.kind, n.warning, health.disables_at);
      body = [
        sinceLine(n.kind, health.since, health.disables_at),
        `Last attempts: ${d.attempts.length ? d.attempts.join('; ') : 'none'}`,
        `Deliveries waiting for a retry: ${d.waiting}. Exhausted (every attempt failed) in the last 7 days: ${d.exhausted}.`,
      ];
    }
    headlines.push(`${endpoint.url} ${headline}`);
    sections.push(
      [
        `${oneLine(endpoint.url, 300)} ${headline}.`,
        '',
        `Endpoint: ${oneLine(endpoint.url, 300)} (${endpoint.id})`,
        ...(endpoint.description ? [`Description: ${oneLine(endpoint.description, 200)}`] : []),
        `Environment: ${environment === 'live' ? 'Live' : 'Sandbox'}`,
        ...body,
        `Open it: ${endpointLink(settings, publicUrl, endpoint.id)}`,
      ].join('\n'),
    );
  }
  if (sections.length === 0) return 0;
  const env = environment === 'live' ? 'Live' : 'Sandbox';
  const subject =
    sections.length === 1
      ? `[${platform.name}] ${env} webhook endpoint ${headlines[0]}`
      : `[${platform.name}] ${sections.length} ${env.toLowerCase()} webhook endpoints need attention`;
  const intro =
    sections.length === 1
      ? `A webhook endpoint of ${platform.name} needs attention:`
      : `${sections.length} webhook endpoints of ${platform.name} need attention:`;
  let mailed = 0;
  for (const r of recipients.values()) {
    const text = [
      intro,
      '',
      sections.join('\n\n---\n\n'),
      '',
      '--',
      `You get this mail as a developer or admin of ${platform.name}, or as one of its alert addresses. Stop these mails: ${r.unsubscribe}`,
      '',
    ].join('\n');
    await deps.mailer.send({
      to: r.email,
      subject,
      text,
      // RFC 8058 one-click unsubscribe: a mail client POSTs to the link, no page in between.
      headers: { 'List-Unsubscribe': `<${r.unsubscribe}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
    });
    mailed++;
  }
  deps.logger.info({ platform: platformId, environment, changes: sections.length, recipients: mailed }, 'health mail sent');
  return mailed;
}

function headlineOf(kind: HealthNoticeKind, warning: number | null, disablesAt: string | null): string {
  if (kind === 'failing') return 'is failing';
  if (kind === 'warning')
    return `will be disabled${disablesAt ? ` at ${disablesAt}` : ''} unless a delivery succeeds (${warning ?? 0}% of the way)`;
  if (kind === 'disabled') return 'was disabled after failing';
  return 'recovered';
}

function sinceLine(kind: HealthNoticeKind, since: string, disablesAt: string | null): string {
  if (kind === 'recovered')
    return `Recovered at ${since}: a delivery succeeded after a run of failures. Replay what failed meanwhile from its page.`;
  if (kind === 'disabled')
    return `Disabled at ${since}: new events are not sent to it. Fix the receiver, enable the endpoint, then replay what failed.`;
  return `Every attempt has failed since ${since}.${disablesAt ? ` It will be disabled at ${disablesAt} if nothing succeeds.` : ''}`;
}

/** The endpoint's last attempts (status or error) and its waiting and exhausted deliveries. */
async function details(tx: Tx, endpointId: string, now: Date) {
  const since = new Date(now.getTime() - EXHAUSTED_WINDOW_MS);
  const d = webhookDeliveries;
  const a = deliveryAttempts;
  const attempts = await tx
    .select({ startedAt: a.startedAt, statusCode: a.statusCode, errorKind: a.errorKind })
    .from(d)
    .innerJoin(a, and(eq(a.deliveryId, d.id), eq(a.deliveryCreatedAt, d.createdAt)))
    .where(and(eq(d.endpointId, endpointId), gte(d.createdAt, since)))
    .orderBy(desc(a.startedAt))
    .limit(3);
  const [counts] = await tx
    .select({
      waiting: sql<number>`count(*) FILTER (WHERE ${d.state} IN ('pending', 'failed_retrying'))`.mapWith(Number),
      exhausted: sql<number>`count(*) FILTER (WHERE ${d.state} = 'exhausted')`.mapWith(Number),
    })
    .from(d)
    .where(and(eq(d.endpointId, endpointId), gte(d.createdAt, since)));
  return {
    attempts: attempts.map(
      (x) => `${formatEventTimestamp(x.startedAt)} ${x.statusCode !== null ? `HTTP ${x.statusCode}` : (x.errorKind ?? 'failed')}`,
    ),
    waiting: counts?.waiting ?? 0,
    exhausted: counts?.exhausted ?? 0,
  };
}

/** Merchant-set text on one line of a plain-text mail, clipped. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
const oneLine = (s: string, max: number) => s.replace(/[\u0000-\u001f\u007f]+/g, ' ').slice(0, max);

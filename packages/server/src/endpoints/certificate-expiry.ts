import { and, eq, isNull } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import type { Database } from '../db/client.ts';
import { webhookEndpoints as w } from '../db/schema.ts';
import { runAlone, statement } from '../db/statement.ts';
import { recordHealthNotice } from './health-notices.ts';

/** How many days before a client certificate expires the team is warned: first, then again. */
export const CERTIFICATE_WARNING_DAYS = [30, 7] as const;
const DAY_MS = 86_400_000;
/** Endpoints warned per sweep; the rest wait for the next one. */
const SWEEP_LIMIT = 100;

/** The expiry as shown (`YYYY-MM-DDThh:mm:ssZ`, which sorts as time does): the partial index of migration 0040. */
const EXPIRING = statement<{ horizon: string }, { id: string; not_after: string; fingerprint: string; certificate_warned: string | null }>(
  'certificate_expiring_candidates',
  `SELECT id, authentication_shown ->> 'not_after' AS not_after, authentication_shown ->> 'fingerprint' AS fingerprint, certificate_warned
   FROM webhook_endpoints
   WHERE authentication_type = 'mtls' AND deleted_at IS NULL AND (authentication_shown ->> 'not_after') <= :horizon
     AND status = 'enabled'
     -- Warned at the last stage already: done with, so those never crowd out the rest.
     AND certificate_warned IS DISTINCT FROM (authentication_shown ->> 'fingerprint') || '/${CERTIFICATE_WARNING_DAYS.at(-1)}'
   ORDER BY authentication_shown ->> 'not_after' LIMIT ${SWEEP_LIMIT}`,
);

/** The stage a certificate that expires at `notAfter` has reached at `now` (days ahead), or null: not yet. */
export function certificateStage(notAfter: number, now: number): number | null {
  let stage: number | null = null;
  for (const days of CERTIFICATE_WARNING_DAYS) if (notAfter - now <= days * DAY_MS) stage = days;
  return stage;
}

export interface CertificateExpiryDeps {
  database: Database;
  clock: Clock;
  logger: Logger;
}

/**
 * Warns the merchant's team (the health mail) when an endpoint's client certificate comes within
 * 30, then 7, days of its end (one first seen after it expired is the last stage too, and the mail
 * says it expired): one notice per certificate and stage, made by a conditional UPDATE that one
 * of several sweeping workers wins. A new certificate (another fingerprint) starts again. Returns
 * the endpoints warned.
 */
export async function warnExpiringCertificates(deps: CertificateExpiryDeps): Promise<string[]> {
  const now = deps.clock.now();
  const horizon = `${new Date(now.getTime() + CERTIFICATE_WARNING_DAYS[0] * DAY_MS).toISOString().slice(0, 19)}Z`;
  const warned: string[] = [];
  for (const c of await runAlone(deps.database, EXPIRING, { horizon })) {
    const stage = certificateStage(Date.parse(c.not_after), now.getTime());
    const mark = `${c.fingerprint}/${stage}`;
    if (stage === null || c.certificate_warned === mark) continue;
    const row = await deps.database.db.transaction(async (tx) => {
      const [moved] = await tx
        .update(w)
        .set({ certificateWarned: mark })
        .where(
          and(eq(w.id, c.id), c.certificate_warned === null ? isNull(w.certificateWarned) : eq(w.certificateWarned, c.certificate_warned)),
        )
        .returning();
      if (moved) await recordHealthNotice(tx, moved, 'certificate_expiring', now, stage);
      return moved;
    });
    if (!row) continue;
    warned.push(row.id);
    deps.logger.warn(
      { endpoint: row.id, platform: row.platformId, environment: row.environment, not_after: c.not_after },
      `webhook endpoint's client certificate expires at ${c.not_after}: the team is warned to give it a new one`,
    );
  }
  return warned;
}

import type { Queryable } from '../db/client.ts';
import { healthNotices, type HealthNoticeKind, type WebhookEndpointRow } from '../db/schema.ts';
import { newId } from '../ids.ts';

/**
 * Notes a health change for the mail (alerts/health-mail.ts sends it), in the transaction that makes the
 * change: a change that commits is mailed, one that rolls back is not.
 */
export async function recordHealthNotice(
  q: Queryable,
  row: WebhookEndpointRow,
  kind: HealthNoticeKind,
  now: Date,
  /** For `certificate_expiring`: the stage (days ahead) warned about. */
  days: number | null = null,
): Promise<void> {
  await q.insert(healthNotices).values({
    id: newId('healthNotice'),
    platformId: row.platformId,
    environment: row.environment,
    endpointId: row.id,
    kind,
    warning: kind === 'warning' ? row.healthWarned : days,
    createdAt: now,
  });
}

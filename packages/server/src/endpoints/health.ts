import { formatEventTimestamp } from '@payhooks/contract';
import type { WebhookEndpointRow } from '../db/schema.ts';

/**
 * An endpoint's health as the merchant sees it: the API's and the portal's `health`, and what the
 * operational events about it carry (docs/decisions/endpoint-health.md).
 *
 * - `healthy`: nothing to do.
 * - `failing`: every attempt has failed for PAYHOOKS_HEALTH_FAILING_AFTER (at least
 *   PAYHOOKS_HEALTH_FAILING_ATTEMPTS of them); `since` is the first of those failures. `warning`
 *   becomes 50, then 90, as the failures reach that share of PAYHOOKS_AUTO_DISABLE_AFTER, and
 *   `disables_at` says when auto-disable will act if nothing succeeds.
 * - `disabled`: the endpoint is disabled (by auto-disable or by hand), since then.
 * - `recovered`: a 2xx came after it was failing; shown for a day, then `healthy` again.
 */
export type EndpointHealthState = 'healthy' | 'failing' | 'disabled' | 'recovered';

export interface EndpointHealth {
  state: EndpointHealthState;
  /** When it entered this state (for `healthy`: its last recovery, or its creation). */
  since: string;
  /** While failing: 50 or 90 once the failures have lasted that share of the auto-disable window; else null. */
  warning: 50 | 90 | null;
  /** While failing with auto-disable on: when it will be disabled if nothing succeeds; else null. */
  disables_at: string | null;
}

/** How long `recovered` is shown before the endpoint reads `healthy` again. */
export const RECOVERED_SHOWN_MS = 86_400_000;

type HealthRow = Pick<
  WebhookEndpointRow,
  'status' | 'disabledAt' | 'createdAt' | 'healthState' | 'healthChangedAt' | 'healthWarned' | 'healthDisablesAt' | 'failingSince'
>;

export function healthOf(row: HealthRow, now: Date): EndpointHealth {
  const at = formatEventTimestamp;
  if (row.status === 'disabled')
    return { state: 'disabled', since: at(row.disabledAt ?? row.healthChangedAt ?? row.createdAt), warning: null, disables_at: null };
  if (row.healthState === 'failing')
    return {
      state: 'failing',
      since: at(row.healthChangedAt ?? row.failingSince ?? now),
      warning: row.healthWarned === 50 || row.healthWarned === 90 ? row.healthWarned : null,
      disables_at: row.healthDisablesAt ? at(row.healthDisablesAt) : null,
    };
  const changed = row.healthChangedAt;
  if (row.healthState === 'recovered' && changed && now.getTime() - changed.getTime() < RECOVERED_SHOWN_MS)
    return { state: 'recovered', since: at(changed), warning: null, disables_at: null };
  return { state: 'healthy', since: at(changed ?? row.createdAt), warning: null, disables_at: null };
}

/** The warning a failure run of `failingForMs` has reached: 90, 50 or 0 (auto-disable off: 0). */
export function warningFor(failingForMs: number, windowMs: number): 0 | 50 | 90 {
  if (windowMs <= 0) return 0;
  if (failingForMs >= 0.9 * windowMs) return 90;
  if (failingForMs >= 0.5 * windowMs) return 50;
  return 0;
}

import { and, eq, isNull, lt, ne } from 'drizzle-orm';
import { runAlone, statement } from '../db/statement.ts';
import type { Logger } from 'pino';
import type { EventType } from '@payhooks/contract';
import type { Clock } from '../clock.ts';
import type { Database, Tx } from '../db/client.ts';
import { webhookEndpoints as w, type HealthNoticeKind, type WebhookEndpointRow } from '../db/schema.ts';
import { recordHealthNotice } from './health-notices.ts';
import { publishEndpointEvent } from './endpoint-events.ts';
import { warningFor } from './health.ts';
import { failureRunCounts } from './failure-run.ts';

/** Endpoints moved per step of a sweep; the rest wait for the next one. */
const SWEEP_LIMIT = 100;

const FAILING_CANDIDATES = statement<{ before: Date }, { id: string; failing_since: Date }>(
  'health_failing_candidates',
  `SELECT id, failing_since FROM webhook_endpoints
   WHERE failing_since IS NOT NULL AND failing_since <= :before AND health_state <> 'failing'
     AND status = 'enabled' AND deleted_at IS NULL
   ORDER BY failing_since LIMIT ${SWEEP_LIMIT}`,
);
const WARNING_CANDIDATES = statement<{ before: Date }, { id: string; failing_since: Date; health_warned: number }>(
  'health_warning_candidates',
  `SELECT id, failing_since, health_warned FROM webhook_endpoints
   WHERE health_state = 'failing' AND failing_since IS NOT NULL AND failing_since <= :before
     AND status = 'enabled' AND deleted_at IS NULL
   ORDER BY failing_since LIMIT ${SWEEP_LIMIT}`,
);
const RECOVERED_CANDIDATES = statement<Record<string, never>, { id: string }>(
  'health_recovered_candidates',
  `SELECT id FROM webhook_endpoints WHERE health_state = 'failing' AND failing_since IS NULL AND deleted_at IS NULL LIMIT ${SWEEP_LIMIT}`,
);

export interface HealthSweepDeps {
  database: Database;
  clock: Clock;
  logger: Logger;
  /** PAYHOOKS_AUTO_DISABLE_AFTER (0: off, and no warnings). */
  windowMs: number;
  /** PAYHOOKS_HEALTH_FAILING_AFTER and PAYHOOKS_HEALTH_FAILING_ATTEMPTS. */
  failingAfterMs: number;
  failingAttempts: number;
  /** The retry schedule's length: how far back a delivery attempted in a failure run may have been created. */
  scheduleMs: number;
}

export interface HealthChanges {
  failing: string[];
  warned: string[];
  recovered: string[];
}

/**
 * One pass over the endpoints whose health changes (endpoints/health.ts), each change made by a
 * conditional UPDATE that only one of several sweeping workers wins, and announced by it once as
 * an operational event in the same transaction:
 * - `failing`: `failing_since` (kept by the recording statement: the first failure after a 2xx,
 *   cleared by any 2xx) older than the threshold, with enough failed attempts since and none
 *   succeeded; `webhook_endpoint.failing`.
 * - warnings: a failing endpoint whose failures reached half, then 90 %, of the auto-disable
 *   window; `webhook_endpoint.failing` again, with `health.warning` and `health.disables_at`.
 * - `recovered`: a failing endpoint whose `failing_since` a 2xx has cleared;
 *   `webhook_endpoint.recovered`.
 */
export async function sweepEndpointHealth(deps: HealthSweepDeps): Promise<HealthChanges> {
  const now = deps.clock.now();
  const changes: HealthChanges = { failing: [], warned: [], recovered: [] };
  const disablesAt = (since: Date) => (deps.windowMs > 0 ? new Date(since.getTime() + deps.windowMs) : null);

  // Newly failing: through the partial index on failing_since (endpoints failing right now).
  const candidates = await runAlone(deps.database, FAILING_CANDIDATES, { before: new Date(now.getTime() - deps.failingAfterMs) });
  for (const c of candidates) {
    const since = c.failing_since;
    const count = await failureRunCounts(deps.database, c.id, since, deps.scheduleMs);
    if (count.failed < deps.failingAttempts || count.succeeded > 0) continue;
    const warning = warningFor(now.getTime() - since.getTime(), deps.windowMs);
    const moved = await announce(deps, 'webhook_endpoint.failing', 'failing', now, (tx) =>
      tx
        .update(w)
        .set({ healthState: 'failing', healthChangedAt: since, healthWarned: warning, healthDisablesAt: disablesAt(since) })
        .where(and(eq(w.id, c.id), eq(w.failingSince, since), ne(w.healthState, 'failing'), eq(w.status, 'enabled'), isNull(w.deletedAt)))
        .returning(),
    );
    if (moved) changes.failing.push(moved.id);
  }

  // Warnings: failing endpoints whose failures reached half or 90 % of the window.
  if (deps.windowMs > 0) {
    const due = await runAlone(deps.database, WARNING_CANDIDATES, { before: new Date(now.getTime() - 0.5 * deps.windowMs) });
    for (const c of due) {
      const since = c.failing_since;
      const warning = warningFor(now.getTime() - since.getTime(), deps.windowMs);
      if (warning <= c.health_warned) continue;
      const moved = await announce(deps, 'webhook_endpoint.failing', 'warning', now, (tx) =>
        tx
          .update(w)
          .set({ healthWarned: warning, healthDisablesAt: disablesAt(since) })
          .where(
            and(
              eq(w.id, c.id),
              eq(w.healthState, 'failing'),
              eq(w.failingSince, since),
              lt(w.healthWarned, warning),
              eq(w.status, 'enabled'),
            ),
          )
          .returning(),
      );
      if (moved) changes.warned.push(moved.id);
    }
  }

  // Recovered: a 2xx cleared failing_since (manual replays count: they are answers too).
  const healed = await runAlone(deps.database, RECOVERED_CANDIDATES, {});
  for (const c of healed) {
    const moved = await announce(deps, 'webhook_endpoint.recovered', 'recovered', now, (tx) =>
      tx
        .update(w)
        .set({ healthState: 'recovered', healthChangedAt: now, healthWarned: 0, healthDisablesAt: null })
        .where(and(eq(w.id, c.id), eq(w.healthState, 'failing'), isNull(w.failingSince)))
        .returning(),
    );
    if (moved) changes.recovered.push(moved.id);
  }
  return changes;
}

/**
 * Makes one change (`update` returns the row it moved, or nothing when another worker got there
 * first or the endpoint changed meanwhile), notes it for the mail and publishes its event, in one
 * transaction.
 */
async function announce(
  deps: HealthSweepDeps,
  type: EventType,
  kind: HealthNoticeKind,
  now: Date,
  update: (tx: Tx) => Promise<WebhookEndpointRow[]>,
): Promise<WebhookEndpointRow | null> {
  return deps.database.db.transaction(async (tx) => {
    const [row] = await update(tx);
    if (!row) return null;
    await recordHealthNotice(tx, row, kind, now);
    const { health } = await publishEndpointEvent(tx, type, row, now);
    deps.logger.warn(
      { endpoint: row.id, platform: row.platformId, environment: row.environment, health },
      type === 'webhook_endpoint.recovered'
        ? 'webhook endpoint recovered: a delivery succeeded after it was failing'
        : `webhook endpoint failing${health.warning ? ` (${health.warning} % of the way to auto-disable, at ${health.disables_at})` : ''}`,
    );
    return row;
  });
}

import { and, asc, eq, isNotNull, lte, sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import type { Database } from '../db/client.ts';
import { webhookEndpoints } from '../db/schema.ts';
import { requeueParkedDeliveries } from '../delivery/parking.ts';
import type { DeliveryMetrics } from '../delivery/metrics.ts';
import { PeriodicJob } from '../periodic-job.ts';
import type { AuditTrail } from '../audit/trail.ts';
import { sweepEndpointHealth, type HealthSweepDeps } from './health-sweep.ts';
import { warnExpiringCertificates } from './certificate-expiry.ts';
import { recordHealthNotice } from './health-notices.ts';
import { publishEndpointEvent } from './endpoint-events.ts';
import { failureRunCounts } from './failure-run.ts';

/** Failed attempts an endpoint needs within the window before it is disabled. */
export const AUTO_DISABLE_MIN_FAILURES = 10;
/** Endpoints examined per sweep; the rest wait for the next one. */
const SWEEP_LIMIT = 100;

export interface AutoDisableDeps {
  /** Runs after each sweep: the health mail (alerts/health-mail.ts, wired by the context). */
  afterSweep?: (() => Promise<unknown>) | undefined;
  database: Database;
  clock: Clock;
  logger: Logger;
  audit: AuditTrail;
  metrics?: DeliveryMetrics | undefined;
  /** PAYHOOKS_AUTO_DISABLE_AFTER; 0 = never. */
  windowMs: number;
  /** How far back a delivery attempted in the window may have been created: the whole retry schedule. */
  scheduleMs: number;
}

/**
 * Disables endpoints whose deliveries have all failed for the whole window: `failing_since` (kept
 * by the recording statement: set at the first failure after a 2xx, cleared by any 2xx) is at
 * least `windowMs` old and at least AUTO_DISABLE_MIN_FAILURES attempts failed since then. Each
 * one, in one transaction: `disabled` with reason `failing`, its unfinished deliveries parked
 * (they resume when it is enabled again), and a `webhook_endpoint.disabled` event published to
 * the Platform's other endpoints of that environment subscribed to it. Several workers may
 * sweep at once: the UPDATE re-checks `status = 'enabled'` under the row lock, so an endpoint is
 * disabled, and announced, once. Returns the ids disabled by this call.
 */
export async function disableFailingEndpoints(deps: AutoDisableDeps): Promise<string[]> {
  if (deps.windowMs <= 0) return [];
  const now = deps.clock.now();
  const cutoff = new Date(now.getTime() - deps.windowMs);
  const db = deps.database.db;
  // Through the partial index on failing_since: only endpoints that are failing right now.
  const candidates = await db
    .select({ id: webhookEndpoints.id, failingSince: webhookEndpoints.failingSince })
    .from(webhookEndpoints)
    .where(
      and(
        isNotNull(webhookEndpoints.failingSince),
        lte(webhookEndpoints.failingSince, cutoff),
        eq(webhookEndpoints.status, 'enabled'),
        sql`${webhookEndpoints.deletedAt} IS NULL`,
      ),
    )
    .orderBy(asc(webhookEndpoints.failingSince))
    .limit(SWEEP_LIMIT);
  const disabled: string[] = [];
  for (const c of candidates) {
    const since = c.failingSince!;
    const count = await failureRunCounts(deps.database, c.id, since, deps.scheduleMs);
    if (count.failed < AUTO_DISABLE_MIN_FAILURES || count.succeeded > 0) continue;
    const row = await db.transaction(async (tx) => {
      const [updated] = await tx
        .update(webhookEndpoints)
        .set({ status: 'disabled', disabledReason: 'failing', disabledAt: now, updatedAt: now })
        .where(
          and(
            eq(webhookEndpoints.id, c.id),
            eq(webhookEndpoints.status, 'enabled'),
            sql`${webhookEndpoints.deletedAt} IS NULL`,
            lte(webhookEndpoints.failingSince, cutoff),
          ),
        )
        .returning();
      if (!updated) return null; // another worker got there first, or it recovered meanwhile
      await recordHealthNotice(tx, updated, 'disabled', now);
      await deps.audit.record(
        tx,
        { platformId: updated.platformId, environment: updated.environment, actor: { type: 'system', id: 'auto_disable' } },
        {
          action: 'webhook_endpoint.auto_disable',
          resourceType: 'webhook_endpoint',
          resourceId: updated.id,
          changes: {
            status: 'disabled',
            disabled_reason: 'failing',
            failing_since: since.toISOString(),
            failed_attempts: Number(count.failed),
          },
        },
      );
      await publishEndpointEvent(tx, 'webhook_endpoint.disabled', updated, now);
      return updated;
    });
    if (!row) continue;
    disabled.push(row.id);
    deps.metrics?.autoDisabled.inc();
    deps.logger.warn(
      {
        endpoint: row.id,
        platform: row.platformId,
        environment: row.environment,
        failing_since: since.toISOString(),
        failed_attempts: Number(count.failed),
      },
      'webhook endpoint disabled: every delivery failed for PAYHOOKS_AUTO_DISABLE_AFTER; its deliveries stay on their schedule, each attempt failing without a request until it is enabled again',
    );
  }
  return disabled;
}

/**
 * Runs the sweep every `intervalMs` beside the delivery workers: endpoint health first
 * (endpoints/health-sweep.ts: failing, warnings, recovered; also when auto-disable is off), then
 * auto-disable (not when the window is 0). Its first run also puts back on their schedule the
 * deliveries an earlier release parked on endpoints that are still disabled (delivery/parking.ts).
 */
export class AutoDisableJob extends PeriodicJob {
  private requeued = false;

  constructor(
    private readonly deps: AutoDisableDeps & Pick<HealthSweepDeps, 'failingAfterMs' | 'failingAttempts'> & { intervalMs: number },
  ) {
    super(
      deps.intervalMs,
      () => this.runOnce(),
      (err) => deps.logger.error({ err }, 'endpoint health and auto-disable sweep failed; retrying at the next interval'),
    );
  }

  /** One sweep, now (the timer's, and tests' with a ManualClock). */
  async runOnce(): Promise<void> {
    await this.requeueOnce();
    await sweepEndpointHealth(this.deps);
    await warnExpiringCertificates(this.deps);
    await disableFailingEndpoints(this.deps);
    await this.deps.afterSweep?.();
  }

  private async requeueOnce(): Promise<void> {
    if (this.requeued) return;
    await this.deps.database.db.transaction((tx) => requeueParkedDeliveries(tx, this.deps.clock.now()));
    this.requeued = true;
  }
}

import type { Clock } from '../clock.ts';
import { runAlone, statement } from '../db/statement.ts';
import { randomBytes } from 'node:crypto';
import { and, eq, gt } from 'drizzle-orm';
import { formatEventTimestamp } from '@payhooks/contract';
import type { Database } from '../db/client.ts';
import { bulkReplays, type BulkReplayRow, type BulkReplayStatus } from '../db/schema.ts';
import { AppError, notFound } from '../errors.ts';
import type { AuditTrail } from '../audit/trail.ts';
import type { Scope } from '../scope.ts';
import { REPLAYABLE_STATES } from './schedule.ts';
import type { DeliveryService } from './service.ts';

/** Progress of one "Replay all failed since…" run, as the portal polls it. */
export interface BulkReplayJob {
  id: string;
  object: 'bulk_replay';
  endpoint_id: string;
  since: string;
  /** `stopped`: the process running it shut down (or died) before the end; start it again. */
  status: BulkReplayStatus;
  /** Deliveries selected when the job started. */
  total: number;
  /** Manual attempts made so far, and how they ended. */
  attempted: number;
  delivered: number;
  failed: number;
  /** Deliveries no longer replayable when their turn came (a retry delivered them, or one was in flight). */
  skipped: number;
  created_at: string;
  finished_at: string | null;
}

/** One job replays at most this many deliveries; start another for the rest. */
export const BULK_REPLAY_MAX = 10_000;
/** A running job's row is updated after every attempt; one silent this long lost its process. */
export const BULK_REPLAY_STALE_MS = 2 * 60_000;

/**
 * Deliveries of one endpoint that can be replayed and whose last attempt failed at or after
 * `since`: the ones an outage that began at `since` left behind. Oldest first, so the
 * merchant's receiver sees them roughly in the order they happened.
 */
const SELECT_TEXT = `
SELECT id FROM webhook_deliveries
WHERE platform_id = :platform_id AND environment = :environment AND endpoint_id = :endpoint_id
  AND state = ANY(:states::text[]) AND last_attempt_at >= :since
ORDER BY created_at, id
LIMIT :max`;
interface SelectParams {
  platform_id: string;
  environment: string;
  endpoint_id: string;
  states: readonly string[];
  since: Date;
  max: number;
}
const SELECT = statement<SelectParams, { id: string }>('bulk_replay_select', SELECT_TEXT);

/** SELECT's rows, counted (capped like the job itself). */
const COUNT = statement<SelectParams, { n: number }>('bulk_replay_count', `SELECT count(*) AS n FROM (${SELECT_TEXT}) s`);

function toJob(row: BulkReplayRow, now: Date): BulkReplayJob {
  const stale = row.status === 'running' && now.getTime() - row.updatedAt.getTime() > BULK_REPLAY_STALE_MS;
  return {
    id: row.id,
    object: 'bulk_replay',
    endpoint_id: row.endpointId,
    since: formatEventTimestamp(row.since),
    status: stale ? 'stopped' : row.status,
    total: row.total,
    attempted: row.attempted,
    delivered: row.delivered,
    failed: row.failed,
    skipped: row.skipped,
    created_at: formatEventTimestamp(row.createdAt),
    finished_at: row.finishedAt ? formatEventTimestamp(row.finishedAt) : null,
  };
}

/**
 * "Replay all failed since…" for one endpoint, as a background job of the process that
 * started it. It runs `DeliveryService.replay` for each selected delivery in as many lanes as
 * the per-endpoint cap (`endpointConcurrency`), and every manual attempt also passes the
 * service's per-endpoint gate, counted over every process (delivery/shared-gate.ts), so single
 * Replay clicks during a bulk run, through this process or another, share the same cap.
 * Progress is written to `bulk_replays` after every attempt, so any API process can report it.
 * A restart stops a running job; starting it again is safe (deliveries delivered meanwhile are
 * no longer selected, or are skipped).
 */
export class BulkReplays {
  private readonly running = new Map<string, Promise<void>>();
  private stopping = false;

  private readonly database: Database;
  private readonly deliveries: DeliveryService;
  private readonly clock: Clock;
  private readonly audit: AuditTrail;

  constructor(deps: { database: Database; deliveries: DeliveryService; clock: Clock; audit: AuditTrail }) {
    ({ database: this.database, deliveries: this.deliveries, clock: this.clock, audit: this.audit } = deps);
  }

  /** How many deliveries `start` would replay now (a dry run, for the confirmation). */
  async count(scope: Scope, endpointId: string, since: Date): Promise<number> {
    const [row] = await runAlone(this.database, COUNT, selectParams(scope, endpointId, since));
    return row?.n ?? 0;
  }

  async start(scope: Scope, endpointId: string, since: Date): Promise<BulkReplayJob> {
    if (this.stopping)
      throw new AppError('unavailable', 'shutting_down', 'The service is shutting down; start the replay again in a moment.');
    const db = this.database.db;
    const now = this.clock.now();
    const [busy] = await db
      .select({ id: bulkReplays.id })
      .from(bulkReplays)
      .where(
        and(
          eq(bulkReplays.endpointId, endpointId),
          eq(bulkReplays.status, 'running'),
          gt(bulkReplays.updatedAt, new Date(now.getTime() - BULK_REPLAY_STALE_MS)),
        ),
      );
    if (busy)
      throw new AppError(
        'conflict',
        'bulk_replay_running',
        `A bulk replay of this endpoint is already running (${busy.id}); wait for it to finish.`,
      );
    const rows = await runAlone(this.database, SELECT, selectParams(scope, endpointId, since));
    const row = await db.transaction(async (tx) => {
      const [inserted] = await tx
        .insert(bulkReplays)
        .values({
          id: `bulk_${randomBytes(12).toString('hex')}`,
          platformId: scope.platformId,
          environment: scope.environment,
          endpointId,
          since,
          status: rows.length === 0 ? 'finished' : 'running',
          total: rows.length,
          createdAt: now,
          updatedAt: now,
          finishedAt: rows.length === 0 ? now : null,
        })
        .returning();
      await this.audit.record(tx, scope, {
        action: 'webhook_endpoint.bulk_replay',
        resourceType: 'webhook_endpoint',
        resourceId: endpointId,
        changes: { bulk_replay_id: inserted!.id, since: since.toISOString(), deliveries: rows.length },
      });
      return inserted;
    });
    if (rows.length > 0) {
      const done = this.run(
        scope,
        row!.id,
        rows.map((r) => r.id),
      ).finally(() => this.running.delete(row!.id));
      this.running.set(row!.id, done);
    }
    return toJob(row!, now);
  }

  /** A job of this scope; another Platform's or environment's job is a 404 like an unknown one. */
  async get(scope: Scope, id: string): Promise<BulkReplayJob> {
    const [row] = await this.database.db
      .select()
      .from(bulkReplays)
      .where(and(eq(bulkReplays.id, id), eq(bulkReplays.platformId, scope.platformId), eq(bulkReplays.environment, scope.environment)));
    if (!row) throw notFound('bulk replay', id);
    return toJob(row, this.clock.now());
  }

  /** Waits for a job of this process to end (tests). */
  async settled(id: string): Promise<void> {
    await this.running.get(id);
  }

  /** Stops taking deliveries from running jobs, waits for the attempts in flight, marks them stopped. */
  async close(): Promise<void> {
    this.stopping = true;
    await Promise.all([...this.running.values()]);
  }

  private async run(scope: Scope, id: string, ids: string[]): Promise<void> {
    const counts = { attempted: 0, delivered: 0, failed: 0, skipped: 0 };
    const save = (extra: Partial<typeof bulkReplays.$inferInsert> = {}) =>
      this.database.db
        .update(bulkReplays)
        .set({ ...counts, updatedAt: this.clock.now(), ...extra })
        .where(eq(bulkReplays.id, id));
    let next = 0;
    const lane = async () => {
      while (next < ids.length && !this.stopping) {
        const deliveryId = ids[next++]!;
        try {
          // One audit entry for the whole job (below), not one per delivery it replays.
          const after = await this.deliveries.replay(scope, deliveryId, { audited: false });
          counts.attempted++;
          if (after.state === 'delivered') counts.delivered++;
          else counts.failed++;
        } catch (err) {
          // Delivered by a retry meanwhile, in flight, or its endpoint deleted: nothing to do.
          if (err instanceof AppError && (err.kind === 'conflict' || err.kind === 'not_found')) counts.skipped++;
          else counts.failed++; // an unexpected error (database gone): counted, the job goes on
        }
        await save().catch(() => {});
      }
    };
    const lanes = Math.max(1, Math.min(this.deliveries.manualGate.limit, ids.length));
    await Promise.all(Array.from({ length: lanes }, lane));
    const finished = !(this.stopping && next < ids.length);
    await save({ status: finished ? 'finished' : 'stopped', finishedAt: this.clock.now() }).catch(() => {});
  }
}

const selectParams = (scope: Scope, endpointId: string, since: Date): SelectParams => ({
  platform_id: scope.platformId,
  environment: scope.environment,
  endpoint_id: endpointId,
  states: REPLAYABLE_STATES,
  since,
  max: BULK_REPLAY_MAX,
});

import { randomBytes } from 'node:crypto';
import { formatEventTimestamp } from '@payhooks/contract';
import type { Database } from '../db/client.ts';
import { AppError, notFound } from '../errors.ts';
import type { Scope } from '../tenancy/scope.ts';
import { REPLAYABLE_STATES } from './schedule.ts';
import type { DeliveryService } from './service.ts';

/** Progress of one "Replay all failed since…" run, as the portal polls it. */
export interface BulkReplayJob {
  id: string;
  object: 'bulk_replay';
  endpoint_id: string;
  since: string;
  status: 'running' | 'finished' | 'stopped';
  /** Deliveries selected when the job started. */
  total: number;
  /** Manual attempts made so far, and how many of them were answered with a 2xx. */
  attempted: number;
  delivered: number;
  failed: number;
  /** Deliveries that were no longer replayable when their turn came (a retry delivered them, or one was in flight). */
  skipped: number;
  created_at: string;
  finished_at: string | null;
}

/** One job replays at most this many deliveries; start another for the rest. */
export const BULK_REPLAY_MAX = 10_000;

/**
 * Deliveries of one endpoint that can be replayed and whose last attempt failed at or after
 * `since`: the ones an outage that began at `since` left behind. Oldest first, so the
 * merchant's receiver sees them roughly in the order they happened.
 */
const SELECT_SQL = `
SELECT id FROM webhook_deliveries
WHERE platform_id = $1 AND environment = $2 AND endpoint_id = $3
  AND state = ANY($4::text[]) AND last_attempt_at >= $5
ORDER BY created_at, id
LIMIT $6`;

/**
 * "Replay all failed since…" for one endpoint, as a background job in this process. It runs
 * `DeliveryService.replay` for each selected delivery with at most the per-endpoint cap
 * (`endpointConcurrency`) in flight, and every manual attempt also goes through the service's
 * per-endpoint gate, so single Replay clicks during a bulk run share the same cap. Jobs live in
 * memory: a restart ends a running job, and running it again is safe (replays of deliveries
 * that were delivered meanwhile are skipped).
 */
export class BulkReplays {
  private readonly jobs = new Map<string, { job: BulkReplayJob; scope: Scope; done: Promise<void> }>();
  private stopping = false;

  constructor(
    private readonly database: Database,
    private readonly deliveries: DeliveryService,
    private readonly now: () => Date,
  ) {}

  async start(scope: Scope, endpointId: string, since: Date): Promise<BulkReplayJob> {
    if (this.stopping) throw new AppError('unavailable', 'shutting_down', 'The service is shutting down; start the replay again in a moment.');
    const running = [...this.jobs.values()].find((j) => j.job.endpoint_id === endpointId && j.job.status === 'running' && j.scope.platformId === scope.platformId);
    if (running) throw new AppError('conflict', 'bulk_replay_running', `A bulk replay of this endpoint is already running (${running.job.id}); wait for it to finish.`);
    const rows = await this.database.query<{ id: string }>(SELECT_SQL, [scope.platformId, scope.environment, endpointId, REPLAYABLE_STATES, since, BULK_REPLAY_MAX]);
    const job: BulkReplayJob = {
      id: `bulk_${randomBytes(12).toString('hex')}`,
      object: 'bulk_replay',
      endpoint_id: endpointId,
      since: formatEventTimestamp(since),
      status: 'running',
      total: rows.length,
      attempted: 0,
      delivered: 0,
      failed: 0,
      skipped: 0,
      created_at: formatEventTimestamp(this.now()),
      finished_at: null,
    };
    const done = this.run(scope, job, rows.map((r) => r.id));
    this.jobs.set(job.id, { job, scope, done });
    this.forgetOld();
    return { ...job };
  }

  /** A job of this scope; another Platform's or environment's job is a 404 like an unknown one. */
  get(scope: Scope, id: string): BulkReplayJob {
    const entry = this.jobs.get(id);
    if (!entry || entry.scope.platformId !== scope.platformId || entry.scope.environment !== scope.environment) throw notFound('bulk replay', id);
    return { ...entry.job };
  }

  /** Waits for a job to end (tests, shutdown). */
  async settled(id: string): Promise<void> {
    await this.jobs.get(id)?.done;
  }

  /** Stops taking deliveries from running jobs and waits for the attempts in flight. */
  async close(): Promise<void> {
    this.stopping = true;
    await Promise.all([...this.jobs.values()].map((j) => j.done));
  }

  private async run(scope: Scope, job: BulkReplayJob, ids: string[]): Promise<void> {
    let next = 0;
    const lane = async () => {
      while (next < ids.length && !this.stopping) {
        const id = ids[next++]!;
        try {
          const after = await this.deliveries.replay(scope, id);
          job.attempted++;
          if (after.state === 'delivered') job.delivered++;
          else job.failed++;
        } catch (err) {
          // Delivered by a retry meanwhile, in flight, or its endpoint deleted: nothing to do.
          if (err instanceof AppError && (err.kind === 'conflict' || err.kind === 'not_found')) job.skipped++;
          else job.failed++; // an unexpected error (database gone): counted, the job goes on
        }
      }
    };
    const lanes = Math.max(1, Math.min(this.deliveries.manualGate.limit, ids.length));
    await Promise.all(Array.from({ length: lanes }, lane));
    job.status = this.stopping && next < ids.length ? 'stopped' : 'finished';
    job.finished_at = formatEventTimestamp(this.now());
  }

  private forgetOld(): void {
    const finished = [...this.jobs.entries()].filter(([, j]) => j.job.status !== 'running');
    for (const [id] of finished.slice(0, Math.max(0, finished.length - 100))) this.jobs.delete(id);
  }
}

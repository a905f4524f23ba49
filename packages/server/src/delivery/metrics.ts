import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Database } from '../db/client.ts';
import type { Clock } from '../clock.ts';

const UNFINISHED_STATES = ['pending', 'failed_retrying'] as const;

/**
 * Prometheus metrics of the delivery engine. Counters and the histogram are per process;
 * the gauges are read from the database at scrape time, so every process reports the same
 * global backlog and unfinished counts. No gauge reads the whole history: each query is bounded
 * by a partial index holding only unfinished rows (the backlog), so a scrape costs the same at
 * a thousand deliveries as at a billion.
 */
export class DeliveryMetrics {
  readonly registry = new Registry();
  readonly attempts: Counter<'outcome' | 'error_kind'>;
  readonly duration: Histogram<'outcome'>;
  readonly rotations: Counter;
  readonly autoDisabled: Counter;
  readonly claims: Counter;
  readonly claimedRows: Counter;

  constructor(database: Database, clock: Clock) {
    this.attempts = new Counter({
      name: 'payhooks_delivery_attempts_total',
      help: 'Delivery attempts made by this process, by outcome (succeeded|failed) and error kind.',
      labelNames: ['outcome', 'error_kind'],
      registers: [this.registry],
    });
    this.duration = new Histogram({
      name: 'payhooks_delivery_attempt_duration_seconds',
      help: 'Time from sending a delivery to its answer status (or failure).',
      labelNames: ['outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [this.registry],
    });
    new Gauge({
      name: 'payhooks_delivery_backlog',
      help: 'Deliveries due now and not yet claimed by a worker.',
      registers: [this.registry],
      async collect() {
        const [r] = await database.query<{ n: string }>(
          `SELECT count(*) AS n FROM delivery_queue WHERE due_at <= $1 AND lease_token IS NULL`,
          [clock.now()],
        );
        this.set(Number(r?.n ?? 0));
      },
    });
    new Gauge({
      name: 'payhooks_delivery_oldest_due_age_seconds',
      help: 'Age of the oldest delivery that is due and unclaimed (0 when none).',
      registers: [this.registry],
      async collect() {
        const [r] = await database.query<{ oldest: Date | null }>(
          `SELECT min(due_at) AS oldest FROM delivery_queue WHERE due_at <= $1 AND lease_token IS NULL`,
          [clock.now()],
        );
        this.set(r?.oldest ? Math.max(0, (clock.now().getTime() - new Date(r.oldest).getTime()) / 1000) : 0);
      },
    });
    this.claims = new Counter({
      name: 'payhooks_delivery_claims_total',
      help: 'Claim statements run by this process (each leases a batch of due deliveries; empty claims included).',
      registers: [this.registry],
    });
    this.claimedRows = new Counter({
      name: 'payhooks_delivery_claimed_total',
      help: 'Deliveries leased by those claims. claimed / claims is the mean batch: a handful means the database is paying a claim per few deliveries.',
      registers: [this.registry],
    });
    this.rotations = new Counter({
      name: 'payhooks_secret_rotations_total',
      help: 'Endpoint signing secrets rotated through this process (API or portal).',
      registers: [this.registry],
    });
    this.autoDisabled = new Counter({
      name: 'payhooks_endpoints_auto_disabled_total',
      help: 'Endpoints this process disabled because their deliveries kept failing.',
      registers: [this.registry],
    });
    new Gauge({
      name: 'payhooks_deliveries',
      help: 'Unfinished deliveries by state (pending, failed_retrying), parked ones included. Finished states grow with history and are not counted here: see payhooks_delivery_attempts_total.',
      labelNames: ['state'],
      registers: [this.registry],
      async collect() {
        // Index-only over webhook_deliveries_unfinished_idx (migration 0006): the backlog, never the history.
        const rows = await database.query<{ state: string; n: string }>(
          `SELECT state, count(*) AS n FROM webhook_deliveries WHERE state IN ('pending', 'failed_retrying') GROUP BY state`,
          [],
        );
        this.reset();
        for (const s of UNFINISHED_STATES) this.set({ state: s }, 0);
        for (const r of rows) this.set({ state: r.state }, Number(r.n));
      },
    });
  }

  /** A lease taken over: its holder's attempt was logged as interrupted. */
  interrupted(): void {
    this.attempts.inc({ outcome: 'failed', error_kind: 'interrupted' });
  }

  /** One claim statement that leased `rows` deliveries. */
  claimed(rows: number): void {
    this.claims.inc();
    this.claimedRows.inc(rows);
  }

  observe(succeeded: boolean, errorKind: string | null, durationMs: number): void {
    const outcome = succeeded ? 'succeeded' : 'failed';
    // The labelled children, looked up once: prom-client hashes the label object on every call.
    const key = `${outcome}|${errorKind}`;
    let child = this.children.get(key);
    if (!child) {
      child = {
        attempts: this.attempts.labels({ outcome, error_kind: errorKind ?? 'none' }),
        duration: this.duration.labels({ outcome }),
      };
      this.children.set(key, child);
    }
    child.attempts.inc();
    child.duration.observe(durationMs / 1000);
  }

  private readonly children = new Map<string, { attempts: { inc(): void }; duration: { observe(v: number): void } }>();
}

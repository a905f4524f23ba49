import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Database } from '../db/client.ts';
import type { Clock } from '../clock.ts';

/**
 * Prometheus metrics of the delivery engine. Counters and the histogram are per process;
 * the gauges are read from the database at scrape time, so every process reports the same
 * global backlog and state counts.
 */
export class DeliveryMetrics {
  readonly registry = new Registry();
  readonly attempts: Counter<'outcome' | 'error_kind'>;
  readonly duration: Histogram<'outcome'>;

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
        const [r] = await database.query<{ n: string }>(`SELECT count(*) AS n FROM webhook_deliveries WHERE due_at <= $1 AND lease_token IS NULL`, [clock.now()]);
        this.set(Number(r?.n ?? 0));
      },
    });
    new Gauge({
      name: 'payhooks_delivery_oldest_due_age_seconds',
      help: 'Age of the oldest delivery that is due and unclaimed (0 when none).',
      registers: [this.registry],
      async collect() {
        const [r] = await database.query<{ oldest: Date | null }>(`SELECT min(due_at) AS oldest FROM webhook_deliveries WHERE due_at <= $1 AND lease_token IS NULL`, [clock.now()]);
        this.set(r?.oldest ? Math.max(0, (clock.now().getTime() - new Date(r.oldest).getTime()) / 1000) : 0);
      },
    });
    new Gauge({
      name: 'payhooks_deliveries',
      help: 'Deliveries by state.',
      labelNames: ['state'],
      registers: [this.registry],
      async collect() {
        const rows = await database.query<{ state: string; n: string }>(`SELECT state, count(*) AS n FROM webhook_deliveries GROUP BY state`, []);
        this.reset();
        for (const s of ['pending', 'delivered', 'failed_retrying', 'exhausted']) this.set({ state: s }, 0);
        for (const r of rows) this.set({ state: r.state }, Number(r.n));
      },
    });
  }

  observe(succeeded: boolean, errorKind: string | null, durationMs: number): void {
    const outcome = succeeded ? 'succeeded' : 'failed';
    this.attempts.inc({ outcome, error_kind: errorKind ?? 'none' });
    this.duration.observe({ outcome }, durationMs / 1000);
  }
}

import { Counter, Gauge, Registry } from 'prom-client';
import { runAlone, statement } from '../db/statement.ts';
import type { Database } from '../db/client.ts';
import type { Clock } from '../clock.ts';

const UNFINISHED_STATES = ['pending', 'failed_retrying'] as const;

const DUE_COUNT = statement<{ now: Date }, { n: number }>(
  'metrics_due',
  'SELECT count(*) AS n FROM delivery_queue WHERE due_at <= :now AND lease_token IS NULL',
);
const OLDEST_DUE = statement<{ now: Date }, { oldest: Date | null }>(
  'metrics_oldest_due',
  'SELECT min(due_at) AS oldest FROM delivery_queue WHERE due_at <= :now AND lease_token IS NULL',
);
const UNFINISHED = statement<Record<string, never>, { state: string; n: number }>(
  'metrics_unfinished',
  `SELECT state, count(*) AS n FROM webhook_deliveries WHERE state IN ('pending', 'failed_retrying') GROUP BY state`,
);

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
  readonly durations: AttemptDurations;
  readonly rotations: Counter;
  readonly autoDisabled: Counter;
  readonly claims: Counter;
  readonly claimedRows: Counter;

  constructor(deps: { database: Database; clock: Clock }) {
    const { database, clock } = deps;
    const tallies = this.tallies;
    this.attempts = new Counter({
      name: 'payhooks_delivery_attempts_total',
      help: 'Delivery attempts made by this process, by outcome (succeeded|failed) and error kind.',
      labelNames: ['outcome', 'error_kind'],
      registers: [this.registry],
      // The hot path counts in plain numbers (observe); prom-client is told at scrape time.
      collect() {
        for (const t of tallies.values()) {
          if (t.count > t.reported) this.inc(t.labels, t.count - t.reported);
          t.reported = t.count;
        }
      },
    });
    this.durations = new AttemptDurations(
      'payhooks_delivery_attempt_duration_seconds',
      'Time from sending a delivery to its answer status (or failure).',
      [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    );
    this.registry.registerMetric(this.durations as never);
    new Gauge({
      name: 'payhooks_delivery_backlog',
      help: 'Deliveries due now and not yet claimed by a worker.',
      registers: [this.registry],
      async collect() {
        const [r] = await runAlone(database, DUE_COUNT, { now: clock.now() });
        this.set(r?.n ?? 0);
      },
    });
    new Gauge({
      name: 'payhooks_delivery_oldest_due_age_seconds',
      help: 'Age of the oldest delivery that is due and unclaimed (0 when none).',
      registers: [this.registry],
      async collect() {
        const [r] = await runAlone(database, OLDEST_DUE, { now: clock.now() });
        this.set(r?.oldest ? Math.max(0, (clock.now().getTime() - r.oldest.getTime()) / 1000) : 0);
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
        // Index-only over the pending and failed_retrying ranges of webhook_deliveries_state_idx
        // (migration 0027; state leads it): the backlog, never the history.
        const rows = await runAlone(database, UNFINISHED, {});
        this.reset();
        for (const s of UNFINISHED_STATES) this.set({ state: s }, 0);
        for (const r of rows) this.set({ state: r.state }, r.n);
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

  /**
   * One attempt's outcome. Called once per attempt, so it costs two increments and a bucket
   * search: prom-client's labelled counter and histogram hash their labels on every call (about
   * 2 % of a busy worker's CPU in a profile), so attempts are tallied here and reported when
   * scraped, the counter through its `collect` and the histogram by AttemptDurations.
   */
  observe(succeeded: boolean, errorKind: string | null, durationMs: number): void {
    const tally = succeeded && errorKind === null ? this.ok : this.tallyOf(succeeded ? 'succeeded' : 'failed', errorKind ?? 'none');
    tally.count++;
    this.durations.observe(succeeded ? 0 : 1, durationMs / 1000);
  }

  /** Attempts by `outcome|error_kind`. */
  private readonly tallies = new Map<string, AttemptTally>();
  private readonly ok = this.tallyOf('succeeded', 'none');

  private tallyOf(outcome: string, errorKind: string): AttemptTally {
    const key = `${outcome}|${errorKind}`;
    let tally = this.tallies.get(key);
    if (!tally) {
      tally = { labels: { outcome, error_kind: errorKind }, count: 0, reported: 0 };
      this.tallies.set(key, tally);
    }
    return tally;
  }
}

interface AttemptTally {
  labels: { outcome: string; error_kind: string };
  count: number;
  /** What the prom-client counter has been told so far. */
  reported: number;
}

const OUTCOMES = ['succeeded', 'failed'] as const;

/**
 * The attempt-duration histogram by outcome, as a metric the prom-client registry scrapes like
 * its own (`get()` gives the same series a prom-client Histogram would: cumulative `le` buckets,
 * `+Inf`, `_sum`, `_count`, for each outcome seen). It exists because prom-client's `observe`
 * hashes the labels on every call; here an observation is a bucket search and three additions.
 */
export class AttemptDurations {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  /** Per outcome (0 succeeded, 1 failed): counts per bucket (not cumulative), the last for `+Inf`. */
  private readonly buckets: Float64Array[];
  private readonly sums = [0, 0];
  private readonly counts = [0, 0];

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
  ) {
    this.buckets = OUTCOMES.map(() => new Float64Array(bounds.length + 1));
  }

  observe(outcome: 0 | 1, seconds: number): void {
    const { bounds } = this;
    let i = 0;
    while (i < bounds.length && seconds > bounds[i]!) i++;
    this.buckets[outcome]![i]!++;
    this.sums[outcome]! += seconds;
    this.counts[outcome]!++;
  }

  async get() {
    const values: Array<{ labels: Record<string, string | number>; value: number; metricName: string }> = [];
    OUTCOMES.forEach((outcome, o) => {
      const count = this.counts[o]!;
      if (count === 0) return;
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += this.buckets[o]![i]!;
        values.push({ labels: { le, outcome }, value: cumulative, metricName: `${this.name}_bucket` });
      });
      values.push({ labels: { le: '+Inf', outcome }, value: count, metricName: `${this.name}_bucket` });
      values.push({ labels: { outcome }, value: this.sums[o]!, metricName: `${this.name}_sum` });
      values.push({ labels: { outcome }, value: count, metricName: `${this.name}_count` });
    });
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    for (const b of this.buckets) b.fill(0);
    this.sums.fill(0);
    this.counts.fill(0);
  }
}

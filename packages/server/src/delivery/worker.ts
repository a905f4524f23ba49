import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Clock } from '../clock.ts';
import type { Database } from '../db/client.ts';
import type { DeliveryState } from '../db/schema.ts';
import type { SecretBox } from '../security/encryption.ts';
import { WAKE_CHANNEL } from './wake-channel.ts';
import { cancelClaims, claimDue, releaseClaims, rescheduleClaims, type ClaimedDelivery } from './claim.ts';
import { recordOutcomes, type Outcome } from './record.ts';
import { AttemptStats } from './attempt-stats.ts';
import { afterAutomaticAttempt, beforeAutomaticAttempt } from './schedule.ts';
import type { AttemptResult, SendRequest } from './destinations/attempt.ts';
import type { Sender } from './sender.ts';
import { sendTraced } from './attempt-span.ts';
import { traced } from '../telemetry/tracing.ts';
import { fairnessLimits, type FairnessLimits } from './fairness.ts';
import { AttemptSlots, attemptHealth, type EndpointSlot, type Held } from './attempt-slots.ts';
import { PAUSE_CHANNEL, parsePauseNotice, pauseEndpoint } from './pause.ts';
import { PAUSING_STATUSES, retryAfterMs } from './retry-after.ts';
import { RATE_LATE_MS, reserveRate } from './rate-cap.ts';

import type { DeliveryMetrics } from './metrics.ts';
import { logAttempt } from './attempt-log.ts';
import { RequestBuilder } from './attempt-request.ts';
import { QUEUE_VACUUM_INTERVAL_MS, vacuumQueue } from './queue-vacuum.ts';
import { BatchWriter } from './batch-writer.ts';

/** When a rate-capped attempt may start (rate-cap.ts). */
interface CappedStart {
  /** Its reserved start (performance.now()), and the latest it may still start. */
  at: number;
  deadline: number;
  /** performance.now() when the reservation was asked for: the wait the log shows starts there. */
  waitFrom: number;
}

/** A claimed row and the claim's lease token, as the slots hold it. */
interface Claimed {
  row: ClaimedDelivery;
  token: string;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface WorkerDeps {
  config: Pick<
    Config,
    'dev' | 'retryScheduleMs' | 'endpointConcurrency' | 'workerConcurrency' | 'platformShare' | 'pollIntervalMs' | 'leaseMs'
  >;
  database: Database;
  clock: Clock;
  secrets: SecretBox;
  sender: Sender;
  logger: Logger;
  metrics?: DeliveryMetrics | undefined;
}

/** Most rows recorded in one statement. */
const RECORD_BATCH = 200;
/**
 * How long finished attempts may wait to be recorded together. Not on the path a merchant
 * waits for (the endpoint's slot frees when the answer is in; only the log line and the state
 * wait), so it is set by what the database pays: at 1,670 deliveries/s, 20 ms instead of 5
 * means a quarter of the record statements, which took PostgreSQL's CPU per delivery from
 * 0.22-0.30 to 0.20 ms and the worker's from 0.18-0.21 to 0.16-0.17 ms on the 2-core reference
 * machine, and with it the latency tail (bench/README.md, history).
 */
const RECORD_DELAY_MS = 20;
/**
 * How often a busy worker adds its counted attempts to the endpoints' stats (attempt-stats.ts):
 * one statement per flush, whatever the rate; what a crash can lose (the delivery log keeps
 * every attempt regardless).
 */
const STATS_FLUSH_MS = 5_000;

/**
 * A delivery worker: claims due deliveries in batches, sends them with a per-endpoint cap on
 * attempts in flight, and records outcomes in batches. Many workers (in one or many processes)
 * can share a database: claims use SKIP LOCKED and leases, so no two send the same attempt.
 *
 * `start()` runs the loop (woken by NOTIFY, polling as a fallback); `drain()` processes what
 * is due now and returns, for tests with an injected clock.
 */
export class DeliveryWorker {
  readonly id = `w_${randomBytes(6).toString('hex')}`;
  private claimSeq = 0;
  private running = false;
  private loopDone: Promise<void> = Promise.resolve();
  private wake: (() => void) | null = null;
  /** A wake-up arrived while the loop was busy claiming: claim again before sleeping. */
  private woken = false;
  private unlisten: (() => Promise<void>) | null = null;
  private unlistenPauses: (() => Promise<void>) | null = null;
  /** Consecutive failed claims (database unreachable), for logging once per outage. */
  private claimFailures = 0;
  /**
   * Which claimed rows run and which wait, per endpoint and Platform, with pauses and rate
   * reservations (attempt-slots.ts): every count of the worker's scheduling lives there.
   */
  private readonly slots: AttemptSlots<Claimed>;
  /**
   * The last claim may have left due rows behind (it was full, it skipped endpoints or
   * Platforms at their cap, or it could not run at the worker's cap): a finished attempt then
   * claims again. Otherwise a completion doesn't: at low rates that second claim would find
   * nothing, doubling the claims per delivery; new work announces itself by NOTIFY.
   */
  private moreMayBeDue = true;
  private readonly limits: FairnessLimits;
  /** Attempts whose HTTP part is running. */
  private readonly settled = new Set<Promise<void>>();
  /** Queued rows being handed back to the database (outcomes wait in `outcomes`). */
  private readonly recording = new Set<Promise<void>>();
  /** Finished attempts' outcomes, written in batches (batch-writer.ts). */
  private readonly outcomes: BatchWriter<Outcome>;
  /** Builds each attempt's request, keeping decrypted secrets and parsed headers (attempt-request.ts). */
  private readonly requests: RequestBuilder;
  /** queue-vacuum.ts: when this worker last started a VACUUM of the queue (performance.now()). */
  private lastVacuumAt = Number.NEGATIVE_INFINITY;
  private vacuuming = false;
  /** Recorded attempts counted for the endpoints' stats, flushed every STATS_FLUSH_MS (attempt-stats.ts). */
  private readonly stats = new AttemptStats();
  private lastStatsFlushAt = performance.now();
  private flushingStats: Promise<void> | null = null;

  /** Claims this worker has made (each one statement), for the benchmark and tests. */
  get claims(): number {
    return this.claimSeq;
  }

  constructor(private readonly deps: WorkerDeps) {
    this.limits = fairnessLimits(deps.config);
    this.slots = new AttemptSlots<Claimed>(
      { ...this.limits, workerConcurrency: deps.config.workerConcurrency },
      {
        start: (endpointId, c) => this.startAttempt(endpointId, c.row, c.token),
        reserve: (endpointId, slot, taken) => this.reserve(endpointId, slot, taken),
        handBack: (items, dueAtMs) => this.trackRecording(this.handBack(items, dueAtMs === null ? undefined : new Date(dueAtMs))),
      },
      () => deps.clock.now().getTime(),
      () => performance.now(),
    );
    this.requests = new RequestBuilder(deps.secrets);
    this.outcomes = new BatchWriter({ max: RECORD_BATCH, delayMs: RECORD_DELAY_MS, write: (batch) => this.writeOutcomes(batch) });
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    this.unlisten = await this.deps.database.listen(WAKE_CHANNEL, () => this.signal());
    this.unlistenPauses = await this.deps.database.listen(PAUSE_CHANNEL, (payload) => {
      const notice = parsePauseNotice(payload);
      if (notice) this.slots.pause(notice.endpointId, notice.untilMs);
    });
    this.loopDone = this.loop();
  }

  /** Stops claiming, lets in-flight attempts finish and be recorded, hands back the rest. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.signal();
    await this.loopDone;
    this.slots.releaseWaiting();
    await Promise.all([...this.settled]);
    await this.outcomes.flushAll();
    await Promise.all([...this.recording]);
    await this.flushStats();
    await this.unlisten?.().catch(() => {});
    await this.unlistenPauses?.().catch(() => {});
    this.unlisten = null;
    this.unlistenPauses = null;
  }

  /** Processes everything due at the clock's current time, then returns how many attempts it made. */
  async drain(): Promise<number> {
    let total = 0;
    for (;;) {
      const claimed = await this.claim();
      total += claimed;
      while (this.slots.inFlight + this.slots.waiting > 0) await Promise.all([...this.settled]);
      await this.outcomes.flushAll();
      await Promise.all([...this.recording]);
      if (claimed === 0) {
        await this.flushStats();
        return total;
      }
    }
  }

  private signal(): void {
    this.woken = true;
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  private async loop(): Promise<void> {
    while (this.running) {
      this.woken = false;
      let claimed = 0;
      let full = false;
      try {
        const free = this.slots.claimable();
        if (free > 0) {
          claimed = await this.claim(free);
          full = claimed === Math.min(free, 100);
        } else {
          this.moreMayBeDue = true;
        }
        if (this.claimFailures > 0) this.deps.logger.info({ failures: this.claimFailures }, 'claiming deliveries works again');
        this.claimFailures = 0;
      } catch (err) {
        this.moreMayBeDue = true;
        // One line per outage, not one per poll: the wake-up listener wakes us when it is over.
        if (this.claimFailures++ === 0)
          this.deps.logger.error({ err }, 'claiming deliveries failed; retrying every poll interval and on reconnect');
        else this.deps.logger.debug({ err, failures: this.claimFailures }, 'claiming deliveries failed again');
      }
      // Not while claims fail: the database is away, and the counts wait in memory meanwhile.
      if (this.claimFailures === 0) this.maybeFlushStats(claimed === 0 && this.slots.inFlight === 0 && this.slots.waiting === 0);
      if (full && this.running) continue; // more may be due right now
      await new Promise<void>((resolve) => {
        if (this.woken || !this.running) return resolve();
        const timer = setTimeout(resolve, this.deps.config.pollIntervalMs);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  /** One claim; starts (or queues behind their endpoint's cap) the claimed attempts. */
  private async claim(free = this.slots.claimable()): Promise<number> {
    if (free <= 0) return 0;
    const { endpointCap, platformCap } = this.limits;
    // Up to one cap of rows per endpoint waits locally behind the cap in flight, so a freed
    // slot starts its next attempt at once instead of after a claim round trip. More is
    // excluded, and so are Platforms holding their share (fairness.ts).
    const { endpoints: saturated, platforms: fullPlatforms } = this.slots.exclusions();
    const now = this.deps.clock.now();
    const token = `${this.id}:${++this.claimSeq}`;
    const rows = await traced(
      'claim',
      { root: true, attributes: { 'payhooks.worker.id': this.id } },
      () =>
        claimDue(this.deps.database, {
          now,
          leaseUntil: new Date(now.getTime() + this.deps.config.leaseMs),
          limit: Math.min(free, 100),
          perEndpoint: endpointCap,
          perPlatform: platformCap,
          excludeEndpoints: saturated,
          excludePlatforms: fullPlatforms,
          token,
        }),
      (claimed) => ({ 'payhooks.claim.rows': claimed.length }),
      (claimed) => claimed.length > 0,
    );
    this.deps.metrics?.claimed(rows.length);
    this.moreMayBeDue = mayHaveLeftRows(rows, {
      limit: Math.min(free, 100),
      endpointCap,
      excluded: saturated.length + fullPlatforms.length > 0,
    });
    const cancel: string[] = [];
    const rescheduled: { id: string; state: DeliveryState; nextAttemptAt: Date | null }[] = [];
    let disabled = 0;
    let paused = 0;
    for (const row of rows) {
      if (row.interrupted) this.deps.metrics?.interrupted();
      const step = row.endpoint_deleted
        ? null
        : beforeAutomaticAttempt({
            automaticAttempts: row.automatic_attempts,
            interruptedAt: row.interrupted_automatic_at,
            delaysMs: this.deps.config.retryScheduleMs,
            now,
          });
      if (row.endpoint_deleted) cancel.push(row.id);
      else if (step) rescheduled.push({ id: row.id, ...step });
      else if (row.endpoint_status !== 'enabled') {
        this.failWithoutRequest(row, token);
        disabled++;
      } else if (row.endpoint_paused_until !== null) {
        // Published (or retried) during a Retry-After pause: back to the queue, due when it ends.
        this.slots.pause(row.endpoint_id, row.endpoint_paused_until.getTime());
        this.giveBack(row, token, row.endpoint_paused_until);
        paused++;
      } else
        this.slots.admit(row.endpoint_id, row.platform_id, { row, token }, { rate: row.endpoint_rate, throttled: row.endpoint_throttled });
    }
    if (cancel.length) await cancelClaims(this.deps.database, { ids: cancel, token, now });
    if (rescheduled.length) await rescheduleClaims(this.deps.database, { steps: rescheduled, token, now });
    return rows.length - cancel.length - rescheduled.length - disabled - paused;
  }

  /**
   * An attempt that falls due while its endpoint is disabled stays on the schedule: it is recorded
   * as failed without a request (`endpoint_disabled`), counts toward the 8, and the 8th makes the
   * delivery `exhausted` (spec 3.2, 8). No attempt slot is taken: nothing is sent.
   */
  private failWithoutRequest(row: ClaimedDelivery, token: string): void {
    const result: AttemptResult = {
      succeeded: false,
      startedAt: this.deps.clock.now(),
      durationMs: 0,
      statusCode: null,
      responseBody: null,
      errorKind: 'endpoint_disabled',
      errorMessage: 'The endpoint is disabled: no request was sent. Enable it to resume its deliveries.',
    };
    this.deps.metrics?.observe(false, result.errorKind, 0);
    this.recordOutcome(row, token, result);
  }

  /**
   * Asks for start times for rate-capped rows across the fleet (rate-cap.ts) and starts each at
   * its time; the rows that got none go back, due when the cap has room.
   */
  private reserve(endpointId: string, slot: EndpointSlot<Claimed>, taken: Held<Claimed>[]): void {
    const n = taken.length;
    const t0 = performance.now();
    const p: Promise<void> = reserveRate(this.deps.database, endpointId, n)
      .then(
        (r) => {
          // The database's "now" fell between t0 and now: a start at received + wait is never
          // early, and t0 + wait + RATE_LATE_MS is never more than RATE_LATE_MS late.
          const received = performance.now();
          for (let i = 0; i < r.granted && i < n; i++)
            this.startAttempt(endpointId, taken[i]!.item.row, taken[i]!.item.token, {
              at: received + r.waitMs + i * r.spacingMs,
              deadline: t0 + r.waitMs + i * r.spacingMs + RATE_LATE_MS,
              waitFrom: t0,
            });
          // No room within the horizon: these, and what waits behind them, go back until there is.
          if (r.granted < n) this.slots.reservationShort(endpointId, slot, taken.slice(r.granted), r.nextFreeMs);
        },
        (err: unknown) => {
          this.deps.logger.warn({ err, endpoint: endpointId }, 'reserving rate-capped attempts failed; handing them back for a second');
          this.slots.reservationShort(endpointId, slot, taken, 1000);
        },
      )
      .finally(() => {
        this.settled.delete(p);
        this.slots.reservationSettled(endpointId, slot);
      });
    this.settled.add(p);
  }

  private trackRecording(p: Promise<void>): void {
    this.recording.add(p);
    void p.finally(() => this.recording.delete(p));
  }

  /** One claimed row back to the queue, due at `dueAt`, outside the slots (they never held it). */
  private giveBack(row: ClaimedDelivery, token: string, dueAt: Date): void {
    this.trackRecording(
      releaseClaims(this.deps.database, { ids: [row.id], token, dueAt }).catch((err) =>
        this.deps.logger.error({ err }, 'releasing claims failed; leases will expire'),
      ),
    );
  }

  /** Gives rows the slots let go back to the database as due at `dueAt` (now by default). */
  private async handBack(rows: Claimed[], dueAt?: Date): Promise<void> {
    // Due again now: the next completion looks for them (another worker may take them first).
    if (rows.length > 0 && dueAt === undefined) this.moreMayBeDue = true;
    const byToken = new Map<string, string[]>();
    for (const w of rows) byToken.set(w.token, [...(byToken.get(w.token) ?? []), w.row.id]);
    for (const [token, ids] of byToken) {
      await releaseClaims(this.deps.database, { ids, token, dueAt: dueAt ?? this.deps.clock.now() }).catch((err) =>
        this.deps.logger.error({ err }, 'releasing claims failed; leases will expire'),
      );
    }
  }

  /**
   * Sends one claimed delivery, queues its outcome for the batch write, then frees its slot. One
   * promise chain per attempt, the sender's and one `then`: this runs thousands of times a second.
   */
  private startAttempt(endpointId: string, row: ClaimedDelivery, token: string, capped?: CappedStart): void {
    let sent: Promise<AttemptResult | null>;
    if (capped) sent = this.sendCapped(endpointId, row, token, capped);
    else {
      try {
        const req = this.request(row);
        sent = req ? sendTraced(this.deps.sender, row, row.attempt_count + 1, req, true) : Promise.resolve(null);
      } catch (err) {
        sent = Promise.reject(err);
      }
    }
    const p: Promise<void> = sent.then(
      (result) => {
        if (result) {
          try {
            this.deps.metrics?.observe(result.succeeded, result.errorKind, result.durationMs);
            if (result.retryAfter !== undefined && result.statusCode !== null && PAUSING_STATUSES.has(result.statusCode))
              this.pauseFromAnswer(endpointId, result.retryAfter);
            this.recordOutcome(row, token, result);
          } catch (err) {
            this.unexpected(err, row);
            result = null;
          }
        }
        this.finished(p, endpointId, row, result);
      },
      (err: unknown) => {
        this.unexpected(err, row);
        this.finished(p, endpointId, row, null);
      },
    );
    this.settled.add(p);
  }

  /**
   * A rate-capped attempt: starts at its reserved time (a timer, not a poll), unless a pause
   * began meanwhile; its result says how long it waited since the reservation was asked for.
   */
  private async sendCapped(endpointId: string, row: ClaimedDelivery, token: string, capped: CappedStart): Promise<AttemptResult | null> {
    const { at, deadline, waitFrom } = capped;
    const wait = at - performance.now();
    if (wait > 0) await sleep(wait);
    // Too late for its reserved start (a slow answer, a busy event loop): given up rather than
    // bunched with the starts after it, so any second holds at most one more than the cap
    // (rate-cap.ts). The row goes back to the queue for a fresh start.
    if (performance.now() > deadline) {
      this.giveBack(row, token, new Date(this.deps.clock.now().getTime() + RATE_LATE_MS));
      return null;
    }
    const until = this.slots.pausedUntil(endpointId);
    if (until !== undefined) {
      this.giveBack(row, token, new Date(until));
      return null;
    }
    const req = this.request(row);
    if (!req) return null;
    const rateLimitedMs = Math.round(performance.now() - waitFrom);
    const result = await sendTraced(this.deps.sender, row, row.attempt_count + 1, req, true);
    result.rateLimitedMs = rateLimitedMs;
    return result;
  }

  /** A 429's or 503's Retry-After: paused here at once, then in the database for every worker. */
  private pauseFromAnswer(endpointId: string, retryAfter: string): void {
    const now = this.deps.clock.now().getTime();
    const ms = retryAfterMs(retryAfter, now);
    if (ms === null) return;
    this.slots.pause(endpointId, now + ms);
    this.trackRecording(
      pauseEndpoint(this.deps.database, endpointId, new Date(now + ms)).catch((err: unknown) =>
        this.deps.logger.warn({ err, endpoint: endpointId }, 'recording a Retry-After pause failed; this worker still honours it'),
      ),
    );
  }

  private unexpected(err: unknown, row: ClaimedDelivery): void {
    this.deps.logger.error({ err, delivery: row.id }, 'attempt failed unexpectedly; its lease will expire and it will be retried');
  }

  /** An attempt's slot is free again: the slots start what waits for it. */
  private finished(p: Promise<void>, endpointId: string, row: ClaimedDelivery, result: AttemptResult | null): void {
    this.settled.delete(p);
    this.slots.finish(endpointId, row.platform_id, result && attemptHealth(result));
    if (this.moreMayBeDue) this.signal();
  }

  /** The request for a claimed delivery, its secrets decrypted; null (logged) when they can't be. */
  private request(row: ClaimedDelivery): SendRequest | null {
    try {
      return this.requests.build(row);
    } catch (err) {
      // A wrong PAYHOOKS_ENCRYPTION_KEY: sending unsigned would be worse than waiting for the
      // lease to expire and the operator to fix the key.
      this.deps.logger.error(
        { err, endpoint: row.endpoint_id },
        'cannot decrypt the endpoint signing secret; check PAYHOOKS_ENCRYPTION_KEY',
      );
      return null;
    }
  }

  /** The schedule's next step for an automatic attempt, logged and queued for the batch write. */
  private recordOutcome(row: ClaimedDelivery, token: string, result: AttemptResult): void {
    const { logger, config, clock } = this.deps;
    const next = afterAutomaticAttempt({
      succeeded: result.succeeded,
      automaticAttemptsBefore: row.automatic_attempts,
      delaysMs: config.retryScheduleMs,
      now: clock.now(),
    });
    // A retry falling inside a Retry-After pause waits for its end: never earlier than the schedule.
    if (next.nextAttemptAt !== null) {
      const until = this.slots.pausedUntil(row.endpoint_id);
      if (until !== undefined && until > next.nextAttemptAt.getTime()) next.nextAttemptAt = new Date(until);
    }
    // The endpoint's slot frees as soon as the answer is in; the row stays leased until the
    // batch write lands, so no other worker can take it meanwhile. The line's fields are only
    // gathered when it is written (in production it usually isn't).
    const level = config.dev ? 'info' : 'debug';
    if (logger.isLevelEnabled(level))
      logAttempt(logger, level, {
        eventType: row.event_type,
        eventId: row.event_id,
        deliveryId: row.id,
        endpointId: row.endpoint_id,
        url: row.url,
        attempt: row.attempt_count + 1,
        result,
        nextAttemptAt: next.nextAttemptAt,
      });
    this.outcomes.add({
      deliveryId: row.id,
      endpointId: row.endpoint_id,
      token,
      trigger: 'automatic',
      state: next.state,
      nextAttemptAt: next.nextAttemptAt,
      result,
    });
  }

  /**
   * After a batch is recorded: vacuums the queue if the last vacuum was long enough ago (see
   * queue-vacuum.ts). Never awaited by the hot path; an idle worker records nothing, so it never
   * vacuums. Wall time, not the injected clock: this paces database maintenance.
   */
  private maybeVacuumQueue(): void {
    const now = performance.now();
    if (this.vacuuming || now - this.lastVacuumAt < QUEUE_VACUUM_INTERVAL_MS) return;
    this.lastVacuumAt = now;
    this.vacuuming = true;
    vacuumQueue(this.deps.database)
      .catch((err: unknown) =>
        this.deps.logger.warn({ err }, 'vacuuming the delivery queue failed; retrying after the next recorded batch'),
      )
      .finally(() => {
        this.vacuuming = false;
      });
  }

  /**
   * Adds the counted attempts to the endpoints' stats once STATS_FLUSH_MS have passed since the
   * last flush (after a recorded batch, and at each turn of the claim loop), or at once when the
   * loop finds the worker idle: a claim that took nothing with nothing in flight. So a quiet
   * worker's counts (a merchant's test event) reach the charts within a poll interval, and a busy
   * one writes one statement per interval. Never awaited by the hot path.
   */
  private maybeFlushStats(idle: boolean): void {
    if (this.flushingStats || this.stats.waiting === 0) return;
    if (!idle && performance.now() - this.lastStatsFlushAt < STATS_FLUSH_MS) return;
    void this.flushStats();
  }

  /** Writes every counted attempt now (draining, stopping); a failure keeps them for the next flush. */
  private async flushStats(): Promise<void> {
    while (this.flushingStats) await this.flushingStats;
    if (this.stats.waiting === 0) return;
    this.lastStatsFlushAt = performance.now();
    this.flushingStats = this.stats
      .flush(this.deps.database)
      .catch((err: unknown) => this.deps.logger.warn({ err }, "writing endpoints' stats failed; the counts are kept for the next flush"))
      .finally(() => {
        this.flushingStats = null;
      });
    await this.flushingStats;
  }

  /** One batch of outcomes, retried until the database takes it (or the worker is stopping). */
  private async writeOutcomes(batch: Outcome[]): Promise<void> {
    for (let failures = 0; ; failures++) {
      try {
        const written = await traced(
          'record',
          { root: true, attributes: { 'payhooks.record.outcomes': batch.length } },
          () => recordOutcomes(this.deps.database, batch, this.deps.clock.now(), this.stats),
          (w) => ({ 'payhooks.record.written': w.length }),
        );
        this.maybeVacuumQueue();
        this.maybeFlushStats(false);
        if (written.length < batch.length) {
          const ok = new Set(written.map((w) => w.delivery_id));
          const lost = batch.filter((o) => !ok.has(o.deliveryId)).map((o) => o.deliveryId);
          this.deps.logger.warn({ lost }, 'lease expired before the outcome was recorded; another worker retries these');
        }
        return;
      } catch (err) {
        if (!this.running && this.outcomes.waiting === 0 && this.settled.size === 0) {
          this.deps.logger.error({ err }, 'recording outcomes failed during shutdown; leases will expire and the work be redone');
          return;
        }
        if (failures === 0)
          this.deps.logger.error({ err, outcomes: batch.length }, 'recording outcomes failed; retrying until the database answers');
        else this.deps.logger.debug({ err, failures }, 'recording outcomes failed again');
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }
}

/**
 * Whether a claim may have left due rows in the database that this worker could take once a
 * slot frees: it took its limit; or some endpoint got a full cap's worth (one while throttled)
 * or the claim took at least one endpoint cap of rows (each Platform's candidate window is at
 * least that wide, so a smaller answer means the due rows ran out); or endpoints or Platforms
 * at their cap were left out of it. Erring towards "yes" costs one empty claim; erring towards
 * "no" would leave work until the next NOTIFY or poll.
 */
export function mayHaveLeftRows(
  rows: readonly Pick<ClaimedDelivery, 'endpoint_id' | 'endpoint_throttled'>[],
  options: { limit: number; endpointCap: number; excluded: boolean },
): boolean {
  if (options.excluded || rows.length >= options.limit || rows.length >= options.endpointCap) return true;
  return rows.some((r) => r.endpoint_throttled);
}

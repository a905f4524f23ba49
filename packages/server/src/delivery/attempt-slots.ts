import type { AttemptResult } from './destinations/attempt.ts';
import { endpointCapOf, THROTTLE_AFTER_TIMEOUTS, type FairnessLimits } from './fairness.ts';

/** A claimed row held by a worker (waiting for its endpoint's slot, or running), with its Platform. */
export interface Held<T> {
  item: T;
  platformId: string;
}

/** An endpoint's slots in one worker. Opaque outside this file except as a reservation's handle. */
export interface EndpointSlot<T> {
  running: number;
  waiting: Held<T>[];
  /** Attempts it may have running here: the endpoint cap, one while throttled. */
  cap: number;
  /** Timeouts seen here since its last answer (the worker's own view of the breaker). */
  timeouts: number;
  /** max_requests_per_second as of the last claim (rate-cap.ts); null: uncapped. */
  rate: number | null;
  /** A rate reservation for this endpoint is in flight: the next waits for it. */
  reserving: boolean;
}

/** What the slots ask the worker to do; each call is synchronous, the work behind it may not be. */
export interface SlotEffects<T> {
  /** Start this attempt now. */
  start(endpointId: string, item: T): void;
  /**
   * Reserve rate-capped starts for `taken` (already counted as running); the worker starts the
   * granted ones, calls `reservationShort` with the others if any, then `reservationSettled`.
   */
  reserve(endpointId: string, slot: EndpointSlot<T>, taken: Held<T>[]): void;
  /** Give these rows back to the queue, due at `dueAtMs` (the clock's ms) or now when null. */
  handBack(items: T[], dueAtMs: number | null): void;
}

export interface SlotLimits extends FairnessLimits {
  /** PAYHOOKS_WORKER_CONCURRENCY: attempts running at once in the worker. */
  workerConcurrency: number;
}

/** What an attempt's result says about its endpoint's health, for the breaker. */
export type AttemptHealth = 'answered' | 'timeout' | 'other';

/** An answer is an HTTP status, or a broker's confirmation or refusal (record.ts counts the same). */
export function attemptHealth(result: Pick<AttemptResult, 'statusCode' | 'succeeded' | 'errorKind'>): AttemptHealth {
  if (result.statusCode !== null || result.succeeded || result.errorKind === 'broker') return 'answered';
  return result.errorKind === 'timeout' ? 'timeout' : 'other';
}

/**
 * A worker's scheduling state, synchronous and free of I/O: which claimed rows run, which wait
 * for their endpoint's slot, per-endpoint caps (one while throttled), per-Platform shares,
 * Retry-After pauses, rate-cap reservations in flight, and the worker-wide cap. The worker
 * (worker.ts) claims, sends and records; every count it used to adjust by hand is kept here.
 *
 * Invariants, checked after every step by test/unit/attempt-slots.test.ts on random sequences:
 * - `inFlight` is the sum of the slots' `running`, `waiting` the sum of their queues, and each
 *   Platform's count the running and waiting rows of that Platform; nothing is counted twice;
 * - a start never takes `inFlight` past the worker's cap nor an endpoint's `running` past its
 *   cap (a lowered cap may leave more running until they finish; none starts meanwhile);
 * - every row admitted is, at any time, exactly one of: waiting, running (started or in a
 *   reservation), handed back, or finished: no row is lost or started twice;
 * - a paused endpoint starts nothing until its pause ends; its queued rows go back, due then.
 */
export class AttemptSlots<T> {
  private readonly perEndpoint = new Map<string, EndpointSlot<T>>();
  private readonly perPlatform = new Map<string, number>();
  /** Endpoints paused by a Retry-After (pause.ts), until when (the clock's ms). Usually empty. */
  private readonly paused = new Map<string, number>();
  /**
   * Capped endpoints whose cap had no room in the last reservation, until when it has (the
   * monotonic clock's ms): left out of claims meanwhile, so their backlog stays in the database.
   */
  private readonly capFull = new Map<string, number>();
  private running = 0;
  private queued = 0;
  /** Some endpoint has queued rows and a free slot, but the worker-wide cap is reached. */
  private heldBack = false;

  constructor(
    private readonly limits: SlotLimits,
    private readonly effects: SlotEffects<T>,
    /** The injected clock (ms): pauses end by it. */
    private readonly now: () => number,
    /** A monotonic clock (ms): rate reservations are timed by it. */
    private readonly monotonic: () => number,
  ) {}

  /** Attempts running (or in a rate reservation): what the worker-wide cap bounds. */
  get inFlight(): number {
    return this.running;
  }

  /** Claimed rows waiting for their endpoint's slot (leased, not running). */
  get waiting(): number {
    return this.queued;
  }

  /**
   * Rows the next claim may take: free attempt slots (rows waiting here don't occupy one), as
   * long as the local queue holds less than a worker's worth of leased rows.
   */
  claimable(): number {
    const { workerConcurrency } = this.limits;
    return Math.min(workerConcurrency - this.running, workerConcurrency - this.queued);
  }

  /**
   * What the next claim leaves out: endpoints with a cap's worth running and another waiting,
   * paused ones and ones whose rate cap is full; Platforms holding their share (fairness.ts).
   * Loops, not spread-filter-map: this runs per claim over every endpoint held.
   */
  exclusions(): { endpoints: string[]; platforms: string[] } {
    const endpoints: string[] = [];
    for (const [id, s] of this.perEndpoint) if (s.running + s.waiting.length >= 2 * s.cap) endpoints.push(id);
    const platforms: string[] = [];
    for (const [id, held] of this.perPlatform) if (held >= this.limits.platformCap) platforms.push(id);
    if (this.paused.size > 0) excludeHeld(endpoints, this.paused, this.now());
    if (this.capFull.size > 0) excludeHeld(endpoints, this.capFull, this.monotonic());
    return { endpoints, platforms };
  }

  /** While a Retry-After pause of the endpoint runs, when it ends (the clock's ms); else undefined. */
  pausedUntil(endpointId: string): number | undefined {
    if (this.paused.size === 0) return undefined;
    const until = this.paused.get(endpointId);
    return until !== undefined && until > this.now() ? until : undefined;
  }

  /** Rows this worker holds (waiting or running) for the Platform. */
  heldFor(platformId: string): number {
    return this.perPlatform.get(platformId) ?? 0;
  }

  /**
   * A claimed row: queued behind its endpoint's slot, started when one is free. `throttled` is
   * the database's view of the breaker as of the claim (other workers' attempts count too).
   */
  admit(endpointId: string, platformId: string, item: T, endpoint: { rate: number | null; throttled: boolean }): void {
    let slot = this.perEndpoint.get(endpointId);
    if (!slot) {
      slot = { running: 0, waiting: [], cap: this.limits.endpointCap, timeouts: 0, rate: endpoint.rate, reserving: false };
      this.perEndpoint.set(endpointId, slot);
    } else slot.rate = endpoint.rate;
    if (endpoint.throttled) this.setCap(slot, endpointCapOf(this.limits, true));
    else if (slot.timeouts < THROTTLE_AFTER_TIMEOUTS) slot.cap = endpointCapOf(this.limits, false);
    this.perPlatform.set(platformId, this.heldFor(platformId) + 1);
    this.queued++;
    slot.waiting.push({ item, platformId });
    this.pump(endpointId);
  }

  /**
   * An attempt ended (its answer in, or it never got one): its slot is free again. Starts what
   * waits for it, and what the worker-wide cap held back elsewhere.
   */
  finish(endpointId: string, platformId: string, health: AttemptHealth | null): void {
    const slot = this.perEndpoint.get(endpointId);
    this.running--;
    this.release(platformId);
    if (!slot) return;
    slot.running--;
    if (health !== null) this.observeHealth(slot, health);
    if (slot.running === 0 && slot.waiting.length === 0 && !slot.reserving) this.perEndpoint.delete(endpointId);
    else this.pump(endpointId);
    this.startHeldBack(slot);
  }

  /**
   * A rate reservation answered short (or failed): `rest`, the rows of `taken` that got no
   * start, go back with everything queued behind them, due when the cap has room (`nextFreeMs`
   * from now), and the endpoint is left out of claims until then.
   */
  reservationShort(endpointId: string, slot: EndpointSlot<T>, rest: Held<T>[], nextFreeMs: number): void {
    this.capFull.set(endpointId, this.monotonic() + nextFreeMs);
    slot.running -= rest.length;
    this.running -= rest.length;
    this.queued += rest.length;
    this.handBack([...rest, ...slot.waiting.splice(0)], this.now() + nextFreeMs);
    // The rows that got no start gave their worker slots back: what the worker-wide cap held
    // back elsewhere may start on them (with nothing else running, nothing else would start it).
    this.startHeldBack(slot);
  }

  /** The endpoint's reservation is over (answered or failed): the next may start. */
  reservationSettled(endpointId: string, slot: EndpointSlot<T>): void {
    slot.reserving = false;
    if (this.perEndpoint.get(endpointId) !== slot) return;
    if (slot.running === 0 && slot.waiting.length === 0) this.perEndpoint.delete(endpointId);
    else this.pump(endpointId);
  }

  /**
   * A Retry-After pause, from this worker's answer, another worker's notice, or a claim: rows
   * held here for the endpoint go back to the queue, due when it ends. A shorter pause never
   * shortens a longer one.
   */
  pause(endpointId: string, untilMs: number): void {
    if (untilMs <= this.now()) return;
    if ((this.paused.get(endpointId) ?? 0) < untilMs) this.paused.set(endpointId, untilMs);
    const slot = this.perEndpoint.get(endpointId);
    if (slot) this.holdIfPaused(endpointId, slot);
  }

  /** Every row waiting here, handed back as due now (a worker that stops). */
  releaseWaiting(): void {
    const rows: Held<T>[] = [];
    for (const [id, slot] of this.perEndpoint) {
      rows.push(...slot.waiting.splice(0));
      if (slot.running === 0 && !slot.reserving) this.perEndpoint.delete(id);
    }
    if (rows.length > 0) this.handBack(rows, null);
  }

  /**
   * Rows held back by the worker-wide cap (not their endpoint's) may start now that slots freed.
   * Only looked for when some were: this runs on every completion.
   */
  private startHeldBack(freed: EndpointSlot<T>): void {
    if (!this.heldBack) return;
    this.heldBack = false;
    for (const [id, other] of this.perEndpoint) if (other !== freed && other.waiting.length > 0 && other.running < other.cap) this.pump(id);
  }

  private pump(endpointId: string): void {
    const slot = this.perEndpoint.get(endpointId);
    if (!slot) return;
    if (this.paused.size > 0 && this.holdIfPaused(endpointId, slot)) return;
    if (slot.rate !== null) {
      this.pumpCapped(endpointId, slot);
      return;
    }
    const { workerConcurrency } = this.limits;
    while (slot.running < slot.cap && slot.waiting.length > 0 && this.running < workerConcurrency) {
      const next = slot.waiting.shift()!;
      slot.running++;
      this.queued--;
      this.running++;
      this.effects.start(endpointId, next.item);
    }
    if (slot.waiting.length > 0 && slot.running < slot.cap) this.heldBack = true;
  }

  /**
   * An endpoint with a rate cap: takes the rows that may start under its concurrency cap and
   * asks for start times for them across the fleet (rate-cap.ts). One reservation at a time.
   */
  private pumpCapped(endpointId: string, slot: EndpointSlot<T>): void {
    if (slot.reserving) return;
    const n = Math.min(slot.cap - slot.running, slot.waiting.length, this.limits.workerConcurrency - this.running);
    if (n <= 0) {
      if (slot.waiting.length > 0 && slot.running < slot.cap) this.heldBack = true;
      return;
    }
    const taken = slot.waiting.splice(0, n);
    slot.running += n;
    this.queued -= n;
    this.running += n;
    slot.reserving = true;
    this.effects.reserve(endpointId, slot, taken);
  }

  /** During a pause, hands back the endpoint's queued rows, due when it ends; false when not paused. */
  private holdIfPaused(endpointId: string, slot: EndpointSlot<T>): boolean {
    const until = this.paused.get(endpointId);
    if (until === undefined) return false;
    if (until <= this.now()) {
      this.paused.delete(endpointId);
      return false;
    }
    if (slot.waiting.length > 0) this.handBack(slot.waiting.splice(0), until);
    if (slot.running === 0 && !slot.reserving) this.perEndpoint.delete(endpointId);
    return true;
  }

  /** This worker's own view of the breaker, so it reacts before the next claim tells it. */
  private observeHealth(slot: EndpointSlot<T>, health: AttemptHealth): void {
    if (health === 'answered') {
      slot.timeouts = 0;
      slot.cap = endpointCapOf(this.limits, false);
    } else if (health === 'timeout' && ++slot.timeouts >= THROTTLE_AFTER_TIMEOUTS) {
      this.setCap(slot, endpointCapOf(this.limits, true));
    }
  }

  /**
   * Lowers an endpoint's cap. Rows queued for it beyond the new cap would now wait several
   * attempt deadlines, past their lease (then another worker sends them too, and our outcome is
   * dropped), so they are handed back as due now.
   */
  private setCap(slot: EndpointSlot<T>, cap: number): void {
    slot.cap = cap;
    const excess = slot.waiting.splice(cap);
    if (excess.length > 0) this.handBack(excess, null);
  }

  /** Rows leave the slots for the queue: no longer waiting, no longer their Platform's. */
  private handBack(rows: Held<T>[], dueAtMs: number | null): void {
    for (const r of rows) {
      this.queued--;
      this.release(r.platformId);
    }
    this.effects.handBack(
      rows.map((r) => r.item),
      dueAtMs,
    );
  }

  private release(platformId: string): void {
    const held = this.heldFor(platformId) - 1;
    if (held > 0) this.perPlatform.set(platformId, held);
    else this.perPlatform.delete(platformId);
  }

  /** For the tests' invariant checks: each endpoint's counts and the Platforms' (copies). */
  snapshot(): {
    inFlight: number;
    waiting: number;
    endpoints: Map<string, { running: number; waiting: number; cap: number; reserving: boolean }>;
    platforms: Map<string, number>;
    waitingPlatforms: string[];
  } {
    const endpoints = new Map<string, { running: number; waiting: number; cap: number; reserving: boolean }>();
    const waitingPlatforms: string[] = [];
    for (const [id, s] of this.perEndpoint) {
      endpoints.set(id, { running: s.running, waiting: s.waiting.length, cap: s.cap, reserving: s.reserving });
      for (const w of s.waiting) waitingPlatforms.push(w.platformId);
    }
    return { inFlight: this.running, waiting: this.queued, endpoints, platforms: new Map(this.perPlatform), waitingPlatforms };
  }
}

/** Adds to `into` the keys of `held` whose time is still ahead of `now`; forgets the others. */
function excludeHeld(into: string[], held: Map<string, number>, now: number): void {
  for (const [id, until] of held) {
    if (until > now) into.push(id);
    else held.delete(id);
  }
}

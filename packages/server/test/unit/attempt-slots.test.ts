import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AttemptSlots, attemptHealth, type AttemptHealth, type EndpointSlot, type Held } from '../../src/delivery/attempt-slots.ts';
import { fairnessLimits } from '../../src/delivery/fairness.ts';

/**
 * The worker's scheduling state (delivery/attempt-slots.ts), on a manual clock, with effects that
 * record what the worker would do. Random sequences of claims, finishes, rate reservations,
 * pauses and time check the invariants after every step; the examples below pin each rule.
 */

interface Item {
  id: number;
  endpointId: string;
  platformId: string;
}

interface Reservation {
  endpointId: string;
  slot: EndpointSlot<Item>;
  taken: Held<Item>[];
}

/** Slots with recording effects and a manual clock. */
function harness(config: { workerConcurrency: number; endpointConcurrency: number; platformShare: number }) {
  const limits = { ...fairnessLimits(config), workerConcurrency: config.workerConcurrency };
  const clock = { now: 1_000_000, monotonic: 5_000 };
  const started: Item[] = [];
  const reservations: Reservation[] = [];
  const handedBack: Array<{ item: Item; dueAtMs: number | null }> = [];
  const checks: string[] = [];
  const slots: AttemptSlots<Item> = new AttemptSlots<Item>(
    limits,
    {
      start: (endpointId, item) => {
        if (endpointId !== item.endpointId) checks.push(`started ${item.id} under ${endpointId}`);
        const e = slots.snapshot().endpoints.get(endpointId);
        if (!e || e.running > e.cap) checks.push(`start of ${item.id} past the endpoint cap`);
        if (slots.pausedUntil(endpointId) !== undefined) checks.push(`start of ${item.id} while paused`);
        started.push(item);
      },
      reserve: (endpointId, slot, taken) => {
        if (slots.pausedUntil(endpointId) !== undefined) checks.push(`reservation for ${endpointId} while paused`);
        if (reservations.some((r) => r.endpointId === endpointId)) checks.push(`two reservations at once for ${endpointId}`);
        reservations.push({ endpointId, slot, taken });
      },
      handBack: (items, dueAtMs) => {
        for (const item of items) handedBack.push({ item, dueAtMs });
      },
    },
    () => clock.now,
    () => clock.monotonic,
  );
  return { slots, limits, clock, started, reservations, handedBack, checks };
}

type Op =
  | { kind: 'admit'; endpoint: number; throttled: boolean }
  | { kind: 'finish'; pick: number; health: AttemptHealth | null }
  | { kind: 'answer'; pick: number; granted: number; nextFreeMs: number }
  | { kind: 'pause'; endpoint: number; ms: number }
  | { kind: 'advance'; ms: number }
  | { kind: 'releaseWaiting' };

const ENDPOINTS = [
  { id: 'we_a', platformId: 'plt_1', rate: null },
  { id: 'we_b', platformId: 'plt_1', rate: null },
  { id: 'we_c', platformId: 'plt_2', rate: 5 },
  { id: 'we_d', platformId: 'plt_3', rate: null },
] as const;

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('admit' as const), endpoint: fc.nat(3), throttled: fc.boolean() }) },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('finish' as const),
      pick: fc.nat(),
      health: fc.constantFrom<AttemptHealth | null>('answered', 'timeout', 'other', null),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('answer' as const),
      pick: fc.nat(),
      granted: fc.nat(4),
      nextFreeMs: fc.integer({ min: 1, max: 3000 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('pause' as const), endpoint: fc.nat(3), ms: fc.integer({ min: -100, max: 5000 }) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 4000 }) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'releaseWaiting' as const }) },
);

const configArb = fc.record({
  workerConcurrency: fc.integer({ min: 1, max: 8 }),
  endpointConcurrency: fc.integer({ min: 1, max: 4 }),
  platformShare: fc.constantFrom(0.25, 0.5, 1),
});

describe('AttemptSlots: random sequences keep every invariant', () => {
  it('counts match the rows held, no limit is passed, no row is lost or started twice, and a full drain gives every slot back', () => {
    fc.assert(
      fc.property(configArb, fc.array(opArb, { maxLength: 120 }), (config, ops) => {
        const h = harness(config);
        const { slots, clock, started, reservations, handedBack, checks } = h;
        let nextId = 0;
        const admitted: Item[] = [];
        const finished = new Set<number>();
        /** Started and not finished: granted reservations start, abandoned ones finish at once. */
        const running = () => started.filter((i) => !finished.has(i.id));
        const reserved = () => reservations.flatMap((r) => r.taken.map((t) => t.item));
        /** Paused until (the model's own account: the longest pause asked for). */
        const pausedUntil = new Map<string, number>();

        const check = (after: string) => {
          const snap = slots.snapshot();
          const run = running();
          const res = reserved();
          const back = new Set(handedBack.map((b) => b.item.id));
          expect(checks, after).toEqual([]);
          // Nothing started twice, nothing both started and handed back, nothing handed back twice.
          expect(new Set(started.map((i) => i.id)).size, after).toBe(started.length);
          expect(back.size, after).toBe(handedBack.length);
          for (const i of started) expect(back.has(i.id), `${after}: ${i.id} started and handed back`).toBe(false);
          // Every admitted row is exactly one of: waiting, running, in a reservation, handed back, finished.
          const waitingModel = admitted.length - run.length - res.length - back.size - finished.size;
          expect(snap.waiting, after).toBe(waitingModel);
          expect(snap.inFlight, after).toBe(run.length + res.length);
          expect(snap.inFlight, after).toBeLessThanOrEqual(h.limits.workerConcurrency);
          let sumRunning = 0;
          let sumWaiting = 0;
          for (const e of snap.endpoints.values()) {
            sumRunning += e.running;
            sumWaiting += e.waiting;
            expect(e.running, after).toBeGreaterThanOrEqual(0);
          }
          expect(sumRunning, after).toBe(snap.inFlight);
          expect(sumWaiting, after).toBe(snap.waiting);
          // Each Platform's count is its running, reserved and waiting rows; no zero entries.
          for (const [p, n] of snap.platforms) {
            const expected =
              run.filter((i) => i.platformId === p).length +
              res.filter((i) => i.platformId === p).length +
              snap.waitingPlatforms.filter((w) => w === p).length;
            expect(n, `${after}: ${p}`).toBe(expected);
            expect(n, after).toBeGreaterThan(0);
          }
          const held = run.length + res.length + snap.waiting;
          expect(
            [...snap.platforms.values()].reduce((a, b) => a + b, 0),
            after,
          ).toBe(held);
          // A paused endpoint holds no waiting rows.
          for (const [e, until] of pausedUntil) if (until > clock.now) expect(snap.endpoints.get(e)?.waiting ?? 0, after).toBe(0);
          expect(slots.claimable(), after).toBe(
            Math.min(h.limits.workerConcurrency - snap.inFlight, h.limits.workerConcurrency - snap.waiting),
          );
        };

        for (const [n, op] of ops.entries()) {
          const after = `step ${n} ${JSON.stringify(op)}`;
          switch (op.kind) {
            case 'admit': {
              const e = ENDPOINTS[op.endpoint]!;
              const item = { id: nextId++, endpointId: e.id, platformId: e.platformId };
              admitted.push(item);
              slots.admit(e.id, e.platformId, item, { rate: e.rate, throttled: op.throttled });
              break;
            }
            case 'finish': {
              const run = running();
              if (run.length === 0) break;
              const item = run[op.pick % run.length]!;
              finished.add(item.id);
              slots.finish(item.endpointId, item.platformId, op.health);
              break;
            }
            case 'answer': {
              if (reservations.length === 0) break;
              const r = reservations.splice(op.pick % reservations.length, 1)[0]!;
              const granted = Math.min(op.granted, r.taken.length);
              for (const t of r.taken.slice(0, granted)) started.push(t.item);
              if (granted < r.taken.length) slots.reservationShort(r.endpointId, r.slot, r.taken.slice(granted), op.nextFreeMs);
              slots.reservationSettled(r.endpointId, r.slot);
              break;
            }
            case 'pause': {
              const e = ENDPOINTS[op.endpoint]!;
              const until = clock.now + op.ms;
              if (op.ms > 0) pausedUntil.set(e.id, Math.max(pausedUntil.get(e.id) ?? 0, until));
              const backBefore = handedBack.length;
              slots.pause(e.id, until);
              // What went back goes back due when the longest pause ends.
              for (const b of handedBack.slice(backBefore)) expect(b.dueAtMs, after).toBe(pausedUntil.get(e.id));
              break;
            }
            case 'advance':
              clock.now += op.ms;
              clock.monotonic += op.ms;
              break;
            case 'releaseWaiting':
              slots.releaseWaiting();
              expect(slots.waiting, after).toBe(0);
              break;
          }
          check(after);
        }

        // Drain: pauses over, every reservation granted, every attempt finished with an answer.
        clock.now += 10_000;
        clock.monotonic += 10_000;
        for (let guard = 0; running().length + reservations.length > 0; guard++) {
          expect(guard).toBeLessThan(10_000);
          const r = reservations.shift();
          if (r) {
            for (const t of r.taken) started.push(t.item);
            slots.reservationSettled(r.endpointId, r.slot);
          }
          const [item] = running();
          if (item) {
            finished.add(item.id);
            slots.finish(item.endpointId, item.platformId, 'answered');
          }
          check(`drain ${guard}`);
        }
        // No slot lost: nothing waits, nothing is held, the whole worker is free again.
        const snap = slots.snapshot();
        expect(snap.waiting).toBe(0);
        expect(snap.inFlight).toBe(0);
        expect(snap.platforms.size).toBe(0);
        expect(snap.endpoints.size).toBe(0);
        expect(slots.claimable()).toBe(h.limits.workerConcurrency);
      }),
      { numRuns: Number(process.env.SLOTS_RUNS ?? 400) },
    );
  });
});

describe('AttemptSlots: the rules, one example each', () => {
  const config = { workerConcurrency: 4, endpointConcurrency: 2, platformShare: 1 };
  const item = (id: number, endpointId = 'we_a', platformId = 'plt_1'): Item => ({ id, endpointId, platformId });
  const admit = (h: ReturnType<typeof harness>, i: Item, endpoint: { rate?: number | null; throttled?: boolean } = {}) =>
    h.slots.admit(i.endpointId, i.platformId, i, { rate: endpoint.rate ?? null, throttled: endpoint.throttled ?? false });

  it('an endpoint runs at most its cap; the next starts when one finishes', () => {
    const h = harness(config);
    for (let i = 0; i < 3; i++) admit(h, item(i));
    expect(h.started.map((i) => i.id)).toEqual([0, 1]);
    expect(h.slots.waiting).toBe(1);
    h.slots.finish('we_a', 'plt_1', 'answered');
    expect(h.started.map((i) => i.id)).toEqual([0, 1, 2]);
    expect(h.slots.waiting).toBe(0);
  });

  it('the worker-wide cap holds rows back; a finish elsewhere starts them', () => {
    const h = harness({ workerConcurrency: 2, endpointConcurrency: 2, platformShare: 1 });
    admit(h, item(0, 'we_a'));
    admit(h, item(1, 'we_a'));
    admit(h, item(2, 'we_b'));
    expect(h.started.map((i) => i.id)).toEqual([0, 1]);
    expect(h.slots.claimable()).toBe(0);
    h.slots.finish('we_a', 'plt_1', 'answered');
    expect(h.started.map((i) => i.id)).toEqual([0, 1, 2]);
  });

  it('claims leave out endpoints with a cap running and a cap waiting, and Platforms at their share', () => {
    const h = harness({ workerConcurrency: 8, endpointConcurrency: 2, platformShare: 0.5 });
    for (let i = 0; i < 4; i++) admit(h, item(i, 'we_a', 'plt_1'));
    expect(h.slots.exclusions()).toEqual({ endpoints: ['we_a'], platforms: ['plt_1'] });
    h.slots.finish('we_a', 'plt_1', 'answered');
    expect(h.slots.exclusions()).toEqual({ endpoints: [], platforms: [] });
    expect(h.slots.heldFor('plt_1')).toBe(3);
  });

  it('three timeouts throttle the endpoint to one attempt and hand back what waits beyond it; an answer lifts it', () => {
    const h = harness({ workerConcurrency: 16, endpointConcurrency: 3, platformShare: 1 });
    for (let i = 0; i < 9; i++) admit(h, item(i));
    h.slots.finish('we_a', 'plt_1', 'timeout');
    h.slots.finish('we_a', 'plt_1', 'other');
    h.slots.finish('we_a', 'plt_1', 'timeout');
    expect(h.handedBack).toEqual([]);
    expect(h.started.map((i) => i.id)).toEqual([0, 1, 2, 3, 4, 5]);
    h.slots.finish('we_a', 'plt_1', 'timeout');
    expect(h.slots.snapshot().endpoints.get('we_a')?.cap).toBe(1);
    expect(h.handedBack.map((b) => [b.item.id, b.dueAtMs])).toEqual([
      [7, null],
      [8, null],
    ]);
    expect(h.started).toHaveLength(6);
    h.slots.finish('we_a', 'plt_1', 'timeout');
    expect(h.started).toHaveLength(6);
    h.slots.finish('we_a', 'plt_1', 'answered');
    expect(h.slots.snapshot().endpoints.get('we_a')?.cap).toBe(3);
    expect(h.started.map((i) => i.id)).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('a claim that says the endpoint is throttled caps it at one at once, handing back what waits beyond one', () => {
    const h = harness(config);
    for (let i = 0; i < 4; i++) admit(h, item(i), { throttled: true });
    expect(h.started.map((i) => i.id)).toEqual([0]);
    expect(h.handedBack.map((b) => b.item.id)).toEqual([2]);
    expect(h.slots.snapshot().endpoints.get('we_a')?.cap).toBe(1);
    admit(h, item(4));
    expect(h.slots.snapshot().endpoints.get('we_a')?.cap).toBe(2);
    expect(h.started.map((i) => i.id)).toEqual([0, 1]);
  });

  it('a pause hands back what waits, due when it ends, starts nothing meanwhile, and a shorter pause never shortens it', () => {
    const h = harness(config);
    for (let i = 0; i < 3; i++) admit(h, item(i));
    const until = h.clock.now + 30_000;
    h.slots.pause('we_a', until);
    expect(h.handedBack.map((b) => [b.item.id, b.dueAtMs])).toEqual([[2, until]]);
    h.slots.pause('we_a', h.clock.now + 1_000);
    expect(h.slots.pausedUntil('we_a')).toBe(until);
    expect(h.slots.exclusions().endpoints).toEqual(['we_a']);
    admit(h, item(3));
    h.slots.finish('we_a', 'plt_1', 'answered');
    expect(h.started.map((i) => i.id)).toEqual([0, 1]);
    expect(h.handedBack.map((b) => [b.item.id, b.dueAtMs])).toEqual([
      [2, until],
      [3, until],
    ]);
    h.clock.now = until;
    expect(h.slots.pausedUntil('we_a')).toBeUndefined();
    expect(h.slots.exclusions().endpoints).toEqual([]);
    admit(h, item(4));
    expect(h.started.map((i) => i.id)).toEqual([0, 1, 4]);
  });

  it('once a pause has ended, the next row starts at once (nothing else needs to look first)', () => {
    const h = harness(config);
    h.slots.pause('we_a', h.clock.now + 1_000);
    h.clock.now += 1_000;
    admit(h, item(0));
    expect(h.started.map((i) => i.id)).toEqual([0]);
    expect(h.handedBack).toEqual([]);
  });

  it("a claim that doesn't know of this worker's timeouts yet keeps the endpoint throttled here", () => {
    const h = harness({ workerConcurrency: 8, endpointConcurrency: 3, platformShare: 1 });
    for (let i = 0; i < 4; i++) admit(h, item(i));
    for (let i = 0; i < 3; i++) h.slots.finish('we_a', 'plt_1', 'timeout');
    expect(h.started.map((i) => i.id)).toEqual([0, 1, 2, 3]);
    admit(h, item(4));
    admit(h, item(5));
    expect(h.slots.snapshot().endpoints.get('we_a')?.cap).toBe(1);
    expect(h.started.map((i) => i.id)).toEqual([0, 1, 2, 3]);
    expect(h.slots.waiting).toBe(2);
  });

  it('a pause already over changes nothing', () => {
    const h = harness(config);
    h.slots.pause('we_a', h.clock.now);
    expect(h.slots.pausedUntil('we_a')).toBeUndefined();
    expect(h.slots.exclusions().endpoints).toEqual([]);
  });

  it('a rate-capped endpoint reserves one batch at a time; a short answer hands back the rest and what waits, and keeps it out of claims until the cap has room', () => {
    const h = harness(config);
    for (let i = 0; i < 4; i++) admit(h, item(i), { rate: 5 });
    expect(h.started).toEqual([]);
    expect(h.reservations).toHaveLength(1);
    const r = h.reservations.shift()!;
    expect(r.taken.map((t) => t.item.id)).toEqual([0]);
    expect(h.slots.inFlight).toBe(1);
    expect(h.slots.waiting).toBe(3);
    h.slots.reservationShort('we_a', r.slot, r.taken, 2_000);
    h.slots.reservationSettled('we_a', r.slot);
    const due = h.clock.now + 2_000;
    expect(h.handedBack.map((b) => [b.item.id, b.dueAtMs])).toEqual([
      [0, due],
      [1, due],
      [2, due],
      [3, due],
    ]);
    expect(h.slots.inFlight).toBe(0);
    expect(h.slots.heldFor('plt_1')).toBe(0);
    expect(h.slots.exclusions().endpoints).toEqual(['we_a']);
    h.clock.monotonic += 1_999;
    expect(h.slots.exclusions().endpoints).toEqual(['we_a']);
    h.clock.monotonic += 1;
    expect(h.slots.exclusions().endpoints).toEqual([]);
  });

  it('a granted reservation settles and the next batch is reserved, up to the cap', () => {
    const h = harness(config);
    for (let i = 0; i < 3; i++) admit(h, item(i), { rate: 5 });
    const first = h.reservations.shift()!;
    h.started.push(first.taken[0]!.item);
    h.slots.reservationSettled('we_a', first.slot);
    expect(h.reservations.map((x) => x.taken.map((t) => t.item.id))).toEqual([[1]]);
    const second = h.reservations.shift()!;
    h.slots.reservationSettled('we_a', second.slot);
    expect(h.reservations).toEqual([]);
    h.slots.finish('we_a', 'plt_1', 'answered');
    expect(h.reservations.map((x) => x.taken.map((t) => t.item.id))).toEqual([[2]]);
  });

  it('a short reservation frees worker slots: a row the worker-wide cap held back starts on them (found by the property test)', () => {
    const h = harness({ workerConcurrency: 1, endpointConcurrency: 1, platformShare: 1 });
    admit(h, item(0, 'we_c', 'plt_2'), { rate: 5 });
    admit(h, item(1, 'we_a'));
    expect(h.started).toEqual([]);
    const r = h.reservations.shift()!;
    h.slots.reservationShort('we_c', r.slot, r.taken, 1_000);
    h.slots.reservationSettled('we_c', r.slot);
    expect(h.started.map((i) => i.id)).toEqual([1]);
    expect(h.slots.waiting).toBe(0);
  });

  it('stopping hands back every waiting row as due now, in one call', () => {
    const h = harness({ workerConcurrency: 1, endpointConcurrency: 1, platformShare: 1 });
    admit(h, item(0, 'we_a'));
    admit(h, item(1, 'we_a'));
    admit(h, item(2, 'we_b', 'plt_2'));
    h.slots.releaseWaiting();
    expect(h.handedBack.map((b) => [b.item.id, b.dueAtMs])).toEqual([
      [1, null],
      [2, null],
    ]);
    expect(h.slots.heldFor('plt_2')).toBe(0);
    expect(h.slots.snapshot().endpoints.has('we_b')).toBe(false);
  });

  it("an attempt's health: an HTTP status or a broker's answer is an answer, a timeout a timeout, anything else neither", () => {
    expect(attemptHealth({ statusCode: 500, succeeded: false, errorKind: 'http_status' })).toBe('answered');
    expect(attemptHealth({ statusCode: null, succeeded: true, errorKind: null })).toBe('answered');
    expect(attemptHealth({ statusCode: null, succeeded: false, errorKind: 'broker' })).toBe('answered');
    expect(attemptHealth({ statusCode: null, succeeded: false, errorKind: 'timeout' })).toBe('timeout');
    expect(attemptHealth({ statusCode: null, succeeded: false, errorKind: 'connection_refused' })).toBe('other');
  });
});

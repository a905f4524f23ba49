import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { MAX_ATTEMPTS, RETRY_DELAYS_MS } from '@payhooks/contract';
import { afterAutomaticAttempt, afterManualAttempt, beforeAutomaticAttempt } from '../../src/delivery/schedule.ts';
import { loadConfig } from '../../src/config.ts';

const now = new Date(Date.UTC(2026, 0, 1));
const MIN = 60_000;
const HOUR = 60 * MIN;

describe('retry schedule (spec 8)', () => {
  it('spec 8: the default schedule is 1m, 5m, 30m, 2h, 12h, 24h, 24h: 8 attempts in all', () => {
    expect(RETRY_DELAYS_MS).toEqual([MIN, 5 * MIN, 30 * MIN, 2 * HOUR, 12 * HOUR, 24 * HOUR, 24 * HOUR]);
    expect(MAX_ATTEMPTS).toBe(8);
    expect(loadConfig({}).retryScheduleMs).toEqual(RETRY_DELAYS_MS);
  });

  it('spec 3.2: a failed attempt n < 8 is failed_retrying with the nth delay', () => {
    for (let before = 0; before < 7; before++) {
      expect(afterAutomaticAttempt({ succeeded: false, automaticAttemptsBefore: before, delaysMs: RETRY_DELAYS_MS, now })).toEqual({
        state: 'failed_retrying',
        nextAttemptAt: new Date(now.getTime() + RETRY_DELAYS_MS[before]!),
      });
    }
  });

  it('spec 8: exhausted after the 8th failed attempt', () => {
    expect(afterAutomaticAttempt({ succeeded: false, automaticAttemptsBefore: 7, delaysMs: RETRY_DELAYS_MS, now })).toEqual({
      state: 'exhausted',
      nextAttemptAt: null,
    });
  });

  it('spec 3.2: any success is delivered with nothing more scheduled', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 7 }), (before) => {
        expect(afterAutomaticAttempt({ succeeded: true, automaticAttemptsBefore: before, delaysMs: RETRY_DELAYS_MS, now })).toEqual({
          state: 'delivered',
          nextAttemptAt: null,
        });
      }),
    );
  });

  it('spec 8: for any schedule, attempts = delays + 1 and the sum of waits is the sum of delays', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 10 * HOUR }), { minLength: 1, maxLength: 10 }), (delays) => {
        let t = now.getTime();
        let attempts = 0;
        let state = 'pending';
        while (state !== 'exhausted') {
          const next = afterAutomaticAttempt({ succeeded: false, automaticAttemptsBefore: attempts, delaysMs: delays, now: new Date(t) });
          attempts++;
          state = next.state;
          if (next.nextAttemptAt) t = next.nextAttemptAt.getTime();
        }
        expect(attempts).toBe(delays.length + 1);
        expect(t - now.getTime()).toBe(delays.reduce((a, b) => a + b, 0));
      }),
    );
  });

  it('spec 3.2: a manual replay that succeeds is delivered; one that fails keeps state and schedule', () => {
    const next = new Date(now.getTime() + HOUR);
    expect(afterManualAttempt({ succeeded: true, state: 'exhausted', nextAttemptAt: null })).toEqual({
      state: 'delivered',
      nextAttemptAt: null,
    });
    expect(afterManualAttempt({ succeeded: true, state: 'failed_retrying', nextAttemptAt: next })).toEqual({
      state: 'delivered',
      nextAttemptAt: null,
    });
    expect(afterManualAttempt({ succeeded: false, state: 'failed_retrying', nextAttemptAt: next })).toEqual({
      state: 'failed_retrying',
      nextAttemptAt: next,
    });
    expect(afterManualAttempt({ succeeded: false, state: 'exhausted', nextAttemptAt: null })).toEqual({
      state: 'exhausted',
      nextAttemptAt: null,
    });
  });
});

describe('an interrupted automatic attempt (a worker stopped mid-attempt)', () => {
  const at = new Date(now.getTime() - 10 * MIN);

  it('spec 8: it counts toward the 8: taken over after the 8th was interrupted, the delivery is exhausted with no 9th request', () => {
    expect(beforeAutomaticAttempt({ automaticAttempts: 8, interruptedAt: at, delaysMs: RETRY_DELAYS_MS, now })).toEqual({
      state: 'exhausted',
      nextAttemptAt: null,
    });
    // A budget spent some other way (a manual replay's takeover counted it) is exhausted too.
    expect(beforeAutomaticAttempt({ automaticAttempts: 8, interruptedAt: null, delaysMs: RETRY_DELAYS_MS, now })?.state).toBe('exhausted');
  });

  it('spec 8: the next attempt keeps the delay after the interrupted one: waits when it is still ahead, goes now when it is due', () => {
    // Attempt 1 interrupted 10 minutes ago, taken over now: the 1-minute retry is due.
    expect(beforeAutomaticAttempt({ automaticAttempts: 1, interruptedAt: at, delaysMs: RETRY_DELAYS_MS, now })).toBeNull();
    // Attempt 3 interrupted 10 minutes ago: its retry comes 30 minutes after it.
    expect(beforeAutomaticAttempt({ automaticAttempts: 3, interruptedAt: at, delaysMs: RETRY_DELAYS_MS, now })).toEqual({
      state: 'failed_retrying',
      nextAttemptAt: new Date(at.getTime() + 30 * MIN),
    });
  });

  it('nothing interrupted and budget left: attempt now, whatever the schedule', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 7 }), (made) => {
        expect(beforeAutomaticAttempt({ automaticAttempts: made, interruptedAt: null, delaysMs: RETRY_DELAYS_MS, now })).toBeNull();
      }),
    );
  });

  it('spec 8: for any schedule and any attempts interrupted, a receiver gets at most delays + 1 automatic requests, each no earlier than its delay', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 10 * HOUR }), { minLength: 1, maxLength: 8 }),
        fc.array(fc.boolean(), { minLength: 12, maxLength: 12 }),
        fc.integer({ min: 1, max: 2 * HOUR }),
        (delays, interruptions, leaseMs) => {
          let t = now.getTime();
          let made = 0;
          let last: number | null = null;
          let takenOver: number | null = null;
          let sent = 0;
          for (let step = 0; step < 40; step++) {
            // A claim: a takeover of an interrupted attempt, or a normal one.
            const before = beforeAutomaticAttempt({
              automaticAttempts: made,
              interruptedAt: takenOver === null ? null : new Date(takenOver),
              delaysMs: delays,
              now: new Date(t),
            });
            takenOver = null;
            if (before?.state === 'exhausted') break;
            if (before) {
              t = before.nextAttemptAt!.getTime();
              continue;
            }
            if (last !== null) expect(t - last).toBeGreaterThanOrEqual(delays[made - 1]!);
            sent++;
            last = t;
            made++;
            if (interruptions[step % interruptions.length]) {
              // The worker dies mid-attempt: the takeover comes a lease later and counts it.
              takenOver = t;
              t += leaseMs;
              continue;
            }
            const next = afterAutomaticAttempt({ succeeded: false, automaticAttemptsBefore: made - 1, delaysMs: delays, now: new Date(t) });
            if (next.state === 'exhausted') break;
            t = next.nextAttemptAt!.getTime();
          }
          expect(sent).toBeLessThanOrEqual(delays.length + 1);
        },
      ),
    );
  });
});

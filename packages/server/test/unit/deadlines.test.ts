import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DeadlineQueue } from '../../src/delivery/deadlines.ts';

/**
 * The sender's deadlines (delivery/deadlines.ts): all the same length, so one timer serves them.
 * Fake timers and a fake `performance.now()` make "when" exact, whatever the machine's load.
 */
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('deadlines served by one timer', () => {
  it('fires each deadline once, in the order set, and never a cancelled one', async () => {
    const q = new DeadlineQueue(20);
    const fired: string[] = [];
    q.add(() => fired.push('a'));
    const b = q.add(() => fired.push('b'));
    q.add(() => fired.push('c'));
    b.cancel();
    b.cancel(); // twice is harmless
    await vi.advanceTimersByTimeAsync(19);
    expect(fired).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(fired).toEqual(['a', 'c']);
    await vi.advanceTimersByTimeAsync(100);
    expect(fired).toEqual(['a', 'c']);
  });

  it('re-arms after it went idle, and for deadlines set while one fires', async () => {
    const q = new DeadlineQueue(10);
    const fired: string[] = [];
    q.add(() => {
      fired.push('first');
      q.add(() => fired.push('set while firing'));
    });
    await vi.advanceTimersByTimeAsync(10);
    expect(fired).toEqual(['first']);
    await vi.advanceTimersByTimeAsync(10);
    expect(fired).toEqual(['first', 'set while firing']);
    await vi.advanceTimersByTimeAsync(50);
    q.add(() => fired.push('after idle'));
    await vi.advanceTimersByTimeAsync(9);
    expect(fired).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(fired).toEqual(['first', 'set while firing', 'after idle']);
  });

  it('cancelling everything leaves nothing to fire; a later deadline still fires on time', async () => {
    const q = new DeadlineQueue(10);
    const fired: string[] = [];
    const all = Array.from({ length: 100 }, (_, i) => q.add(() => fired.push(`x${i}`)));
    // Out of order: the front goes last.
    for (const d of all.slice(1)) d.cancel();
    all[0]!.cancel();
    await vi.advanceTimersByTimeAsync(5);
    q.add(() => fired.push('later')); // due at 15; the timer armed for the cancelled ones fires at 10 for nothing
    await vi.advanceTimersByTimeAsync(9);
    expect(fired).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(fired).toEqual(['later']);
  });

  it('a stream of deadlines set and cancelled (every attempt that is answered) arms one timer, not one each', async () => {
    const setTimeoutSpy = vi.spyOn(globalThis, 'setTimeout');
    const q = new DeadlineQueue(1_000);
    const fired: number[] = [];
    for (let i = 0; i < 500; i++) {
      q.add(() => fired.push(i)).cancel();
      await vi.advanceTimersByTimeAsync(3);
    }
    // 1.5 s of them: the one timer fired (for nothing) and was armed again once.
    expect(setTimeoutSpy.mock.calls.length).toBeLessThanOrEqual(2);
    setTimeoutSpy.mockRestore();
    q.add(() => fired.push(-1));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(fired).toEqual([-1]);
  });

  it('a timer that fires a fraction of a millisecond before the deadline by the clock fires it then, not after a re-arm', async () => {
    // Node's timers count whole milliseconds; performance.now() does not. A re-arm for the
    // fraction let a client library's equal connect timeout, set later, fire first.
    let now = 0;
    const q = new DeadlineQueue(10, () => now);
    const fired: number[] = [];
    q.add(() => fired.push(1));
    now = 9.5; // the timer fires at 10 ms while this clock still reads just under the deadline
    await vi.advanceTimersByTimeAsync(10);
    expect(fired).toEqual([1]);
  });

  it('uses the injected clock: a deadline fires only once the clock has passed it', async () => {
    let now = 0;
    const q = new DeadlineQueue(1_000_000, () => now);
    const fired: number[] = [];
    q.add(() => fired.push(1));
    now = 999_999;
    await vi.advanceTimersByTimeAsync(5);
    expect(fired).toEqual([]); // the timer is far away; nothing fires early
    // The queue checks the clock when its timer fires; a second queue's short delay shows the ordering rule.
    const q2 = new DeadlineQueue(5, () => now);
    q2.add(() => fired.push(2));
    now += 10;
    await vi.advanceTimersByTimeAsync(5);
    expect(fired).toEqual([2]);
  });
});

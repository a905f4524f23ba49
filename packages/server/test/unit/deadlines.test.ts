import { describe, expect, it } from 'vitest';
import { DeadlineQueue } from '../../src/delivery/deadlines.ts';

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('deadlines served by one timer', () => {
  it('fires each deadline once, in the order set, and never a cancelled one', async () => {
    const q = new DeadlineQueue(20);
    const fired: string[] = [];
    q.add(() => fired.push('a'));
    const b = q.add(() => fired.push('b'));
    q.add(() => fired.push('c'));
    b.cancel();
    b.cancel(); // twice is harmless
    await tick(80);
    expect(fired).toEqual(['a', 'c']);
  });

  it('re-arms after it went idle, and for deadlines set while one fires', async () => {
    const q = new DeadlineQueue(10);
    const fired: string[] = [];
    q.add(() => {
      fired.push('first');
      q.add(() => fired.push('set while firing'));
    });
    await tick(60);
    q.add(() => fired.push('after idle'));
    await tick(60);
    expect(fired).toEqual(['first', 'set while firing', 'after idle']);
  });

  it('cancelling everything leaves nothing to fire; a later deadline still fires', async () => {
    const q = new DeadlineQueue(10);
    const fired: string[] = [];
    const all = Array.from({ length: 100 }, (_, i) => q.add(() => fired.push(`x${i}`)));
    // Out of order: the front goes last.
    for (const d of all.slice(1)) d.cancel();
    all[0]!.cancel();
    q.add(() => fired.push('later'));
    await tick(60);
    expect(fired).toEqual(['later']);
  });

  it('a timer that fires a fraction of a millisecond before the deadline by the clock fires it then, not after a re-arm', async () => {
    // Node's timers count whole milliseconds; performance.now() does not. A re-arm for the
    // fraction let a client library's equal connect timeout, set later, fire first.
    let now = 0;
    const q = new DeadlineQueue(10, () => now);
    const fired: number[] = [];
    q.add(() => fired.push(1));
    now = 9.5; // the real timer fires at ~10 ms while the clock still reads just under the deadline
    await tick(40);
    expect(fired).toEqual([1]);
  });

  it('uses the injected clock: a deadline fires only once the clock has passed it', async () => {
    let now = 0;
    const q = new DeadlineQueue(1_000_000, () => now);
    const fired: number[] = [];
    q.add(() => fired.push(1));
    now = 999_999;
    await tick(5);
    expect(fired).toEqual([]); // the real timer is far away; nothing fires early
    // The queue checks the clock when its timer fires; a second queue's short delay shows the ordering rule.
    const q2 = new DeadlineQueue(5, () => now);
    q2.add(() => fired.push(2));
    now += 10;
    await tick(30);
    expect(fired).toEqual([2]);
  });
});

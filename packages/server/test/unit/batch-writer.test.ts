import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BatchWriter } from '../../src/delivery/batch-writer.ts';

/**
 * The worker records attempt outcomes through a BatchWriter (delivery/worker.ts): a record
 * statement per `delayMs` of outcomes, or per full batch. Fake timers make "when" exact.
 */
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** A writer whose writes take `writeMs` each, recording every batch and when it started. */
function writer(options: { max: number; delayMs: number; writeMs: number }) {
  const writes: Array<{ at: number; items: number[] }> = [];
  let inFlight = 0;
  let mostInFlight = 0;
  const w = new BatchWriter<number>({
    max: options.max,
    delayMs: options.delayMs,
    write: async (items) => {
      writes.push({ at: Date.now(), items });
      mostInFlight = Math.max(mostInFlight, ++inFlight);
      await new Promise((r) => setTimeout(r, options.writeMs));
      inFlight--;
    },
  });
  return { w, writes, mostInFlight: () => mostInFlight };
}

describe('BatchWriter', () => {
  it('writes a batch delayMs after its first item, with every item that arrived meanwhile', async () => {
    const { w, writes } = writer({ max: 200, delayMs: 20, writeMs: 2 });
    const t0 = Date.now();
    w.add(1);
    await vi.advanceTimersByTimeAsync(5);
    w.add(2);
    await vi.advanceTimersByTimeAsync(10);
    w.add(3);
    await vi.advanceTimersByTimeAsync(4);
    expect(writes).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(writes).toEqual([{ at: t0 + 20, items: [1, 2, 3] }]);
    await vi.advanceTimersByTimeAsync(2);
    expect(w.waiting).toBe(0);
  });

  it('a steady stream while writes take time: one write per delay, not one per write (items that arrive during a write wait for their own delay)', async () => {
    const { w, writes, mostInFlight } = writer({ max: 200, delayMs: 20, writeMs: 5 });
    const addedAt: number[] = [];
    for (let i = 0; i < 200; i++) {
      addedAt.push(Date.now());
      w.add(i);
      await vi.advanceTimersByTimeAsync(1);
    }
    await vi.advanceTimersByTimeAsync(100);
    expect(w.waiting).toBe(0);
    // Each item is written when its batch's write ends (writes take 5 ms).
    const finished = writes.flatMap((b) => b.items.map((i) => b.at + 5 - addedAt[i]!));
    // 200 ms of items, a write per 20 ms: 10 or 11. Writing what arrived during the previous
    // write instead (the first version) made one every 5 ms: 40.
    expect(writes.length).toBeGreaterThanOrEqual(10);
    expect(writes.length).toBeLessThanOrEqual(11);
    expect(writes.flatMap((b) => b.items)).toEqual(Array.from({ length: 200 }, (_, i) => i));
    expect(mostInFlight()).toBe(1);
    // No item waits longer than its delay, a write in progress, and its own write.
    expect(Math.max(...finished)).toBeLessThanOrEqual(20 + 5 + 5);
  });

  it('a full batch is written at once, without waiting for the delay', async () => {
    const { w, writes } = writer({ max: 3, delayMs: 20, writeMs: 1 });
    for (const i of [1, 2, 3]) w.add(i);
    await vi.advanceTimersByTimeAsync(0);
    expect(writes.map((b) => b.items)).toEqual([[1, 2, 3]]);
    await vi.advanceTimersByTimeAsync(1);
    expect(w.waiting).toBe(0);
  });

  it('full batches behind a write follow it at once; an item that arrived during a write keeps its own delay', async () => {
    const { w, writes } = writer({ max: 3, delayMs: 20, writeMs: 10 });
    const t0 = Date.now();
    w.add(1);
    await vi.advanceTimersByTimeAsync(20); // [1] is due: written from t=20 to t=30
    for (let i = 2; i <= 7; i++) w.add(i); // two full batches behind it
    await vi.advanceTimersByTimeAsync(25);
    w.add(8); // t=45, during the second full batch's write
    await vi.advanceTimersByTimeAsync(40);
    expect(writes.map((b) => [b.at - t0, b.items])).toEqual([
      [20, [1]],
      [30, [2, 3, 4]],
      [40, [5, 6, 7]],
      [65, [8]], // its own delay after t=45, not the end of the write before it (t=50)
    ]);
  });

  it('flushAll writes everything waiting now, in batches of at most max', async () => {
    const { w, writes } = writer({ max: 2, delayMs: 1_000, writeMs: 1 });
    for (const i of [1, 2, 3, 4, 5]) w.add(i);
    const all = w.flushAll();
    await vi.advanceTimersByTimeAsync(10);
    await all;
    expect(writes.map((b) => b.items)).toEqual([[1, 2], [3, 4], [5]]);
    expect(w.waiting).toBe(0);
  });
});

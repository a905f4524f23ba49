import { describe, expect, it } from 'vitest';
import { latestOnly } from '../../src/latest.ts';

/** A promise settled from outside, to answer reads in any order. */
function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('latestOnly: overlapping reads of one page', () => {
  it('applies the newest read even when an older one answers after it, and drops the older one', async () => {
    const latest = latestOnly();
    const applied: string[] = [];
    const older = deferred<string>();
    const newer = deferred<string>();
    const a = latest(
      older.promise,
      (v) => applied.push(v),
      () => applied.push('error'),
    );
    const b = latest(
      newer.promise,
      (v) => applied.push(v),
      () => applied.push('error'),
    );
    newer.resolve('filtered rows');
    await b;
    older.resolve('rows of the previous filter');
    await a;
    expect(applied).toEqual(['filtered rows']);
  });

  it("an older read's error is dropped too; the newest one's is reported", async () => {
    const latest = latestOnly();
    const seen: string[] = [];
    const older = deferred<string>();
    const newer = deferred<string>();
    const a = latest(
      older.promise,
      (v) => seen.push(v),
      (e) => seen.push(`failed: ${String(e)}`),
    );
    const b = latest(
      newer.promise,
      (v) => seen.push(v),
      (e) => seen.push(`failed: ${String(e)}`),
    );
    older.reject('timeout');
    await a;
    newer.reject('offline');
    await b;
    expect(seen).toEqual(['failed: offline']);
  });

  it('reads one after another are each applied', async () => {
    const latest = latestOnly();
    const applied: number[] = [];
    await latest(
      Promise.resolve(1),
      (v) => applied.push(v),
      () => {},
    );
    await latest(
      Promise.resolve(2),
      (v) => applied.push(v),
      () => {},
    );
    expect(applied).toEqual([1, 2]);
  });
});

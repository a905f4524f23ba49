/**
 * Keeps only the newest of overlapping reads of the same thing. A page reads its data again after
 * every action and every filter change; on a slow connection an earlier read can answer after a
 * later one, and applying it would show what no longer holds (rows of the previous filter, the
 * attempt count from before an attempt). Each call is numbered; its result (or error) is applied
 * only if no call began after it.
 */
export function latestOnly(): <T>(read: Promise<T>, apply: (value: T) => void, fail: (err: unknown) => void) => Promise<void> {
  let newest = 0;
  return (read, apply, fail) => {
    const mine = ++newest;
    return read.then(
      (value) => {
        if (mine === newest) apply(value);
      },
      (err: unknown) => {
        if (mine === newest) fail(err);
      },
    );
  };
}

import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort, until } from '../helpers/wait.ts';

// The tests' own waiting helper: what a failing wait says is what a red CI run shows.
describe('until', () => {
  it('returns the first truthy value of the condition, sync or async', async () => {
    let n = 0;
    expect(await until(() => (++n >= 3 ? { n } : undefined), { interval: 1 })).toEqual({ n: 3 });
    let m = 0;
    expect(await until(async () => ++m === 2 && 'done', { interval: 1 })).toBe('done');
  });

  it('retries a throwing condition and returns once it holds', async () => {
    let n = 0;
    const value = await until(
      () => {
        if (++n < 3) throw new Error('not yet');
        return n;
      },
      { interval: 1 },
    );
    expect(value).toBe(3);
  });

  it('times out naming what it waited for and the last value seen', async () => {
    let n = 0;
    const err = await until(() => ++n && 0, { timeout: 60, interval: 10, message: 'the answer' }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/^timed out after [\d.]+ s waiting for the answer \(\d+ checks; last value: 0\)$/);
    expect(n).toBeGreaterThan(1);
  });

  it('times out with the last error seen, kept as the cause; a message function is called only then', async () => {
    const cause = new Error('connection refused');
    let asked = 0;
    const err = (await until(
      () => {
        throw cause;
      },
      {
        timeout: 30,
        interval: 5,
        message: () => {
          asked++;
          return 'the database (3 attempts so far)';
        },
      },
    ).catch((e: Error) => e)) as Error;
    expect(err.message).toContain('waiting for the database (3 attempts so far)');
    expect(err.message).toContain('last error: Error: connection refused');
    expect(err.cause).toBe(cause);
    expect(asked).toBe(1);
  });
});

describe('freePort', () => {
  it('gives a port that can be bound right away', async () => {
    const port = await freePort();
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
    await new Promise<void>((resolve) => server.close(() => resolve()));
    expect(port).toBeGreaterThan(0);
  });
});

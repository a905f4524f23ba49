import { createServer, type AddressInfo } from 'node:net';
import { inspect } from 'node:util';

/**
 * Waiting and ports, for every test of the repository (the server's, the receiver SDK's, the
 * examples' and sdks/test's import this file by its relative path). A test waits for a
 * condition with `until`, never with a fixed sleep: the suite runs on a loaded 2-core machine,
 * where "it usually takes 200 ms" is not a promise.
 */

export interface UntilOptions {
  /**
   * What is waited for, as the failure reads: "timed out after 20 s waiting for <message>".
   * A function is called only on failure, so it can add what the test saw meanwhile.
   */
  message?: string | (() => string);
  /** Milliseconds before giving up; default 20 000 (inside vitest's 30 s test timeout). */
  timeout?: number;
  /** Milliseconds between two checks; default 50. */
  interval?: number;
}

type Falsy = false | 0 | 0n | '' | null | undefined;

/**
 * Calls `condition` until it returns (or resolves to) a truthy value, and returns that value.
 * A throw or rejection counts as "not yet" (a query during a database restart, an assertion that
 * does not hold yet). On time-out it throws an error naming what it waited for and the last
 * value or error the condition gave (the error is also its `cause`).
 */
export async function until<T>(condition: () => T | PromiseLike<T>, options: UntilOptions = {}): Promise<Exclude<T, Falsy>> {
  const { timeout = 20_000, interval = 50, message = 'a condition' } = options;
  const started = Date.now();
  const deadline = started + timeout;
  let last: { value: unknown } | { error: unknown } = { value: undefined };
  let checks = 0;
  for (;;) {
    checks++;
    try {
      const value = await condition();
      if (value) return value as Exclude<T, Falsy>;
      last = { value };
    } catch (error) {
      last = { error };
    }
    const now = Date.now();
    if (now >= deadline) {
      const what = typeof message === 'function' ? message() : message;
      const seen = 'error' in last ? `last error: ${describeError(last.error)}` : `last value: ${describe(last.value)}`;
      throw new Error(`timed out after ${seconds(now - started)} waiting for ${what} (${checks} checks; ${seen})`, {
        cause: 'error' in last ? last.error : undefined,
      });
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(interval, deadline - now)));
  }
}

/** A TCP port on 127.0.0.1 nobody listens on right now (for a process that binds it itself). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}

function describe(value: unknown): string {
  const text = inspect(value, { depth: 3, breakLength: Number.POSITIVE_INFINITY, maxArrayLength: 20, maxStringLength: 500 });
  return text.length > 1000 ? `${text.slice(0, 1000)}…` : text;
}

function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return describe(error);
}

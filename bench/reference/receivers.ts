import { fork, type ChildProcess } from 'node:child_process';

/**
 * What the receivers saw: every (event id, path) pair once, with its first arrival time,
 * duplicates counted apart. Reset between scenarios.
 */
export class Arrivals {
  count = 0;
  duplicates = 0;
  first = Infinity;
  last = 0;
  readonly at = new Map<string, number>();
  #waiters: Array<{ n: number; resolve: () => void }> = [];

  reset(): void {
    this.count = 0;
    this.duplicates = 0;
    this.first = Infinity;
    this.last = 0;
    this.at.clear();
    for (const w of this.#waiters) w.resolve();
    this.#waiters = [];
  }

  add(id: string | undefined, url: string, at: number): void {
    const key = `${id}|${url}`;
    if (id !== undefined && this.at.has(key)) {
      this.duplicates++;
      return;
    }
    if (id !== undefined) this.at.set(key, at);
    this.count++;
    if (at < this.first) this.first = at;
    if (at > this.last) this.last = at;
    this.#waiters = this.#waiters.filter((w) => {
      if (this.count < w.n) return true;
      w.resolve();
      return false;
    });
  }

  /** Resolves true once `n` distinct deliveries arrived, false after `timeoutMs`. */
  waitFor(n: number, timeoutMs: number): Promise<boolean> {
    if (this.count >= n) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w !== waiter);
        resolve(false);
      }, timeoutMs);
      const waiter = {
        n,
        resolve: () => {
          clearTimeout(timer);
          resolve(this.count >= n);
        },
      };
      this.#waiters.push(waiter);
    });
  }
}

export interface Receivers {
  ports: number[];
  pids: number[];
  arrivals: Arrivals;
  /** URL of endpoint `i`: endpoints are spread round robin over the receiver processes. */
  url(i: number, prefix?: string): string;
  stop(): void;
}

/** Starts `n` receiver processes (bench/receiver.mjs), each on its own port. */
export async function startReceivers(n: number): Promise<Receivers> {
  const arrivals = new Arrivals();
  const children: ChildProcess[] = [];
  const ports = await Promise.all(
    Array.from({ length: n }, async () => {
      const child = fork(new URL('../receiver.mjs', import.meta.url), { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
      children.push(child);
      const port = await new Promise<number>((resolve, reject) => {
        child.once('message', (m: { port: number }) => resolve(m.port));
        child.once('exit', (code) => reject(new Error(`a receiver exited with ${code}`)));
      });
      child.on('message', (m: { arrivals?: [string | undefined, string, number][] }) => {
        for (const [id, url, at] of m.arrivals ?? []) arrivals.add(id, url, at);
      });
      return port;
    }),
  );
  return {
    ports,
    pids: children.map((c) => c.pid!),
    arrivals,
    url: (i, prefix = 'e') => `http://127.0.0.1:${ports[i % n]}/${prefix}${i}`,
    stop: () => {
      for (const c of children) c.kill('SIGKILL');
    },
  };
}

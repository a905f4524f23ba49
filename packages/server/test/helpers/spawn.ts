import { spawn, type ChildProcess } from 'node:child_process';
import { PAYHOOKS_BIN, PAYHOOKS_NODE_OPTIONS } from './cli.ts';

export interface Spawned {
  child: ChildProcess;
  output(): string;
  /** Resolves when the output contains `text`. */
  waitFor(text: string | RegExp, timeoutMs?: number): Promise<void>;
  /** Resolves with the exit code (or signal name). */
  exited: Promise<number | string>;
}

/** Runs `payhooks ...args` as a real process with `env` added to a clean environment; `bin`: another build's CLI. */
export function spawnPayhooks(args: string[], env: Record<string, string>, bin = PAYHOOKS_BIN): Spawned {
  const child = spawn(process.execPath, [...PAYHOOKS_NODE_OPTIONS, bin, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return watched(child);
}

/** A child started with piped stdout and stderr, its output collected and waited on. */
export function watched(child: ChildProcess): Spawned {
  let out = '';
  const listeners = new Set<() => void>();
  const onData = (b: Buffer) => {
    out += b.toString();
    for (const l of listeners) l();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  return {
    child,
    output: () => out,
    exited,
    waitFor(text, timeoutMs = 30_000) {
      const has = () => (typeof text === 'string' ? out.includes(text) : text.test(out));
      if (has()) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const t = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`timed out waiting for ${String(text)}; output so far:\n${out}`));
        }, timeoutMs);
        const check = () => {
          if (!has()) return;
          clearTimeout(t);
          listeners.delete(check);
          resolve();
        };
        listeners.add(check);
        void exited.then(() => {
          if (!has()) {
            clearTimeout(t);
            listeners.delete(check);
            reject(new Error(`process exited before ${String(text)}; output:\n${out}`));
          }
        });
      });
    },
  };
}

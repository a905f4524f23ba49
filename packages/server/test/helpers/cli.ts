import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** `packages/server/bin/payhooks.js`, run with this Node. */
export const PAYHOOKS_BIN = fileURLToPath(new URL('../../bin/payhooks.js', import.meta.url));

/**
 * V8 options for every `payhooks` process a test starts. `--liftoff-only` compiles the embedded
 * database's WebAssembly with V8's baseline compiler alone, never again with its optimising one:
 * a CLI process on PGlite lives a second or two, too short to repay that compilation, which was
 * about 40 % of its CPU (cli.test.ts on PGlite: 36 s of CPU, 25 s with it). What the process does
 * is unchanged; on PostgreSQL there is no WebAssembly and the option does nothing.
 */
export const PAYHOOKS_NODE_OPTIONS = ['--liftoff-only'];

const running = new Set<ChildProcess>();

/** A clean environment (no PAYHOOKS_* or DATABASE_URL from the test runner) plus `env`. */
function cleanEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', TMPDIR: process.env.TMPDIR ?? '/tmp', ...env };
}

function launch(args: string[], env: Record<string, string>, bin = PAYHOOKS_BIN) {
  const child = spawn(process.execPath, [...PAYHOOKS_NODE_OPTIONS, bin, ...args], {
    env: cleanEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    }),
  );
  // 'close' comes after 'exit' once the child's stdout and stderr are drained too.
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
  return { child, exited, closed, stdout: () => stdout, stderr: () => stderr };
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `payhooks ...args` to completion (killed after `timeoutMs`); `bin`: another build's CLI. */
export async function runPayhooks(args: string[], env: Record<string, string>, timeoutMs = 30_000, bin = PAYHOOKS_BIN): Promise<CliResult> {
  const p = launch(args, env, bin);
  const timer = setTimeout(() => p.child.kill('SIGKILL'), timeoutMs);
  const { code, signal } = await p.exited;
  clearTimeout(timer);
  // 'exit' can come before the pipes are drained (on a busy machine, long before).
  await p.closed;
  return { code, signal, stdout: p.stdout(), stderr: p.stderr() };
}

export interface ServeProcess {
  child: ChildProcess;
  /** From the `payhooks listening` log line, e.g. http://127.0.0.1:43123 */
  url: string;
  stdout(): string;
  stderr(): string;
  /** SIGTERM, then the exit code (SIGKILL after `graceMs`). */
  stop(graceMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts `payhooks serve ...args` and resolves once it logged `payhooks listening` (needs
 * PAYHOOKS_LOG_LEVEL=info or lower, which this sets unless given). `bin`: another build's CLI.
 */
export async function startServe(
  args: string[],
  env: Record<string, string>,
  timeoutMs = 30_000,
  bin = PAYHOOKS_BIN,
): Promise<ServeProcess> {
  const p = launch(['serve', ...args], { PAYHOOKS_LOG_LEVEL: 'info', PAYHOOKS_PORT: '0', ...env }, bin);
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      p.child.kill('SIGKILL');
      reject(new Error(`payhooks serve did not start in ${timeoutMs} ms\nstdout:\n${p.stdout()}\nstderr:\n${p.stderr()}`));
    }, timeoutMs);
    const check = () => {
      // Development mode logs pretty lines (`INFO: payhooks listening` then `url: "…"`).
      const pretty = /INFO.*: payhooks listening\n\s+url: "([^"]+)"/.exec(p.stdout());
      if (pretty) {
        clearTimeout(timer);
        p.child.stdout!.off('data', check);
        resolve(pretty[1]!);
        return;
      }
      for (const line of p.stdout().split('\n')) {
        if (!line.startsWith('{')) continue;
        try {
          const entry = JSON.parse(line) as { msg?: string; url?: string };
          if (entry.msg === 'payhooks listening' && entry.url) {
            clearTimeout(timer);
            p.child.stdout!.off('data', check);
            resolve(entry.url);
            return;
          }
        } catch {
          // a partial line: wait for more
        }
      }
    };
    p.child.stdout!.on('data', check);
    void p.exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`payhooks serve exited (${code ?? signal}) before listening\nstdout:\n${p.stdout()}\nstderr:\n${p.stderr()}`));
    });
  });
  return {
    child: p.child,
    url,
    stdout: p.stdout,
    stderr: p.stderr,
    async stop(graceMs = 10_000) {
      if (p.child.exitCode !== null || p.child.signalCode !== null) return p.exited;
      p.child.kill('SIGTERM');
      const timer = setTimeout(() => p.child.kill('SIGKILL'), graceMs);
      const result = await p.exited;
      clearTimeout(timer);
      return result;
    },
  };
}

/** Kills every payhooks process this file started that is still running (afterAll). */
export async function killAllPayhooks(): Promise<void> {
  const waits = [...running].map(
    (child) =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  );
  await Promise.all(waits);
}

import { fork, spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../../packages/server/bin/payhooks.js', import.meta.url));

/** Environment of a child: this one's, minus anything that would point it elsewhere. */
function baseEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of Object.keys(env))
    if (k.startsWith('PAYHOOKS_') || k.startsWith('OTEL_') || k === 'DATABASE_URL' || k === 'PGAPPNAME') delete env[k];
  return env;
}

export interface Child {
  pid: number;
  process: ChildProcess;
  /** A `payhooks worker`'s Prometheus endpoint (each is started with PAYHOOKS_METRICS_PORT=0). */
  metricsUrl?: string;
  kill(): Promise<void>;
}

/**
 * BENCH_WORKER_NODE_ARGS: extra node flags for `payhooks worker` (and API) processes, e.g.
 * `--cpu-prof --cpu-prof-dir=/tmp/prof` to see where a worker's CPU goes in a scenario.
 */
const WORKER_NODE_ARGS = process.env.BENCH_WORKER_NODE_ARGS?.split(' ').filter(Boolean) ?? [];

/** Every child still running, so a failed run leaves none behind. */
const live = new Set<ChildProcess>();

export function killAll(): void {
  for (const c of live) c.kill('SIGKILL');
}

function track(c: ChildProcess): ChildProcess {
  live.add(c);
  c.once('exit', () => live.delete(c));
  return c;
}

function childOf(process: ChildProcess): Child {
  const exited = new Promise<void>((resolve) => process.once('exit', () => resolve()));
  return {
    pid: process.pid!,
    process,
    async kill() {
      // With BENCH_WORKER_NODE_ARGS (profiling), a clean stop, so node writes the profile.
      if (process.exitCode === null && process.signalCode === null) process.kill(WORKER_NODE_ARGS.length ? 'SIGTERM' : 'SIGKILL');
      await exited;
    },
  };
}

/** `payhooks migrate` against `databaseUrl`. */
export async function runMigrate(databaseUrl: string): Promise<void> {
  const child = spawn(process.execPath, [CLI, 'migrate'], {
    env: { ...baseEnv(), DATABASE_URL: databaseUrl, PAYHOOKS_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`payhooks migrate failed (${code}): ${err}`);
}

/**
 * A real `payhooks worker` process. Resolves once it logged that its workers started (the
 * CLI's info line), so the drain that follows measures delivery, not start-up.
 */
export async function startWorker(options: {
  databaseUrl: string;
  encryptionKeyHex: string;
  env: Record<string, string>;
  name: string;
}): Promise<Child> {
  const child = track(
    spawn(process.execPath, [...WORKER_NODE_ARGS, CLI, 'worker'], {
      env: {
        ...baseEnv(),
        DATABASE_URL: options.databaseUrl,
        PAYHOOKS_ENCRYPTION_KEY: options.encryptionKeyHex,
        PAYHOOKS_ALLOW_PRIVATE_URLS: 'true',
        PAYHOOKS_LOG_LEVEL: 'info',
        PGAPPNAME: `bench-worker-${options.name}`,
        PAYHOOKS_METRICS_PORT: '0', // any free port; the start line says which (claims per delivery)
        ...options.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  let out = '';
  let metricsUrl: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (d: Buffer) => {
      out += d;
      if (out.includes('workers started')) {
        metricsUrl = /"metrics":"(http:[^"]+)"/.exec(out)?.[1];
        child.stdout!.off('data', onData);
        out = '';
        clearTimeout(timer);
        resolve();
      }
      if (out.length > 100_000) out = out.slice(-10_000);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (d) => (out = (out + d).slice(-20_000)));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`payhooks worker exited with ${code} before it started:\n${out.slice(-4000)}`));
    });
    // A CLI that words its start line differently still runs: go on, the drain is timed by arrivals.
    timer = setTimeout(() => {
      process.stderr.write(`bench: payhooks worker did not log "workers started" within 20 s; going on\n`);
      resolve();
    }, 20_000).unref();
  });
  // Keep draining its output so a chatty worker never blocks on a full pipe.
  child.stdout!.resume();
  child.stderr!.resume();
  await ready;
  return { ...childOf(child), metricsUrl };
}

/**
 * BENCH_API_BIN: the `payhooks` CLI the API processes run (default: this checkout's), to measure
 * another build's HTTP path against the same harness (e.g. a worktree of an earlier commit).
 */
const API_BIN = process.env.BENCH_API_BIN ?? CLI;

/**
 * A real `payhooks serve --no-worker` process (an API process of a fleet) on a free port, with
 * the internal API enabled by `token`. Resolves with its URL once it logged `payhooks listening`.
 * Its log lines (one per request, at info, as in production) are read and dropped.
 */
export async function startApi(options: {
  databaseUrl: string;
  encryptionKeyHex: string;
  token: string;
  env?: Record<string, string>;
  name: string;
}): Promise<Child & { url: string }> {
  const child = track(
    spawn(process.execPath, [...WORKER_NODE_ARGS, API_BIN, 'serve', '--no-worker'], {
      env: {
        ...baseEnv(),
        DATABASE_URL: options.databaseUrl,
        PAYHOOKS_ENCRYPTION_KEY: options.encryptionKeyHex,
        PAYHOOKS_INTERNAL_TOKEN: options.token,
        PAYHOOKS_ALLOW_PRIVATE_URLS: 'true',
        PAYHOOKS_PORT: '0',
        PAYHOOKS_LOG_LEVEL: 'info',
        PGAPPNAME: `bench-api-${options.name}`,
        ...options.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`payhooks serve did not start within 30 s:\n${out.slice(-4000)}`)), 30_000);
    const onData = (d: Buffer) => {
      out += d;
      for (const line of out.split('\n')) {
        if (!line.startsWith('{')) continue;
        let entry: { msg?: string; url?: string };
        try {
          entry = JSON.parse(line);
        } catch {
          continue; // a partial line
        }
        if (entry.msg !== 'payhooks listening' || !entry.url) continue;
        clearTimeout(timer);
        child.stdout!.off('data', onData);
        out = '';
        resolve(entry.url);
        return;
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (d) => (out = (out + d).slice(-20_000)));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`payhooks serve exited with ${code} before it listened:\n${out.slice(-4000)}`));
    });
  });
  child.stdout!.resume();
  child.stderr!.resume();
  return { ...childOf(child), url };
}

/** A child running a TypeScript entry (tsx), talking over IPC. */
export function forkTs(entry: string, env: Record<string, string> = {}): ChildProcess {
  return track(
    fork(fileURLToPath(new URL(entry, import.meta.url)), [], {
      execArgv: ['--import', 'tsx'],
      env: { ...baseEnv(), ...env },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
}

/** Sends `request` to a child and resolves with its first message of type `type`. */
export function ask<T>(child: ChildProcess, request: unknown, type: string, onOther?: (m: any) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const finish = () => {
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    const onMessage = (m: any) => {
      if (m?.type === type) {
        finish();
        resolve(m as T);
      } else if (m?.type === 'error') {
        finish();
        reject(new Error(m.message));
      } else onOther?.(m);
    };
    const onExit = (code: number | null) => {
      finish();
      reject(new Error(`child exited with ${code}`));
    };
    child.on('message', onMessage);
    child.on('exit', onExit);
    child.send(request as object);
  });
}

export { childOf };

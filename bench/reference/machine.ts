import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';

/** What the figures were measured on: they only compare within one machine and one run. */
export interface Machine {
  cpu: string | undefined;
  cores: number;
  memory_gib: number;
  node: string;
  postgres: string;
  git_commit: string;
  git_dirty: boolean;
  load_average_start: number[];
  load_average_end?: number[];
}

export function machineInfo(postgresVersion: string): Machine {
  const git = (...args: string[]) => {
    try {
      return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return '';
    }
  };
  return {
    cpu: cpus()[0]?.model,
    cores: cpus().length,
    memory_gib: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    postgres: postgresVersion,
    git_commit: git('rev-parse', 'HEAD') || 'unknown',
    git_dirty: git('status', '--porcelain', '--untracked-files=no') !== '',
    load_average_start: loadavg().map((l) => +l.toFixed(2)),
  };
}

/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ, 100 on Linux). */
export const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** Summed CPU ms of `pids` (those still running). */
export function cpuMsOfAll(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => sum + (cpuMsOf(pid) ?? 0), 0);
}

/** utime + stime of a process in ms, or undefined when it is gone. */
export function cpuMsOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

/** Peak resident set (VmHWM) of a process in MiB, or undefined when it is gone. */
export function peakRssMibOf(pid: number): number | undefined {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

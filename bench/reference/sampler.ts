import type pg from 'pg';
import { cpuMsOf, cpuMsOfAll, peakRssMibOf } from './machine.ts';

interface Sample {
  t: number;
  /** Cumulative CPU ms of the worker processes. */
  worker: number;
  /** Cumulative CPU ms of the PostgreSQL backends serving the worker processes. */
  pgWorker: number;
  /** Cumulative CPU ms of the PostgreSQL backends serving the publisher process. */
  pgPublisher: number;
  /** Cumulative CPU ms of the receiver processes. */
  receivers: number;
}

/**
 * Samples, every 100 ms, the CPU time (utime + stime from /proc/<pid>/stat) of the worker
 * processes, of the receiver processes, and of the PostgreSQL backends of the scratch database,
 * split by the connection's application_name (the bench sets PGAPPNAME=bench-worker /
 * bench-publisher in the processes it starts). A backend's CPU counts up to the last sample that saw it (a backend that exits
 * between two samples loses at most 100 ms of its time; pools keep them open for the run).
 * Figures for a window are read off the series afterwards, so windows can be chosen by what
 * the receivers saw (first to last arrival).
 */
export class ProcSampler {
  #samples: Sample[] = [];
  #timer: NodeJS.Timeout | undefined;
  #workerPids = new Set<number>();
  #workerCpu = new Map<number, number>();
  #backendCpu = new Map<number, { app: string; ms: number }>();
  #peakRss = new Map<number, number>();
  #busy = false;

  constructor(
    private readonly admin: pg.Client,
    private readonly databaseName: string,
    private readonly receiverPids: readonly number[] = [],
  ) {}

  start(workerPids: number[]): void {
    this.stop();
    this.#samples = [];
    this.#workerPids = new Set(workerPids);
    this.#workerCpu.clear();
    this.#backendCpu.clear();
    this.#peakRss.clear();
    this.#timer = setInterval(() => void this.sample(), 100);
  }

  addWorker(pid: number): void {
    this.#workerPids.add(pid);
  }

  async sample(): Promise<void> {
    if (this.#busy) return;
    this.#busy = true;
    try {
      const t = performance.timeOrigin + performance.now();
      for (const pid of this.#workerPids) {
        const ms = cpuMsOf(pid);
        if (ms !== undefined) this.#workerCpu.set(pid, ms);
        const rss = peakRssMibOf(pid);
        if (rss !== undefined) this.#peakRss.set(pid, Math.max(rss, this.#peakRss.get(pid) ?? 0));
      }
      const { rows } = await this.admin.query<{ pid: number; app: string }>(
        'SELECT pid, application_name AS app FROM pg_stat_activity WHERE datname = $1',
        [this.databaseName],
      );
      for (const { pid, app } of rows) {
        const ms = cpuMsOf(pid);
        if (ms !== undefined) this.#backendCpu.set(pid, { app, ms });
      }
      let pgWorker = 0;
      let pgPublisher = 0;
      for (const { app, ms } of this.#backendCpu.values()) {
        if (app.startsWith('bench-worker')) pgWorker += ms;
        else if (app.startsWith('bench-publisher')) pgPublisher += ms;
      }
      let worker = 0;
      for (const ms of this.#workerCpu.values()) worker += ms;
      const receivers = cpuMsOfAll(this.receiverPids);
      this.#samples.push({ t, worker, pgWorker, pgPublisher, receivers });
    } catch {
      // the database is being dropped at the end of a scenario: stop sampling quietly
    } finally {
      this.#busy = false;
    }
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Peak RSS (VmHWM) over the sampled worker processes, MiB. */
  peakRssMib(): number {
    let peak = 0;
    for (const pid of this.#workerPids) {
      const now = peakRssMibOf(pid);
      if (now !== undefined) this.#peakRss.set(pid, Math.max(now, this.#peakRss.get(pid) ?? 0));
    }
    for (const v of this.#peakRss.values()) peak = Math.max(peak, v);
    return Math.round(peak);
  }

  /** CPU ms spent between t1 and t2 (interpolated between samples). */
  window(t1: number, t2: number): { worker: number; pgWorker: number; pgPublisher: number; receivers: number } {
    const at = (t: number): Sample => {
      const s = this.#samples;
      if (s.length === 0) return { t, worker: 0, pgWorker: 0, pgPublisher: 0, receivers: 0 };
      if (t <= s[0]!.t) return s[0]!;
      for (let i = 1; i < s.length; i++) {
        if (s[i]!.t >= t) {
          const a = s[i - 1]!;
          const b = s[i]!;
          const f = (t - a.t) / (b.t - a.t || 1);
          return {
            t,
            worker: a.worker + f * (b.worker - a.worker),
            pgWorker: a.pgWorker + f * (b.pgWorker - a.pgWorker),
            pgPublisher: a.pgPublisher + f * (b.pgPublisher - a.pgPublisher),
            receivers: a.receivers + f * (b.receivers - a.receivers),
          };
        }
      }
      return s.at(-1)!;
    };
    const a = at(t1);
    const b = at(t2);
    return {
      worker: b.worker - a.worker,
      pgWorker: b.pgWorker - a.pgWorker,
      pgPublisher: b.pgPublisher - a.pgPublisher,
      receivers: b.receivers - a.receivers,
    };
  }
}

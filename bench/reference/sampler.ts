import type pg from 'pg';
import { cpuMsOf, cpuMsOfAll, peakRssMibOf } from './machine.ts';

/** CPU ms of each kind of process: cumulative in a sample, the difference over a window. */
export interface CpuWindow {
  /** The worker processes. */
  worker: number;
  /** The PostgreSQL backends serving the worker processes. */
  pgWorker: number;
  /** The PostgreSQL backends serving the publisher process. */
  pgPublisher: number;
  /** The receiver processes. */
  receivers: number;
  /** The API processes (`payhooks serve --no-worker`), and the PostgreSQL backends serving them. */
  api: number;
  pgApi: number;
}

interface Sample extends CpuWindow {
  t: number;
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
  #apiPids = new Set<number>();
  #apiCpu = new Map<number, number>();
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
    this.#apiPids = new Set();
    this.#apiCpu.clear();
    this.#backendCpu.clear();
    this.#peakRss.clear();
    this.#timer = setInterval(() => void this.sample(), 100);
  }

  addWorker(pid: number): void {
    this.#workerPids.add(pid);
  }

  /** An API process (`payhooks serve --no-worker`); its backends are those named bench-api*. */
  addApi(pid: number): void {
    this.#apiPids.add(pid);
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
      for (const pid of this.#apiPids) {
        const ms = cpuMsOf(pid);
        if (ms !== undefined) this.#apiCpu.set(pid, ms);
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
      let pgApi = 0;
      for (const { app, ms } of this.#backendCpu.values()) {
        if (app.startsWith('bench-worker')) pgWorker += ms;
        else if (app.startsWith('bench-publisher')) pgPublisher += ms;
        else if (app.startsWith('bench-api')) pgApi += ms;
      }
      let worker = 0;
      for (const ms of this.#workerCpu.values()) worker += ms;
      let api = 0;
      for (const ms of this.#apiCpu.values()) api += ms;
      const receivers = cpuMsOfAll(this.receiverPids);
      this.#samples.push({ t, worker, pgWorker, pgPublisher, receivers, api, pgApi });
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
  window(t1: number, t2: number): CpuWindow {
    const keys = ['worker', 'pgWorker', 'pgPublisher', 'receivers', 'api', 'pgApi'] as const;
    const zero: Sample = { t: 0, worker: 0, pgWorker: 0, pgPublisher: 0, receivers: 0, api: 0, pgApi: 0 };
    const at = (t: number): Sample => {
      const s = this.#samples;
      if (s.length === 0) return { ...zero, t };
      if (t <= s[0]!.t) return s[0]!;
      for (let i = 1; i < s.length; i++) {
        if (s[i]!.t >= t) {
          const a = s[i - 1]!;
          const b = s[i]!;
          const f = (t - a.t) / (b.t - a.t || 1);
          const out = { ...zero, t };
          for (const k of keys) out[k] = a[k] + f * (b[k] - a[k]);
          return out;
        }
      }
      return s.at(-1)!;
    };
    const a = at(t1);
    const b = at(t2);
    const out = {} as CpuWindow;
    for (const k of keys) out[k] = b[k] - a[k];
    return out;
  }
}

/** Nearest-rank percentile of an ascending array. */
export const pct = (sorted: number[], p: number): number =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;

export interface Percentiles {
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

export function percentiles(values: number[]): Percentiles {
  const s = [...values].sort((a, b) => a - b);
  const r = (x: number) => +x.toFixed(1);
  return { p50: r(pct(s, 50)), p95: r(pct(s, 95)), p99: r(pct(s, 99)), max: r(s.at(-1) ?? NaN) };
}

export const perSecond = (n: number, ms: number): number => Math.round((n / ms) * 1000);
export const round = (x: number, digits = 2): number => +x.toFixed(digits);
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const now = () => performance.timeOrigin + performance.now();

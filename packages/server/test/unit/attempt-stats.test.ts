import { describe, expect, it } from 'vitest';
import { AttemptStats, LATENCY_BUCKETS, failureKind, latencyBucket, percentile } from '../../src/delivery/attempt-stats.ts';
import { statsRange } from '../../src/delivery/stats.ts';

describe('attempt stats: the pure parts', () => {
  it('a status decides the kind first (429 apart from the other 4xx), then the error', () => {
    const f = (statusCode: number | null, errorKind: string | null, succeeded = false) =>
      failureKind({ succeeded, statusCode, errorKind: errorKind as never });
    expect(f(200, null, true)).toBeNull();
    expect([f(429, 'http_status'), f(404, 'http_status'), f(503, 'http_status'), f(302, 'http_status')]).toEqual([
      'http_429',
      'http_4xx',
      'http_5xx',
      'other',
    ]);
    expect(['connection_refused', 'connection_reset', 'dns', 'network', 'forbidden_address'].map((k) => f(null, k))).toEqual(
      Array(5).fill('connection'),
    );
    expect([f(null, 'timeout'), f(null, 'tls'), f(null, 'endpoint_disabled'), f(null, 'broker'), f(null, 'invalid_url')]).toEqual([
      'timeout',
      'tls',
      'endpoint_disabled',
      'other',
      'other',
    ]);
  });

  it('answer-time buckets are a quarter of a power of two wide, the last open-ended', () => {
    expect([latencyBucket(0), latencyBucket(1), latencyBucket(2), latencyBucket(16), latencyBucket(1_000_000)]).toEqual([
      0,
      0,
      4,
      16,
      LATENCY_BUCKETS - 1,
    ]);
    for (let ms = 1; ms < 60_000; ms = Math.ceil(ms * 1.07)) {
      const b = latencyBucket(ms);
      expect(2 ** (b / 4) <= ms || b === 0, `${ms} ms in bucket ${b}`).toBe(true);
      expect(ms < 2 ** ((b + 1) / 4) || b === LATENCY_BUCKETS - 1, `${ms} ms in bucket ${b}`).toBe(true);
    }
  });

  it('percentiles read from the histogram are within 9 % of the exact ones', () => {
    let seed = 42;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let round = 0; round < 20; round++) {
      const samples = Array.from({ length: 500 }, () => Math.round(2 + random() ** 3 * 5_000));
      const h = new Array<number>(LATENCY_BUCKETS).fill(0);
      for (const s of samples) h[latencyBucket(s)]!++;
      const sorted = [...samples].sort((a, b) => a - b);
      for (const q of [0.5, 0.95, 0.99]) {
        const exact = sorted[Math.ceil(q * sorted.length) - 1]!;
        const read = percentile(h, q)!;
        expect(Math.abs(read - exact) / exact, `q=${q}: ${read} against ${exact}`).toBeLessThanOrEqual(0.095);
      }
    }
    expect(percentile(new Array(LATENCY_BUCKETS).fill(0), 0.5)).toBeNull();
  });

  it('counts an attempt in its hour and its day, answer times only for answered attempts', () => {
    const stats = new AttemptStats();
    const startedAt = new Date('2026-12-01T10:59:59.999Z');
    stats.add('we_a', { succeeded: true, statusCode: 200, errorKind: null, startedAt, durationMs: 12 });
    stats.add('we_a', { succeeded: false, statusCode: null, errorKind: 'timeout', startedAt, durationMs: 30_000 });
    stats.add('we_a', {
      succeeded: false,
      statusCode: 500,
      errorKind: 'http_status',
      startedAt: new Date('2026-12-01T11:00:00Z'),
      durationMs: 5,
    });
    // we_a: hour 10, hour 11 and day 1.
    expect(stats.waiting).toBe(3);
  });

  it('ranges: defaults, rounding to buckets, and refusals that say what to ask instead', () => {
    const now = new Date('2026-12-07T17:42:10Z');
    const hourly = statsRange({}, now);
    expect([hourly.from.toISOString(), hourly.until.toISOString()]).toEqual(['2026-12-06T18:00:00.000Z', '2026-12-07T18:00:00.000Z']);
    const daily = statsRange({ granularity: 'day' }, now);
    expect([daily.from.toISOString(), daily.until.toISOString()]).toEqual(['2026-11-08T00:00:00.000Z', '2026-12-08T00:00:00.000Z']);
    const rounded = statsRange({ from: new Date('2026-12-07T10:30:00Z'), until: new Date('2026-12-07T12:10:00Z') }, now);
    expect([rounded.from.toISOString(), rounded.until.toISOString()]).toEqual(['2026-12-07T10:00:00.000Z', '2026-12-07T13:00:00.000Z']);
    expect(() => statsRange({ from: new Date('2026-11-01T00:00:00Z') }, now)).toThrow(/at most 7 days/);
    expect(() => statsRange({ from: new Date('2026-11-20T00:00:00Z'), until: new Date('2026-11-21T00:00:00Z') }, now)).toThrow(
      /kept for 8 days/,
    );
    expect(() => statsRange({ from: new Date('2026-12-07T12:00:00Z'), until: new Date('2026-12-07T11:00:00Z') }, now)).toThrow(/before/);
  });
});

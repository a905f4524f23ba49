import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock.ts';
import type { Database } from '../../src/db/client.ts';
import { DeliveryMetrics } from '../../src/delivery/metrics.ts';

const database = { query: async () => [] } as unknown as Database;
const clock: Clock = { now: () => new Date() } as Clock;
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const DURATION = 'payhooks_delivery_attempt_duration_seconds';

// The attempts metrics are tallied in plain numbers and reported at scrape time (metrics.ts):
// what a scrape shows must be exactly what prom-client's own counter and histogram would show.
describe('delivery attempt metrics', () => {
  const observations: Array<[boolean, string | null, number]> = [
    [true, null, 3],
    [true, null, 5],
    [true, null, 5.0001],
    [true, null, 240],
    [false, 'http_status', 12],
    [false, 'timeout', 10_000],
    [false, 'timeout', 10_001],
    [false, 'connection_refused', 0],
    [true, null, 0],
  ];

  it('scrapes the duration histogram exactly as a prom-client Histogram of the same observations', async () => {
    const metrics = new DeliveryMetrics({ database, clock });
    const reference = new Registry();
    const histogram = new Histogram({ name: DURATION, help: 'x', labelNames: ['outcome'], buckets: BUCKETS, registers: [reference] });
    for (const [ok, kind, ms] of observations) {
      metrics.observe(ok, kind, ms);
      histogram.observe({ outcome: ok ? 'succeeded' : 'failed' }, ms / 1000);
    }
    const ours = (await metrics.registry.getSingleMetricAsString(DURATION)).split('\n').slice(2);
    const theirs = (await reference.getSingleMetricAsString(DURATION)).split('\n').slice(2);
    expect(ours.sort()).toEqual(theirs.sort());
    expect(ours).toContain(`${DURATION}_bucket{le="0.005",outcome="succeeded"} 3`);
    expect(ours).toContain(`${DURATION}_count{outcome="failed"} 4`);
  });

  it('counts attempts by outcome and error kind, the same after several scrapes', async () => {
    const metrics = new DeliveryMetrics({ database, clock });
    const scrape = () => metrics.registry.getSingleMetricAsString('payhooks_delivery_attempts_total');
    for (const [ok, kind, ms] of observations.slice(0, 5)) metrics.observe(ok, kind, ms);
    expect(await scrape()).toContain('payhooks_delivery_attempts_total{outcome="succeeded",error_kind="none"} 4');
    for (const [ok, kind, ms] of observations.slice(5)) metrics.observe(ok, kind, ms);
    metrics.interrupted();
    const text = await scrape();
    expect(await scrape()).toBe(text);
    expect(text).toContain('payhooks_delivery_attempts_total{outcome="succeeded",error_kind="none"} 5');
    expect(text).toContain('payhooks_delivery_attempts_total{outcome="failed",error_kind="http_status"} 1');
    expect(text).toContain('payhooks_delivery_attempts_total{outcome="failed",error_kind="timeout"} 2');
    expect(text).toContain('payhooks_delivery_attempts_total{outcome="failed",error_kind="connection_refused"} 1');
    expect(text).toContain('payhooks_delivery_attempts_total{outcome="failed",error_kind="interrupted"} 1');
  });

  it('shows no duration series before the first attempt', async () => {
    const metrics = new DeliveryMetrics({ database, clock });
    expect(await metrics.registry.getSingleMetricAsString(DURATION)).not.toContain('_bucket');
  });
});

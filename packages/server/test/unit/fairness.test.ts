import { describe, expect, it } from 'vitest';
import { endpointCapOf, fairnessLimits } from '../../src/delivery/fairness.ts';

describe('fairness limits', () => {
  it("a Platform's cap is its share of the worker, rounded up", () => {
    expect(fairnessLimits({ endpointConcurrency: 10, workerConcurrency: 200, platformShare: 0.5 })).toEqual({
      endpointCap: 10,
      platformCap: 100,
    });
    expect(fairnessLimits({ endpointConcurrency: 10, workerConcurrency: 200, platformShare: 0.333 })).toEqual({
      endpointCap: 10,
      platformCap: 67,
    });
    expect(fairnessLimits({ endpointConcurrency: 10, workerConcurrency: 200, platformShare: 1 }).platformCap).toBe(200);
  });

  it("never below one endpoint's cap, never above the worker", () => {
    expect(fairnessLimits({ endpointConcurrency: 10, workerConcurrency: 200, platformShare: 0.01 }).platformCap).toBe(10);
    expect(fairnessLimits({ endpointConcurrency: 50, workerConcurrency: 20, platformShare: 0.01 }).platformCap).toBe(20);
  });

  it('a throttled endpoint gets one attempt at a time', () => {
    const limits = fairnessLimits({ endpointConcurrency: 10, workerConcurrency: 200, platformShare: 0.5 });
    expect(endpointCapOf(limits, true)).toBe(1);
    expect(endpointCapOf(limits, false)).toBe(10);
  });
});

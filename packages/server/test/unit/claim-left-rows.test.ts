import { describe, expect, it } from 'vitest';
import { mayHaveLeftRows } from '../../src/delivery/worker.ts';

const rows = (n: number, throttled = false) =>
  Array.from({ length: n }, (_, i) => ({ endpoint_id: `we_${i % 3}`, endpoint_throttled: throttled }));
const opts = { limit: 100, endpointCap: 10, excluded: false };

describe('whether a finished attempt should claim again', () => {
  it('no: the claim took fewer rows than any bound could have cut (everything due was taken)', () => {
    expect(mayHaveLeftRows(rows(0), opts)).toBe(false);
    expect(mayHaveLeftRows(rows(1), opts)).toBe(false);
    expect(mayHaveLeftRows(rows(9), opts)).toBe(false);
  });

  it("yes: the claim was full, or took an endpoint cap of rows, or hit a throttled endpoint's cap of one", () => {
    expect(mayHaveLeftRows(rows(100), opts)).toBe(true);
    expect(mayHaveLeftRows(rows(4), { ...opts, limit: 4 })).toBe(true);
    expect(mayHaveLeftRows(rows(10), opts)).toBe(true);
    expect(mayHaveLeftRows(rows(1, true), opts)).toBe(true);
  });

  it('yes: endpoints or Platforms at their cap were left out of the claim, even if it took nothing', () => {
    expect(mayHaveLeftRows(rows(0), { ...opts, excluded: true })).toBe(true);
  });
});

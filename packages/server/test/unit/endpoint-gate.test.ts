import { describe, expect, it } from 'vitest';
import { EndpointGate } from '../../src/delivery/endpoint-gate.ts';

/** The per-endpoint cap on manual attempts (Replay, Resend, bulk replay) in one process. */
describe('EndpointGate', () => {
  const tick = () => new Promise((r) => setImmediate(r));

  it('never runs more than `limit` tasks of one endpoint at once, runs the rest in order, and other endpoints independently', async () => {
    const gate = new EndpointGate(2);
    let open = 0;
    let max = 0;
    const order: number[] = [];
    const releases: Array<() => void> = [];
    const task = (i: number) => () => {
      open++;
      max = Math.max(max, open);
      order.push(i);
      return new Promise<void>((r) =>
        releases.push(() => {
          open--;
          r();
        }),
      );
    };
    const runs = [0, 1, 2, 3, 4].map((i) => gate.run('we_a', task(i)));
    const other = gate.run('we_b', async () => 'b');
    await tick();
    expect(order).toEqual([0, 1]);
    expect(gate.inFlight('we_a')).toBe(2);
    expect(await other).toBe('b');
    // A newcomer arriving while a slot is being handed over must not slip past the queue.
    releases.shift()!();
    const late = gate.run('we_a', task(5));
    await tick();
    expect(order).toEqual([0, 1, 2]);
    while (releases.length) {
      releases.shift()!();
      await tick();
    }
    await Promise.all([...runs, late]);
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
    expect(max).toBe(2);
    expect(gate.peak.get('we_a')).toBe(2);
    expect(gate.inFlight('we_a')).toBe(0);
  });

  it('a failing task frees its slot and its error reaches the caller', async () => {
    const gate = new EndpointGate(1);
    await expect(gate.run('we_a', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(gate.inFlight('we_a')).toBe(0);
    expect(await gate.run('we_a', async () => 7)).toBe(7);
  });
});

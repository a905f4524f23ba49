/**
 * A per-endpoint semaphore for manual attempts (replay, resend, bulk replay) in one process:
 * at most `limit` run at once for any one endpoint; the rest wait their turn in order. A
 * finishing attempt hands its slot straight to the next waiter, so a newcomer can't slip in
 * between and exceed the limit.
 */
export class EndpointGate {
  private readonly running = new Map<string, number>();
  private readonly waiting = new Map<string, Array<() => void>>();
  /** The most attempts seen in flight at once per endpoint (observability and tests). */
  readonly peak = new Map<string, number>();

  constructor(readonly limit: number) {}

  async run<T>(endpointId: string, fn: () => Promise<T>): Promise<T> {
    const current = this.running.get(endpointId) ?? 0;
    if (current >= this.limit) {
      await new Promise<void>((resolve) => this.waiting.set(endpointId, [...(this.waiting.get(endpointId) ?? []), resolve]));
    } else {
      this.running.set(endpointId, current + 1);
    }
    this.peak.set(endpointId, Math.max(this.running.get(endpointId)!, this.peak.get(endpointId) ?? 0));
    try {
      return await fn();
    } finally {
      const queue = this.waiting.get(endpointId);
      const next = queue?.shift();
      if (queue?.length === 0) this.waiting.delete(endpointId);
      if (next) next();
      else {
        const left = (this.running.get(endpointId) ?? 1) - 1;
        if (left <= 0) this.running.delete(endpointId);
        else this.running.set(endpointId, left);
      }
    }
  }

  inFlight(endpointId: string): number {
    return this.running.get(endpointId) ?? 0;
  }
}

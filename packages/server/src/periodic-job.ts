/**
 * A sweep that runs at start and then every `intervalMs` beside the delivery workers (checkout
 * expiry, auto-disable). One run at a time: the next is scheduled when the previous ends. A
 * failed run is reported and retried at the next interval; `stop()` waits for a run in progress.
 */
export class PeriodicJob {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> = Promise.resolve();
  private stopped = true;

  constructor(
    private readonly intervalMs: number,
    private readonly run: () => Promise<void>,
    private readonly onError: (err: unknown) => void,
  ) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    const tick = async () => {
      try {
        await this.run();
      } catch (err) {
        this.onError(err);
      }
      if (!this.stopped) this.timer = setTimeout(() => (this.running = tick()), this.intervalMs);
    };
    this.running = tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }
}

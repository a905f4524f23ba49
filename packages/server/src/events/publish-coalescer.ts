import type { Database } from '../db/client.ts';
import { isUnavailable } from '../db/faults.ts';
import { PUBLISH_BATCH_MAX, publishEventsAlone, type BatchEventInput, type PublishResult } from './publish.ts';

interface Waiting {
  input: BatchEventInput;
  resolve(result: PublishResult): void;
  reject(err: unknown): void;
}

/**
 * Publishes events that arrive one per request (`POST /internal/v1/events`) in shared
 * statements: group commit, done where the requests are. A publish starts at once when no
 * statement of this process is running; otherwise it waits for the running one to end, and the
 * next statement takes everything that waited (up to PUBLISH_BATCH_MAX). A lone request is
 * never delayed; under load, concurrent publishers share one statement, one round trip and one
 * WAL flush instead of paying BEGIN, the statement, COMMIT and a flush each
 * (bench/investigations/past-one-machine.md, "Publishing over HTTP"). One statement at a time
 * measured best: two halved the batches and cost more CPU per event.
 *
 * Each event keeps its own outcome (its own error, its own idempotency key). A transaction that
 * fails for something other than an unreachable database is tried again one event per
 * transaction, so a value PostgreSQL refuses in one request never fails the others.
 */
export class PublishCoalescer {
  private readonly waiting: Waiting[] = [];
  private running = 0;

  constructor(
    private readonly database: Database,
    private readonly now: () => Date,
    private readonly maxInFlight = 1,
  ) {}

  publish(input: BatchEventInput): Promise<PublishResult> {
    return new Promise<PublishResult>((resolve, reject) => {
      this.waiting.push({ input, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.running < this.maxInFlight && this.waiting.length > 0) {
      const batch = this.waiting.splice(0, PUBLISH_BATCH_MAX);
      this.running++;
      void this.flush(batch).finally(() => {
        this.running--;
        this.pump();
      });
    }
  }

  private async flush(batch: Waiting[]): Promise<void> {
    try {
      const outcomes = await publishEventsAlone(
        this.database,
        batch.map((w) => w.input),
        this.now(),
      );
      for (const [i, o] of outcomes.entries()) {
        if (o.ok) batch[i]!.resolve(o.result);
        else batch[i]!.reject(o.error);
      }
    } catch (err) {
      if (batch.length === 1 || isUnavailable(err)) {
        for (const w of batch) w.reject(err);
        return;
      }
      await Promise.all(batch.map((w) => this.flush([w])));
    }
  }
}

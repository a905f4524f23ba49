/**
 * Deadlines that all lie the same fixed delay after they are set, served by ONE timer.
 *
 * Every delivery attempt has the same deadline (and every response body the same grace), so
 * deadlines expire in the order they were set: a FIFO list is a sorted list. Setting one is an
 * append and cancelling one a flag (cancelled entries at the front are dropped at once), instead
 * of a `setTimeout`/`clearTimeout` pair per attempt. The timer is unref'd: it never keeps the
 * process alive on its own (the attempt's socket does while it runs).
 */
export interface Deadline {
  cancel(): void;
}

/** A class, not an object literal with a `cancel` closure: one allocation per deadline, not two. */
class Entry implements Deadline {
  next: Entry | null = null;

  constructor(
    readonly queue: DeadlineQueue,
    readonly at: number,
    public fire: (() => void) | null,
  ) {}

  cancel(): void {
    this.fire = null;
    this.queue.dropCancelled();
  }
}

export class DeadlineQueue {
  private head: Entry | null = null;
  private tail: Entry | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly delayMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Calls `fire` once `delayMs` from now, unless cancelled first. */
  add(fire: () => void): Deadline {
    const entry = new Entry(this, this.now() + this.delayMs, fire);
    if (this.tail) this.tail.next = entry;
    else this.head = entry;
    this.tail = entry;
    if (this.timer === null) this.arm();
    return entry;
  }

  /** Drops cancelled entries at the front (Entry.cancel). */
  dropCancelled(): void {
    while (this.head && this.head.fire === null) this.head = this.head.next;
    // The timer stays armed when the queue empties: it fires for nothing, once, instead of a
    // clearTimeout now and a new setTimeout for the next deadline. For the body grace, which
    // nearly every attempt sets and cancels within the same read, that pair was per attempt.
    // A timer armed earlier is never late for a deadline set later (they all have the same delay).
    if (this.head === null) this.tail = null;
  }

  private arm(): void {
    if (!this.head) return;
    this.timer = setTimeout(() => this.expire(), Math.max(0, this.head.at - this.now()));
    this.timer.unref();
  }

  private expire(): void {
    this.timer = null;
    // Node's timers count whole milliseconds and may fire a fraction of one before `at` by
    // performance.now(); re-arming for that fraction would let an equal timer set later (a
    // client library's own connect timeout) fire first.
    const now = this.now() + 1;
    while (this.head && (this.head.fire === null || this.head.at <= now)) {
      const entry = this.head;
      this.head = entry.next;
      if (this.head === null) this.tail = null;
      const fire = entry.fire;
      entry.fire = null;
      fire?.();
    }
    // `fire` may have added entries (and armed a timer) meanwhile.
    if (this.timer === null) this.arm();
  }
}

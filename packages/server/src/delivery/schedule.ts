import type { DeliveryState } from '../db/schema.ts';

/**
 * The retry schedule of spec 8 as a pure function. `delaysMs` holds the delays after failed
 * automatic attempts 1..n; total automatic attempts = delaysMs.length + 1 (8 with the spec's 7
 * delays). Kept free of I/O so it is tested exhaustively without a clock or a database.
 */
export interface Transition {
  state: DeliveryState;
  /** When the next automatic attempt is due; null when the delivery is finished. */
  nextAttemptAt: Date | null;
}

export function afterAutomaticAttempt(options: {
  succeeded: boolean;
  automaticAttemptsBefore: number;
  delaysMs: readonly number[];
  now: Date;
}): Transition {
  if (options.succeeded) return { state: 'delivered', nextAttemptAt: null };
  const made = options.automaticAttemptsBefore + 1;
  if (made >= options.delaysMs.length + 1) return { state: 'exhausted', nextAttemptAt: null };
  return { state: 'failed_retrying', nextAttemptAt: new Date(options.now.getTime() + options.delaysMs[made - 1]!) };
}

/**
 * A claimed delivery before anything is sent. An automatic attempt interrupted by a worker that
 * stopped (its lease taken over, interrupted.ts) may have reached the receiver, so it counts
 * toward the 8 like any other automatic attempt, and the next one keeps the schedule's delay
 * after it: never a 9th request, never a retry earlier than the schedule says.
 *
 * `automaticAttempts` already counts the interrupted attempt; `interruptedAt` is when its lease
 * was taken (null: no automatic attempt was interrupted). Returns the step to record without a
 * request (`exhausted`, or a retry still ahead), or null to attempt now.
 */
export function beforeAutomaticAttempt(options: {
  automaticAttempts: number;
  interruptedAt: Date | null;
  delaysMs: readonly number[];
  now: Date;
}): Transition | null {
  const { automaticAttempts, interruptedAt, delaysMs, now } = options;
  if (automaticAttempts >= delaysMs.length + 1) return { state: 'exhausted', nextAttemptAt: null };
  if (interruptedAt === null || automaticAttempts < 1) return null;
  const due = new Date(interruptedAt.getTime() + delaysMs[automaticAttempts - 1]!);
  return due > now ? { state: 'failed_retrying', nextAttemptAt: due } : null;
}

/**
 * A manual replay (spec 3.2, 8) is an extra attempt outside the automatic budget: a 2xx makes
 * the delivery `delivered` and cancels the remaining schedule; a failure leaves the state and
 * the schedule as they were (`failed_retrying` keeps its next retry, `exhausted` stays
 * `exhausted`). See docs/decisions/delivery-engine.md.
 */
export function afterManualAttempt(options: { succeeded: boolean; state: DeliveryState; nextAttemptAt: Date | null }): Transition {
  if (options.succeeded) return { state: 'delivered', nextAttemptAt: null };
  return { state: options.state, nextAttemptAt: options.nextAttemptAt };
}

/** States a merchant may replay from the portal (spec 3.2). */
export const REPLAYABLE_STATES: readonly DeliveryState[] = ['failed_retrying', 'exhausted'];

/** States a merchant may resend from the portal: a manual attempt that leaves them `delivered`. */
export const RESENDABLE_STATES: readonly DeliveryState[] = ['delivered'];

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

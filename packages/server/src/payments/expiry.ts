import type { Logger } from 'pino';
import type { Database } from '../db/client.ts';
import type { CheckoutService } from './checkout.ts';
import { PeriodicJob } from '../periodic-job.ts';

/** Sessions expired per transaction. */
const BATCH = 100;

/**
 * Expires open checkout sessions whose `expires_at` has passed, with their payments. Run by
 * every worker process; each session is expired exactly once because a batch locks its rows
 * with `FOR UPDATE SKIP LOCKED` (a second worker skips them) and `finish` only moves a row that
 * is still `open` (a worker that read it before the first committed changes nothing).
 * Returns how many sessions this call expired.
 */
export async function expireDueSessions(database: Database, checkout: CheckoutService): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await database.db.transaction(async (tx) => {
      const due = await checkout.lockDue(tx, BATCH);
      for (const session of due) await checkout.expireLocked(tx, session);
      return due.length;
    });
    total += n;
    if (n < BATCH) return total;
  }
}

/** Runs `expireDueSessions` every `intervalMs` (at most a minute, so expiry is never later than that). */
export class ExpiryJob extends PeriodicJob {
  constructor(deps: { database: Database; checkout: CheckoutService; logger: Logger; intervalMs: number }) {
    super(
      deps.intervalMs,
      async () => {
        const n = await expireDueSessions(deps.database, deps.checkout);
        if (n > 0) deps.logger.info({ expired: n }, 'checkout sessions expired');
      },
      (err) => deps.logger.error({ err }, 'checkout session expiry failed; retrying at the next interval'),
    );
  }
}

import type { Logger } from 'pino';
import type { Database } from './client.ts';
import { refusedConnection, unreachable } from './connect-errors.ts';
import { describeDbError, isUnavailable } from './faults.ts';

/** Delay before try `n + 1` of the start-up wait: 250 ms doubling to at most 5 s. */
export function startupBackoffMs(attempt: number): number {
  return Math.min(5_000, 250 * 2 ** Math.min(attempt, 10));
}

/**
 * Waits for the database to answer before a command uses it, so `serve` and `worker` started
 * before PostgreSQL (a fresh deploy, a host reboot) come up on their own. Each failed try logs
 * one line with the reason and the next delay; after `maxWaitMs` it gives up with a ConfigError
 * that says what to check (db/connect-errors.ts). Errors that waiting can't fix (wrong password, no such database)
 * fail at once.
 */
export async function waitForDatabase(
  database: Database,
  options: {
    maxWaitMs: number;
    logger: Logger;
    sleep?: (ms: number) => Promise<void> /** Named (without its password) in the error. */;
    url?: string | undefined;
  },
): Promise<void> {
  if (database.kind !== 'postgres') return;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const started = Date.now();
  for (let attempt = 0; ; attempt++) {
    try {
      await database.query('SELECT 1', [], 'wait_for_database');
      if (attempt > 0) options.logger.info({ attempts: attempt + 1, waitedMs: Date.now() - started }, 'database reachable');
      return;
    } catch (err) {
      if (!isUnavailable(err)) throw refusedConnection(err, options.url);
      const waited = Date.now() - started;
      const delay = Math.min(startupBackoffMs(attempt), Math.max(0, options.maxWaitMs - waited));
      if (waited >= options.maxWaitMs || delay === 0) throw unreachable(err, options.url, waited);
      // One line per try: the reason, never a stack (it is always the same, and docs/operations.md
      // promises stacks at debug only).
      const summary = describeDbError(err);
      options.logger.warn(
        {
          reason: summary?.message ?? (err as Error).message,
          code: summary?.code,
          attempt: attempt + 1,
          retryInMs: delay,
          waitedMs: waited,
        },
        'database not reachable yet; waiting for it',
      );
      options.logger.debug({ err }, 'database not reachable yet: the error');
      await sleep(delay);
    }
  }
}

import type { Logger } from 'pino';
import { ConfigError } from '../errors.ts';
import type { Database } from './client.ts';
import { dbErrorCode, isUnavailable } from './faults.ts';

/** Delay before try `n + 1` of the start-up wait: 250 ms doubling to at most 5 s. */
export function startupBackoffMs(attempt: number): number {
  return Math.min(5_000, 250 * 2 ** Math.min(attempt, 10));
}

/**
 * Waits for the database to answer before a command uses it, so `serve` and `worker` started
 * before PostgreSQL (a fresh deploy, a host reboot) come up on their own. Each failed try logs
 * one line with the reason and the next delay; after `maxWaitMs` it gives up with a ConfigError
 * that says what to check. Errors that waiting can't fix (wrong password, no such database)
 * fail at once.
 */
export async function waitForDatabase(database: Database, options: { maxWaitMs: number; logger: Logger; sleep?: (ms: number) => Promise<void> }): Promise<void> {
  if (database.kind !== 'postgres') return;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const started = Date.now();
  for (let attempt = 0; ; attempt++) {
    try {
      await database.query('SELECT 1', [], 'wait_for_database');
      if (attempt > 0) options.logger.info({ attempts: attempt + 1, waitedMs: Date.now() - started }, 'database reachable');
      return;
    } catch (err) {
      const code = dbErrorCode(err);
      if (!isUnavailable(err)) {
        throw new ConfigError(
          `The database refused the connection${code ? ` (SQLSTATE ${code})` : ''}: check the user, password and database name in DATABASE_URL.`,
        );
      }
      const waited = Date.now() - started;
      const delay = Math.min(startupBackoffMs(attempt), Math.max(0, options.maxWaitMs - waited));
      if (waited >= options.maxWaitMs || delay === 0) {
        throw new ConfigError(
          `The database is not reachable (${code ?? 'no answer'}) after ${Math.round(waited / 1000)} s: check that PostgreSQL is running and DATABASE_URL points at it, or wait longer with PAYHOOKS_DB_WAIT.`,
        );
      }
      options.logger.warn({ err, attempt: attempt + 1, retryInMs: delay, waitedMs: waited }, 'database not reachable yet; waiting for it');
      await sleep(delay);
    }
  }
}

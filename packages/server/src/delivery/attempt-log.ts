import type { Logger } from 'pino';
import type { AttemptResult } from './destinations/attempt.ts';

export interface AttemptLogEntry {
  eventType: string;
  eventId: string;
  deliveryId: string;
  endpointId: string;
  url: string;
  attempt: number;
  result: AttemptResult;
  nextAttemptAt: Date | null;
  /** Manual attempts (replay, resend) say so; automatic ones are the default. */
  trigger?: 'automatic' | 'manual';
}

/**
 * One log line per attempt, so a developer sees every delivery as it happens: in development
 * mode at `info` (pretty-printed by pino-pretty), in production at `debug` (JSON, same fields),
 * where it would otherwise be one line per webhook at the default level.
 *
 * The URL is logged without its query string: a receiver URL may carry a token there.
 */
export function logAttempt(logger: Logger, level: 'info' | 'debug', entry: AttemptLogEntry): void {
  // The common production case (debug off): don't build a line nobody writes, once per attempt.
  if (!logger.isLevelEnabled(level)) return;
  const { result } = entry;
  const url = entry.url.split('?')[0]!;
  const outcome = result.statusCode !== null ? String(result.statusCode) : (result.errorKind ?? 'error');
  const next = entry.nextAttemptAt
    ? `next attempt ${entry.nextAttemptAt.toISOString()}`
    : result.succeeded
      ? 'delivered'
      : 'no attempt left';
  logger[level](
    {
      attempt_log: true,
      event_type: entry.eventType,
      event_id: entry.eventId,
      delivery_id: entry.deliveryId,
      endpoint_id: entry.endpointId,
      endpoint_url: url,
      attempt: entry.attempt,
      trigger: entry.trigger ?? 'automatic',
      succeeded: result.succeeded,
      status_code: result.statusCode,
      error: result.errorKind,
      duration_ms: result.durationMs,
      next_attempt_at: entry.nextAttemptAt?.toISOString() ?? null,
    },
    `${entry.trigger === 'manual' ? 'manual ' : ''}${entry.eventType} ${entry.eventId} -> ${entry.endpointId} ${url}: ${outcome} in ${result.durationMs} ms, ${next}`,
  );
}

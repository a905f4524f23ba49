import { pino, type Logger } from 'pino';
import type { Config } from './config.ts';
import { describeDbError } from './db/faults.ts';

/**
 * The `err` serializer of every logger (the service's, Fastify's request loggers, the
 * workers'). A database error becomes `{type, statement, code, message, stack}`: drizzle's
 * message and `params` (every bound value: API-key hashes, URLs, metadata, ciphertext) and the
 * server's `detail` never reach a log line. Other errors keep pino's standard shape.
 */
export function serializeError(err: unknown): unknown {
  const db = describeDbError(err);
  if (!db) return err instanceof Error ? pino.stdSerializers.err(err) : err;
  const stack = err instanceof Error && typeof err.stack === 'string' ? err.stack.split('\n').filter((l) => /^\s+at /.test(l)) : [];
  return { ...db, stack: [`${db.type}: ${db.message}`, ...stack].join('\n') };
}

export function createLogger(config: Pick<Config, 'logLevel'>, destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level: config.logLevel,
    serializers: { err: serializeError },
    redact: { paths: ['req.headers.authorization', '*.secret', 'secret'], censor: '[redacted]' },
  };
  return destination ? pino(options, destination) : pino(options);
}

import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';
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

/**
 * Fastify's request line without the query string: query parameters (cursors, filters, and
 * whatever a client puts there) stay out of the logs like SQL parameters do.
 */
export function serializeRequest(req: {
  method?: string;
  url?: string;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}): unknown {
  return { method: req.method, url: req.url?.split('?')[0], host: req.host, remoteAddress: req.ip, remotePort: req.socket?.remotePort };
}

/** Fields of the attempt line (delivery/attempt-log.ts) that its pretty message already says. */
const ATTEMPT_FIELDS =
  'attempt_log,event_type,event_id,delivery_id,endpoint_id,endpoint_url,attempt,succeeded,status_code,error,duration_ms,next_attempt_at';

/** Fields of the request line (api/app.ts) that its message already says. */
const REQUEST_FIELDS = 'http_method,http_path,http_status,reqId';

/** The audit line's entry (audit/trail.ts): its message says who did what; the JSON of production has it whole. */
const AUDIT_FIELDS = 'audit';

/**
 * The service's logger. Production (the default): JSON lines. Development mode (`dev`):
 * human-readable lines through pino-pretty, written synchronously to `destination` (stdout
 * unless given), with the attempt line's structured fields folded into its message.
 */
export function createLogger(config: Pick<Config, 'logLevel'> & { dev?: boolean }, destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level: config.logLevel,
    serializers: { err: serializeError, req: serializeRequest },
    hooks: {
      // `logger.error(err)` makes the error's message the log message: for a database error
      // that message is drizzle's, with every parameter in it, so ours replaces it.
      logMethod(args, method) {
        const [first, second] = args as unknown[];
        if (first instanceof Error && typeof second !== 'string') {
          const db = describeDbError(first);
          if (db) return method.apply(this, [first, db.message] as never);
        }
        return method.apply(this, args);
      },
    },
    redact: { paths: ['req.headers.authorization', '*.secret', 'secret'], censor: '[redacted]' },
  };
  if (config.dev) {
    const out = destination ?? 1;
    const colorize = typeof out === 'number' ? Boolean(process.stdout.isTTY) : false;
    return pino(
      options,
      pretty({
        destination: out as never,
        sync: true,
        colorize,
        translateTime: 'SYS:HH:MM:ss.l',
        ignore: `pid,hostname,${ATTEMPT_FIELDS},${REQUEST_FIELDS},${AUDIT_FIELDS}`,
      }),
    );
  }
  return destination ? pino(options, destination) : pino(options);
}

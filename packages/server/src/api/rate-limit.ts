import type { FastifyInstance, FastifyRequest } from 'fastify';
import rateLimit from '@fastify/rate-limit';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { AppError, ConfigError } from '../errors.ts';

/** A limit as configured: `perSecond` on average, at most `burst` at once. */
export interface LimitRule {
  perSecond: number;
  burst: number;
}

/**
 * @fastify/rate-limit counts requests in fixed windows. A rule becomes `burst` requests per
 * window of `burst / perSecond` seconds: the same long-run rate, and the same burst from a
 * standing start (PAYHOOKS_RATE_LIMIT=100, _BURST=200: 200 requests per 2 s window).
 */
export function fixedWindow(rule: LimitRule): { max: number; timeWindowMs: number } {
  return { max: rule.burst, timeWindowMs: Math.max(1, Math.round((rule.burst / rule.perSecond) * 1000)) };
}

/** Takes one request from the limit for `req`, or throws a 429 with Retry-After. */
export type Limit = (req: FastifyRequest) => Promise<void>;

export interface RateLimits {
  /**
   * A limit named `name` (keys of different limits never mix), counted per `keyOf(req)`;
   * `tooMany` starts the 429's message, saying what was limited.
   */
  limit(name: string, rule: LimitRule, keyOf: (req: FastifyRequest) => string, tooMany: string): Limit;
  /** `redis` when the counters are shared through PAYHOOKS_REDIS_URL, else `memory` (per process). */
  readonly store: 'redis' | 'memory';
}

declare module 'fastify' {
  interface FastifyInstance {
    rateLimits: RateLimits;
  }
}

/** Where to reach Redis, without the password the URL may hold (for messages and logs). */
export function redisAddress(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.hostname}:${u.port || '6379'}${u.pathname.length > 1 ? u.pathname : ''}`;
  } catch {
    return '(unparsable URL)';
  }
}

/**
 * Connects to the Redis that shares the counters between API processes. Unreachable at start is
 * a start-up failure (exit 1 with what to do): an operator who set PAYHOOKS_REDIS_URL asked
 * for one limit across processes, and silently running N separate limits would multiply it.
 */
export async function connectRedis(url: string, logger: Logger): Promise<Redis> {
  const redis = new Redis(url, {
    lazyConnect: true,
    // A request must not wait for Redis to come back: commands fail at once while it is away
    // (the limit then lets the request through, see `limit`), and reconnection runs behind.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 5_000,
  });
  let lastLogged = 0;
  redis.on('error', (err: Error) => {
    if (Date.now() - lastLogged < 10_000) return;
    lastLogged = Date.now();
    logger.warn({ redis: redisAddress(url), err: err.message }, 'rate-limit Redis unreachable; reconnecting');
  });
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    redis.disconnect();
    throw new ConfigError(
      `Cannot reach Redis at ${redisAddress(url)} (PAYHOOKS_REDIS_URL): ${(err as Error).message}. ` +
        'Start Redis or correct PAYHOOKS_REDIS_URL; unset it to rate-limit each API process on its own.',
    );
  }
  return redis;
}

/**
 * Registers @fastify/rate-limit for the whole app (nothing is limited until a route asks) and
 * decorates `app.rateLimits`. With `redis` the counters live in Redis, so every API process
 * shares one limit per key; without it each process counts in its own memory.
 */
export async function installRateLimits(app: FastifyInstance, options: { redis: Redis | null; logger: Logger }): Promise<RateLimits> {
  await app.register(rateLimit, {
    global: false,
    ...(options.redis ? { redis: options.redis, nameSpace: 'payhooks:rate-limit:' } : {}),
  });
  let lastWarned = 0;
  const limits: RateLimits = {
    store: options.redis ? 'redis' : 'memory',
    limit(name, rule, keyOf, tooMany) {
      const { max, timeWindowMs } = fixedWindow(rule);
      const check = app.createRateLimit({
        max,
        timeWindow: timeWindowMs,
        keyGenerator: (req) => `${name}:${keyOf(req)}`,
        // Bound memory under key churn (the per-process store only).
        cache: 100_000,
      } as Parameters<typeof app.createRateLimit>[0]);
      return async (req) => {
        let result: Awaited<ReturnType<typeof check>>;
        try {
          result = await check(req);
        } catch (err) {
          // Redis went away after start: serve the request unlimited rather than fail the API
          // (docs/decisions/rate-limits.md), and say so at most every 10 s.
          if (Date.now() - lastWarned > 10_000) {
            lastWarned = Date.now();
            options.logger.warn({ err: (err as Error).message, limit: name }, 'rate limit not applied: its Redis store failed');
          }
          return;
        }
        if (result.isAllowed || !result.isExceeded) return;
        const wait = Math.max(1, result.ttlInSeconds);
        throw new AppError('rate_limited', 'rate_limited', `${tooMany}; retry after ${wait} s.`, {
          headers: { 'retry-after': String(wait) },
        });
      };
    },
  };
  app.decorate('rateLimits', limits);
  return limits;
}

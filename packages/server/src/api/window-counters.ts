import { createHash } from 'node:crypto';
import { runAlone, statement } from '../db/statement.ts';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Database } from '../db/client.ts';

const HIT = statement<{ key: string; window_ms: number }, { count: number; reset_in_ms: number }>(
  'hit_rate_limit_counter',
  `INSERT INTO rate_limit_counters AS c (key, count, reset_at)
   VALUES (:key, 1, now() + :window_ms::float8 * interval '1 millisecond')
   ON CONFLICT (key) DO UPDATE SET
     count = CASE WHEN c.reset_at <= now() THEN 1 ELSE c.count + 1 END,
     reset_at = CASE WHEN c.reset_at <= now() THEN EXCLUDED.reset_at ELSE c.reset_at END
   RETURNING count, ceil(extract(epoch FROM reset_at - now()) * 1000)::bigint AS reset_in_ms`,
);

/**
 * Fixed-window request counters shared by every API process, for the limits that must hold across
 * them (portal sign-in): in Redis when PAYHOOKS_REDIS_URL is set, else in PostgreSQL
 * (`rate_limit_counters`, migration 0011), and in memory only on the embedded database, which one
 * process owns anyway.
 */
export interface WindowCounters {
  /** Counts one request for `key` in a window of `windowMs`; the count so far and when the window ends. */
  hit(key: string, windowMs: number): Promise<{ count: number; resetInMs: number }>;
  readonly store: 'redis' | 'postgres' | 'memory';
}

/**
 * Keys name what is counted (an email, an address): stored as a digest, so the counters hold no
 * email address in clear.
 */
export function counterKey(limit: string, ...parts: string[]): string {
  return `${limit}:${createHash('sha256').update(parts.join('\0')).digest('base64url').slice(0, 22)}`;
}

export function memoryCounters(now: () => number = Date.now): WindowCounters {
  const windows = new Map<string, { count: number; resetAt: number }>();
  let lastSweep = now();
  return {
    store: 'memory',
    async hit(key, windowMs) {
      const t = now();
      // Bound memory under key churn: expired windows go at most once a minute.
      if (t - lastSweep > 60_000) {
        lastSweep = t;
        for (const [k, w] of windows) if (w.resetAt <= t) windows.delete(k);
      }
      let w = windows.get(key);
      if (!w || w.resetAt <= t) {
        w = { count: 0, resetAt: t + windowMs };
        windows.set(key, w);
      }
      w.count++;
      return { count: w.count, resetInMs: w.resetAt - t };
    },
  };
}

// INCR, and start the window's expiry with its first request (or repair a key left without one).
const REDIS_HIT = `
local n = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if n == 1 or ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {n, ttl}`;

/**
 * Redis counters. If Redis stops answering after start, the limits fall back to this process's
 * memory (never to no limit) and say so at most every 10 s.
 */
export function redisCounters(redis: Redis, logger: Logger): WindowCounters {
  const fallback = memoryCounters();
  let lastWarned = 0;
  return {
    store: 'redis',
    async hit(key, windowMs) {
      try {
        const [count, ttl] = (await redis.eval(REDIS_HIT, 1, `payhooks:window:${key}`, windowMs)) as [number, number];
        return { count, resetInMs: ttl };
      } catch (err) {
        if (Date.now() - lastWarned > 10_000) {
          lastWarned = Date.now();
          logger.warn({ err: (err as Error).message }, 'shared limit counters unreachable in Redis; counting in this process meanwhile');
        }
        return fallback.hit(key, windowMs);
      }
    },
  };
}

/**
 * PostgreSQL counters: one upsert per request, on an UNLOGGED table. Rows of ended windows are
 * deleted by the process that notices, at most once a minute.
 */
export function postgresCounters(database: Database, logger: Logger): WindowCounters {
  let lastSweep = 0;
  return {
    store: 'postgres',
    async hit(key, windowMs) {
      if (Date.now() - lastSweep > 60_000) {
        lastSweep = Date.now();
        database
          .query('DELETE FROM rate_limit_counters WHERE reset_at < now()', [], 'purge_rate_limit_counters')
          .catch((err: unknown) => logger.warn({ err }, 'purging ended limit windows failed; next try in a minute'));
      }
      const [row] = await runAlone(database, HIT, { key, window_ms: windowMs });
      return { count: row!.count, resetInMs: Math.max(0, row!.reset_in_ms) };
    },
  };
}

/** Redis when configured, else PostgreSQL, else (the embedded database) this process's memory. */
export function sharedCounters(options: { redis: Redis | null; database: Database; logger: Logger }): WindowCounters {
  if (options.redis) return redisCounters(options.redis, options.logger);
  if (options.database.kind === 'postgres') return postgresCounters(options.database, options.logger);
  return memoryCounters();
}

import { randomBytes } from 'node:crypto';
import { runAlone, statement } from '../db/statement.ts';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Database } from '../db/client.ts';
import { EndpointGate } from './endpoint-gate.ts';

/**
 * Where the slots of the shared per-endpoint cap live. `tryAcquire` takes one of `limit` slots
 * for `holder` until `ttlMs` from now (the store's clock, one for every process), or answers
 * false when all are held; `release` gives it back.
 */
export interface SlotStore {
  readonly name: 'postgres' | 'redis';
  tryAcquire(endpointId: string, holder: string, limit: number, ttlMs: number): Promise<boolean>;
  release(endpointId: string, holder: string): Promise<void>;
}

const SLOT_ACQUIRE = statement<{ endpoint_id: string; holder: string; limit: number; ttl_ms: number }, { slot: number }>(
  'manual_slot_acquire',
  `WITH free AS (
     SELECT s FROM generate_series(0, :limit::int - 1) AS s
     WHERE NOT EXISTS (SELECT 1 FROM manual_attempt_slots m WHERE m.endpoint_id = :endpoint_id AND m.slot = s AND m.expires_at > now())
     ORDER BY random() LIMIT 1
   )
   INSERT INTO manual_attempt_slots (endpoint_id, slot, holder, expires_at)
   SELECT :endpoint_id, s, :holder, now() + :ttl_ms::int * interval '1 millisecond' FROM free
   ON CONFLICT (endpoint_id, slot) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
     WHERE manual_attempt_slots.expires_at <= now()
   RETURNING slot`,
);
const SLOT_RELEASE = statement<{ endpoint_id: string; holder: string }, never>(
  'manual_slot_release',
  'DELETE FROM manual_attempt_slots WHERE endpoint_id = :endpoint_id AND holder = :holder',
);

/**
 * Slots as rows of `manual_attempt_slots` (migration 0014): a free slot is one with no row, or
 * whose row's lease ran out. Two processes taking the same slot at once meet on its primary
 * key: one inserts, the other's ON CONFLICT finds a live slot and returns nothing (it tries
 * again). PostgreSQL's clock decides what has expired, so process clocks need not agree.
 */
export class PostgresSlots implements SlotStore {
  readonly name = 'postgres';
  constructor(private readonly database: Database) {}

  async tryAcquire(endpointId: string, holder: string, limit: number, ttlMs: number): Promise<boolean> {
    const rows = await runAlone(this.database, SLOT_ACQUIRE, { endpoint_id: endpointId, holder, limit, ttl_ms: ttlMs });
    return rows.length > 0;
  }

  async release(endpointId: string, holder: string): Promise<void> {
    await runAlone(this.database, SLOT_RELEASE, { endpoint_id: endpointId, holder });
  }
}

/**
 * Slots as the members of a sorted set per endpoint, scored by their expiry; one Lua script
 * drops the expired ones and adds the holder if fewer than `limit` remain, on Redis's own clock.
 * (10 lines of Lua rather than a semaphore library, so both stores share the waiting below.)
 */
export class RedisSlots implements SlotStore {
  readonly name = 'redis';
  private static readonly ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
  return 1
end
return 0`;

  constructor(private readonly redis: Redis) {}

  private key(endpointId: string): string {
    return `payhooks:manual-attempts:${endpointId}`;
  }

  async tryAcquire(endpointId: string, holder: string, limit: number, ttlMs: number): Promise<boolean> {
    return (await this.redis.eval(RedisSlots.ACQUIRE, 1, this.key(endpointId), limit, ttlMs, holder)) === 1;
  }

  async release(endpointId: string, holder: string): Promise<void> {
    await this.redis.zrem(this.key(endpointId), holder);
  }
}

/** Waits between tries when every slot is held elsewhere: 25 ms doubling to 250 ms, with jitter. */
const pollMs = (attempt: number) => {
  const base = Math.min(250, 25 * 2 ** Math.min(attempt, 4));
  return Math.round(base / 2 + Math.random() * (base / 2));
};

/**
 * The per-endpoint cap on manual attempts counted across every API process: an attempt first
 * passes this process's own gate (so a process never asks for more slots than the cap), then
 * takes a slot from the shared store, waiting while all are held by attempts anywhere. A slot
 * whose process died frees itself when its lease (`ttlMs`, longer than any attempt) runs out.
 *
 * If the store can't be reached (Redis or PostgreSQL away), the attempt runs under this
 * process's gate alone and a warning is logged at most every 10 s: the cap then holds per
 * process, as it did before it was shared, rather than stopping every manual attempt.
 */
export class SharedEndpointGate {
  private readonly local: EndpointGate;
  private readonly process = randomBytes(6).toString('hex');
  private readonly released = new Map<string, Set<() => void>>();
  private lastWarned = 0;

  constructor(
    readonly limit: number,
    private readonly store: SlotStore,
    private readonly ttlMs: number,
    private readonly logger: Logger,
  ) {
    this.local = new EndpointGate(limit);
  }

  /** The most attempts this process had in flight at once per endpoint (observability and tests). */
  get peak(): Map<string, number> {
    return this.local.peak;
  }

  run<T>(endpointId: string, fn: () => Promise<T>): Promise<T> {
    return this.local.run(endpointId, async () => {
      const holder = `${this.process}:${randomBytes(6).toString('hex')}`;
      const held = await this.acquire(endpointId, holder);
      try {
        return await fn();
      } finally {
        if (held) {
          await this.store.release(endpointId, holder).catch((err: unknown) => this.warn(err));
          for (const wake of this.released.get(endpointId) ?? []) wake();
        }
      }
    });
  }

  /** True once a slot is held; false when the store failed (run under the local gate only). */
  private async acquire(endpointId: string, holder: string): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      try {
        if (await this.store.tryAcquire(endpointId, holder, this.limit, this.ttlMs)) return true;
      } catch (err) {
        this.warn(err);
        return false;
      }
      // A slot freed in this process wakes its waiters at once; other processes' are polled for.
      await new Promise<void>((resolve) => {
        const waiters = this.released.get(endpointId) ?? new Set<() => void>();
        this.released.set(endpointId, waiters);
        const done = () => {
          clearTimeout(timer);
          waiters.delete(done);
          if (waiters.size === 0) this.released.delete(endpointId);
          resolve();
        };
        const timer = setTimeout(done, pollMs(attempt));
        waiters.add(done);
      });
    }
  }

  private warn(err: unknown): void {
    if (Date.now() - this.lastWarned < 10_000) return;
    this.lastWarned = Date.now();
    this.logger.warn(
      { err, store: this.store.name },
      'the shared per-endpoint cap on manual attempts is unreachable; this process caps its own attempts until it is back',
    );
  }
}

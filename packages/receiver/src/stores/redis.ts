import { DEDUP_RETENTION_MS, type WebhookEvent } from '@payhooks/contract';
import { CreditInProgressError } from '../errors.ts';
import {
  checkPaymentId,
  checkRetention,
  randomToken,
  type Claim,
  type CreditResult,
  type CreditStore,
  type WebhookStore,
} from './types.ts';

/** The part of an ioredis client the store uses (`new Redis(url)` or a Cluster). */
export interface RedisLike {
  // biome-ignore lint/suspicious/noExplicitAny: ioredis types set() as many overloads; only a rest of any fits them all
  set(key: string, value: string, ...args: any[]): Promise<unknown>;
  get(key: string): Promise<string | null>;
  eval(script: string, numKeys: number, ...args: Array<string | number>): Promise<unknown>;
}

export interface RedisStoreOptions {
  /** An ioredis client. */
  client: RedisLike;
  /** Prefix of every key. Default `payhooks:`. */
  prefix?: string;
  /** How long a done id is kept. At least, and by default, 30 days (spec 8). */
  retentionMs?: number;
  /** How long `creditOnce` waits for a concurrent credit of the same payment. Default 10 s. */
  creditWaitMs?: number;
}

export interface RedisStore extends WebhookStore, CreditStore<void> {
  readonly durable: false;
  /** The key holding an event id's state. */
  eventKey(eventId: string): string;
  /** The key holding a payment's credit marker. */
  creditKey(paymentId: string): string;
}

// Compare-and-set on the holder's token, so a holder whose lease expired cannot undo a newer claim.
const COMPLETE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('SET', KEYS[1], 'done', 'PX', ARGV[2]) end return 0`;
const EXTEND = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;
const DELETE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Redis store (ioredis): `SET key NX PX` is the insert-or-ignore, atomic under concurrent
 * duplicates and across processes. Keys expire by themselves: `processing` after the lease (so
 * work lost with a dead process is not acknowledged as a duplicate forever), `done` after the
 * retention. Not durable for the work itself: run Redis with persistence and a non-evicting policy
 * (`noeviction` or `volatile-*` with room), or seen ids may vanish early.
 *
 * `creditOnce` marks the payment with `SET NX` (no expiry) before `fn` and `done` after it. The
 * marker is not in the same transaction as your ledger: if the process dies inside `fn`, the
 * payment stays `pending:…` and every later `creditOnce` for it throws CreditInProgressError (never
 * a second credit) until you check the ledger and delete or set the key by hand.
 */
export function redisStore(options: RedisStoreOptions): RedisStore {
  const redis = options.client;
  if (!redis || typeof redis.set !== 'function' || typeof redis.eval !== 'function') {
    throw new TypeError('payhooks: redisStore needs `client`, an ioredis client');
  }
  const prefix = options.prefix ?? 'payhooks:';
  const retentionMs = checkRetention(options.retentionMs ?? DEDUP_RETENTION_MS, DEDUP_RETENTION_MS);
  const creditWaitMs = options.creditWaitMs ?? 10_000;
  const eventKey = (id: string) => `${prefix}event:${id}`;
  const creditKey = (id: string) => `${prefix}credit:${id}`;
  const holding = (claim: Claim) => `processing:${claim.token}`;

  return {
    durable: false,
    eventKey,
    creditKey,

    async claim(event: WebhookEvent, leaseMs: number) {
      const claim: Claim = { eventId: event.id, token: randomToken(), attempt: 1 };
      const ok = await redis.set(eventKey(event.id), holding(claim), 'PX', Math.ceil(leaseMs), 'NX');
      return ok === 'OK' ? claim : null;
    },

    async complete(claim) {
      await redis.eval(COMPLETE, 1, eventKey(claim.eventId), holding(claim), Math.ceil(retentionMs));
    },

    async retryLater(claim, delayMs, leaseMs) {
      await redis.eval(EXTEND, 1, eventKey(claim.eventId), holding(claim), Math.ceil(delayMs + leaseMs));
    },

    async release(claim) {
      await redis.eval(DELETE, 1, eventKey(claim.eventId), holding(claim));
    },

    async creditOnce<T>(paymentId: string, fn: () => T | Promise<T>): Promise<CreditResult<T>> {
      checkPaymentId(paymentId);
      const key = creditKey(paymentId);
      const deadline = Date.now() + creditWaitMs;
      let pause = 10;
      for (;;) {
        const mine = `pending:${randomToken()}`;
        if ((await redis.set(key, mine, 'NX')) === 'OK') {
          let value: T;
          try {
            value = await fn();
          } catch (error) {
            await redis.eval(DELETE, 1, key, mine);
            throw error;
          }
          await redis.set(key, 'done');
          return { credited: true, value };
        }
        const current = await redis.get(key);
        if (current === 'done') return { credited: false };
        if (current !== null) {
          // Another caller is crediting this payment: wait for its outcome.
          if (Date.now() >= deadline) throw new CreditInProgressError(paymentId);
          await sleep(pause);
          pause = Math.min(pause * 2, 200);
        }
      }
    },
  };
}

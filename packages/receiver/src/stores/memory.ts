import { DEDUP_RETENTION_MS, type WebhookEvent } from '@payhooks/contract';
import {
  checkPaymentId,
  checkRetention,
  randomToken,
  type Claim,
  type CreditResult,
  type CreditStore,
  type WebhookStore,
} from './types.ts';

export interface MemoryStoreOptions {
  /** How long a done id is remembered. At least, and by default, 30 days (spec 8). */
  retentionMs?: number;
  /** Clock in epoch ms, for tests. */
  now?: () => number;
}

interface Entry {
  state: 'processing' | 'done';
  token: string;
  attempt: number;
  expiresAt: number;
}

export interface MemoryStore extends WebhookStore, CreditStore<void> {
  readonly durable: false;
  /** Deletes ids past retention and expired leases; returns how many. */
  purge(): Promise<number>;
  /** Number of ids held (including expired ones not yet purged). */
  readonly size: number;
}

/**
 * In-process store: for tests, development and single-process receivers. It is lost when the
 * process exits and is not shared between processes: use the PostgreSQL or Redis store in
 * production. Safe under concurrent duplicates within the process (the check-and-set is synchronous).
 */
export function memoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  const retentionMs = checkRetention(options.retentionMs ?? DEDUP_RETENTION_MS, DEDUP_RETENTION_MS);
  const now = options.now ?? Date.now;
  const events = new Map<string, Entry>();
  const credits = new Map<string, 'done' | Promise<unknown>>();

  const owned = (claim: Claim): Entry | undefined => {
    const entry = events.get(claim.eventId);
    return entry && entry.token === claim.token && entry.state === 'processing' ? entry : undefined;
  };

  return {
    durable: false,
    get size() {
      return events.size;
    },

    async claim(event: WebhookEvent, leaseMs: number): Promise<Claim | null> {
      const existing = events.get(event.id);
      const t = now();
      if (existing && existing.expiresAt > t) return null;
      const claim: Claim = { eventId: event.id, token: randomToken(), attempt: 1 };
      events.set(event.id, { state: 'processing', token: claim.token, attempt: 1, expiresAt: t + leaseMs });
      return claim;
    },

    async complete(claim) {
      const entry = owned(claim);
      if (entry) {
        entry.state = 'done';
        entry.expiresAt = now() + retentionMs;
      }
    },

    async retryLater(claim, delayMs, leaseMs) {
      const entry = owned(claim);
      if (entry) {
        entry.attempt = claim.attempt + 1;
        entry.expiresAt = now() + delayMs + leaseMs;
      }
    },

    async release(claim) {
      if (owned(claim)) events.delete(claim.eventId);
    },

    async purge() {
      const t = now();
      let removed = 0;
      for (const [id, entry] of events) {
        if (entry.expiresAt <= t) {
          events.delete(id);
          removed++;
        }
      }
      return removed;
    },

    async creditOnce<T>(paymentId: string, fn: () => T | Promise<T>): Promise<CreditResult<T>> {
      checkPaymentId(paymentId);
      for (;;) {
        const current = credits.get(paymentId);
        if (current === 'done') return { credited: false };
        if (current) {
          // Someone is crediting this payment right now: wait for the outcome, then look again.
          await current.catch(() => undefined);
          continue;
        }
        const running = Promise.resolve().then(fn);
        credits.set(paymentId, running);
        try {
          const value = await running;
          credits.set(paymentId, 'done');
          return { credited: true, value };
        } catch (error) {
          credits.delete(paymentId);
          throw error;
        }
      }
    },
  };
}

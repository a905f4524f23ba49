import type { WebhookEvent } from '@payhooks/contract';

/**
 * The right to process one event, returned by {@link WebhookStore.claim} to exactly one caller.
 * `token` fences a holder whose lease expired: its later writes are ignored.
 */
export interface Claim {
  eventId: string;
  token: string;
  /** 1 for the first attempt. */
  attempt: number;
}

/**
 * Where a receiver records the `evt_` ids it has seen (spec 6.2.1), for at least 30 days (spec 8),
 * and the state of the work for each:
 *
 * - `claim` is the insert-or-ignore: it records the id and hands out a {@link Claim}, or returns
 *   null when the id was seen (done, being processed under a live lease, or waiting for a retry).
 *   Concurrent identical calls get at most one claim.
 * - `complete` keeps the id as done for the retention period.
 * - `retryLater` keeps the id as seen while the work waits for another attempt.
 * - `release` forgets the id, so the next delivery of the event (a duplicate or a Portal replay)
 *   is processed instead of being acknowledged as a duplicate.
 *
 * A `durable` store also keeps the event itself with the id, in the same write, and hands due work
 * back through `claimDue` (retries, and work whose holder died), so work survives restarts.
 */
export interface WebhookStore {
  readonly durable: boolean;
  claim(event: WebhookEvent, leaseMs: number): Promise<Claim | null>;
  complete(claim: Claim): Promise<void>;
  retryLater(claim: Claim, delayMs: number, leaseMs: number, error: unknown): Promise<void>;
  release(claim: Claim): Promise<void>;
  /** Durable stores: the last attempt failed; keep the event as failed (a dead letter). */
  markFailed?(claim: Claim, error: unknown): Promise<void>;
  /** Durable stores: claims work that is due (retries) or abandoned (expired leases). */
  claimDue?(limit: number, leaseMs: number): Promise<Array<{ claim: Claim; event: WebhookEvent }>>;
  /** Deletes ids past retention; returns how many. */
  purge?(): Promise<number>;
}

/** The outcome of {@link CreditStore.creditOnce}. */
export type CreditResult<T> = { credited: true; value: T } | { credited: false };

/**
 * Crediting idempotent on `payment.id` (spec 6.2.3): `fn` runs, and its credit counts, at most once
 * per payment id, whoever calls (the webhook, its replay, a status poll), however concurrently.
 * When `fn` throws, nothing is marked and the error is rethrown, so a later call can credit.
 */
export interface CreditStore<Tx = void> {
  creditOnce<T>(paymentId: string, fn: (tx: Tx) => T | Promise<T>): Promise<CreditResult<T>>;
}

export function errorText(error: unknown): string {
  if (error instanceof Error) return (error.stack ?? `${error.name}: ${error.message}`).slice(0, 4000);
  return String(error).slice(0, 4000);
}

export function randomToken(): string {
  return globalThis.crypto.randomUUID();
}

export function checkPaymentId(paymentId: unknown): asserts paymentId is string {
  if (typeof paymentId !== 'string' || paymentId === '') {
    throw new TypeError('payhooks: creditOnce needs the payment id (data.object.id of the event, pay_...)');
  }
}

export function checkRetention(retentionMs: number, minimum: number): number {
  if (typeof retentionMs !== 'number' || !Number.isFinite(retentionMs) || retentionMs < minimum) {
    throw new RangeError(`payhooks: seen event ids must be kept at least 30 days (spec 8); retentionMs >= ${minimum}`);
  }
  return retentionMs;
}

/**
 * The receive pipeline, framework-free (spec 5.1.7, 6.1.1, 6.2.1, 6.2.2): verify -> ignore types
 * the merchant does not handle -> insert-or-ignore the event id -> acknowledge at once -> run the
 * work from an in-process queue, with retries. Adapters turn `handle()` into a route.
 */
import { EVENT_TYPES, isEventType, type EventType, type WebhookEvent } from '@payhooks/contract';
import { WebhookVerificationError } from './errors.ts';
import type { HeadersInput, RawBody } from './input.ts';
import type { Claim, WebhookStore } from './stores/types.ts';
import type { Verifier } from './verify-core.ts';

export interface WebhookRequest {
  /** The raw body, exactly as received (Buffer, Uint8Array, ArrayBuffer or string). */
  body: RawBody;
  headers: HeadersInput;
}

export interface WebhookResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface EventContext {
  /** 1 for the first attempt at this event's work, 2 for the first retry, ... */
  attempt: number;
  /** Attempts before the work is given up (released, or kept as failed by a durable store). */
  maxAttempts: number;
}

export interface ErrorInfo {
  /**
   * `process`: `onEvent` threw. `store`: the store failed (on receipt the delivery was answered 500,
   * so the service retries). `receive`: a programming error on receipt (answered 500).
   * `poll`: claiming due work from a durable store failed.
   */
  phase: 'process' | 'store' | 'receive' | 'poll';
  event?: WebhookEvent;
  attempt?: number;
  /** Whether the work will be tried again (by this SDK, or by the service after a 500). */
  willRetry: boolean;
}

export interface WebhookHandlerOptions {
  /** The endpoint's `whsec_` secret, or several during a rotation. Optional when `publicKeys` is given. */
  secret?: string | readonly string[];
  /**
   * The endpoint's ed25519 public key(s), `whpk_…`, to verify the `v1a` signatures with: no secret
   * needed. Beside `secret`, one valid signature of either kind is enough.
   */
  publicKeys?: string | readonly string[];
  /** Where seen event ids (and, for a durable store, the queued work) are kept. */
  store: WebhookStore;
  /**
   * The work for one event, run after the delivery was acknowledged. It may run more than once for
   * an event (a retry after a failure, a takeover after a crash): make its effects idempotent, and
   * credit with `creditOnce`.
   */
  onEvent: (event: WebhookEvent, context: EventContext) => unknown;
  /**
   * The event types you handle. Others are acknowledged with 200 and ignored, never passed to
   * `onEvent` (spec 6.1.1: the catalog grows). Default: every type goes to `onEvent`, which must
   * ignore the ones it does not know.
   *
   * Only types of the catalog are accepted: a misspelt type (`payment.succeded`) is a compile
   * error and throws when the handler is created, because otherwise every payment would be
   * acknowledged and silently dropped.
   */
  types?: readonly EventType[];
  /** Failures of the work or the store. Default: `console.error`. */
  onError?: (error: unknown, info: ErrorInfo) => void;
  /**
   * A delivery failed verification and was answered 400 (wrong secret, tampered body, stale
   * timestamp, missing header). Default: one `console.warn` line per rejected delivery, so a
   * receiver configured with the wrong secret does not fail silently.
   */
  onRejected?: (error: WebhookVerificationError) => void;
  /** Signature timestamp tolerance in seconds. Default 300 (spec 5.1.6). */
  toleranceSeconds?: number;
  /**
   * Delays between attempts at failed work, in ms. Default 1 s, 10 s, 1 min, 10 min, 1 h: six
   * attempts in all.
   */
  retryDelaysMs?: readonly number[];
  /** Events processed at the same time by this handler. Default 8. */
  concurrency?: number;
  /** How long one attempt may hold an event before another worker may take it over. Default 5 min. */
  leaseMs?: number;
  /** Durable stores: how often to look for due retries and abandoned work. Default 5 s. */
  pollIntervalMs?: number;
  /** How often to purge ids past retention. Default 1 h. */
  purgeIntervalMs?: number;
  /** Clock in epoch ms, for tests. */
  now?: () => number;
}

export interface HandleOptions {
  /**
   * Serverless runtimes (Vercel, Cloudflare Workers): keeps the invocation alive until the first
   * attempt at the work has finished, e.g. `{ waitUntil: ctx.waitUntil.bind(ctx) }`.
   */
  waitUntil?: (promise: Promise<unknown>) => void;
}

export interface WebhookHandler {
  /** Handles one delivery. Resolves to the answer to send; never rejects. */
  handle(request: WebhookRequest, options?: HandleOptions): Promise<WebhookResponse>;
  /** Resolves when no work is running or waiting to run (scheduled retries excluded). */
  drain(): Promise<void>;
  /** Durable stores: claims due and abandoned work now and queues it; resolves to how many. */
  poll(): Promise<number>;
  /**
   * Stops timers and waits for running work. Deliveries after this are answered 503. With a
   * non-durable store, events waiting for an in-process retry are released, so a redelivery of
   * them is processed.
   */
  close(): Promise<void>;
}

export const DEFAULT_RETRY_DELAYS_MS: readonly number[] = Object.freeze([1_000, 10_000, 60_000, 600_000, 3_600_000]);

const JSON_HEADERS = Object.freeze({ 'content-type': 'application/json; charset=utf-8' });

function answer(status: number, body: Record<string, unknown>): WebhookResponse {
  return { status, headers: { ...JSON_HEADERS }, body: JSON.stringify(body) };
}

function defaultOnError(error: unknown, info: ErrorInfo): void {
  const where = info.event ? ` for ${info.event.id} (${info.event.type}), attempt ${info.attempt ?? '-'}` : '';
  console.error(`[payhooks] ${info.phase} error${where}${info.willRetry ? ', will retry' : ''}:`, error);
}

function defaultOnRejected(error: WebhookVerificationError): void {
  console.warn(
    `[payhooks] rejected a delivery with 400: ${error.reason}: ${error.message}.` +
      (error.reason === 'bad_signature'
        ? " If every delivery is rejected, check that `secret` is this endpoint's whsec_ signing secret (or `publicKeys` its whpk_ public keys)."
        : ''),
  );
}

/** Refuses types outside the catalog when the handler is created (a typo would drop payments). */
function checkTypes(types: readonly string[] | undefined): Set<string> | null {
  if (types === undefined) return null;
  if (!Array.isArray(types)) throw new TypeError('payhooks: `types` must be an array of event types');
  for (const type of types) {
    if (typeof type !== 'string' || !isEventType(type)) {
      throw new TypeError(`payhooks: unknown event type ${JSON.stringify(type)} in \`types\`; known types: ${EVENT_TYPES.join(', ')}`);
    }
  }
  return new Set(types);
}

function unref(timer: unknown): void {
  (timer as { unref?: () => void } | undefined)?.unref?.();
}

function positiveInt(name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback;
  if (!Number.isInteger(v) || v <= 0) throw new TypeError(`payhooks: \`${name}\` must be a positive integer`);
  return v;
}

export function buildWebhookHandler(options: WebhookHandlerOptions, verify: Verifier): WebhookHandler {
  const store = options.store;
  if (!store || typeof store.claim !== 'function') {
    throw new TypeError('payhooks: `store` is required: memoryStore(), pgStore({ pool }) or redisStore({ client })');
  }
  if (typeof options.onEvent !== 'function') throw new TypeError('payhooks: `onEvent` is required');
  const onEvent = options.onEvent;
  const clock = options.now ?? Date.now;
  const delays = [...(options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS)];
  if (delays.some((d) => !Number.isFinite(d) || d < 0)) throw new TypeError('payhooks: `retryDelaysMs` must be >= 0');
  const maxAttempts = delays.length + 1;
  const concurrency = positiveInt('concurrency', options.concurrency, 8);
  const leaseMs = positiveInt('leaseMs', options.leaseMs, 5 * 60_000);
  const pollIntervalMs = positiveInt('pollIntervalMs', options.pollIntervalMs, 5_000);
  const purgeIntervalMs = positiveInt('purgeIntervalMs', options.purgeIntervalMs, 60 * 60_000);
  const types = checkTypes(options.types);
  const durable = store.durable && typeof store.claimDue === 'function';

  const report = (error: unknown, info: ErrorInfo) => {
    try {
      (options.onError ?? defaultOnError)(error, info);
    } catch {
      // An onError hook that throws must not break the pipeline.
    }
  };

  // ---- the in-process queue ----
  const waiting: Array<() => Promise<void>> = [];
  let running = 0;
  let idle: Array<() => void> = [];
  let closed = false;
  let pumpScheduled = false;

  const settleIdle = () => {
    if (running === 0 && waiting.length === 0 && !pumpScheduled) {
      const waiters = idle;
      idle = [];
      for (const w of waiters) w();
    }
  };

  const pump = () => {
    pumpScheduled = false;
    while (running < concurrency && waiting.length > 0) {
      const task = waiting.shift()!;
      running++;
      task().finally(() => {
        running--;
        pump();
      });
    }
    settleIdle();
  };

  /** Queues a task; the promise settles when it has run. Tasks start on a later tick than the ack. */
  const enqueue = (task: () => Promise<void>): Promise<void> =>
    new Promise<void>((resolve) => {
      waiting.push(() => task().then(resolve, resolve));
      if (!pumpScheduled) {
        pumpScheduled = true;
        setTimeout(pump, 0);
      }
    });

  // ---- timers ----
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const retryTimers = new Map<ReturnType<typeof setTimeout>, Claim>();

  const later = (ms: number, fn: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn();
    }, ms);
    unref(timer);
    timers.add(timer);
    return timer;
  };

  // ---- one attempt at the work ----
  const attempt = async (event: WebhookEvent, claim: Claim): Promise<void> => {
    try {
      await onEvent(event, { attempt: claim.attempt, maxAttempts });
    } catch (error) {
      const willRetry = claim.attempt < maxAttempts;
      report(error, { phase: 'process', event, attempt: claim.attempt, willRetry });
      try {
        if (willRetry) {
          const delay = delays[claim.attempt - 1]!;
          await store.retryLater(claim, delay, leaseMs, error);
          if (durable) {
            // The retry lives in the store; any instance's poller picks it up when due.
            if (!closed) later(delay + 10, () => void poll());
          } else if (!closed) {
            const next: Claim = { ...claim, attempt: claim.attempt + 1 };
            const timer = later(delay, () => {
              retryTimers.delete(timer);
              void enqueue(() => attempt(event, next));
            });
            retryTimers.set(timer, next);
          } else {
            await store.release(claim);
          }
        } else if (durable && store.markFailed) {
          await store.markFailed(claim, error);
        } else {
          // Given up: forget the id, so the next delivery of this event (a Portal replay, a
          // duplicate) is processed rather than acknowledged as already seen.
          await store.release(claim);
        }
      } catch (storeError) {
        report(storeError, { phase: 'store', event, attempt: claim.attempt, willRetry: durable });
      }
      return;
    }
    try {
      await store.complete(claim);
    } catch (storeError) {
      // The work is done but not marked: after the lease it may run again (it must be idempotent).
      report(storeError, { phase: 'store', event, attempt: claim.attempt, willRetry: durable });
    }
  };

  // ---- durable stores: due retries and abandoned work ----
  let polling: Promise<number> | null = null;
  const poll = (): Promise<number> => {
    if (!durable || closed) return Promise.resolve(0);
    polling ??= (async () => {
      try {
        const room = concurrency * 2 - running - waiting.length;
        const due = await store.claimDue!(room, leaseMs);
        for (const { claim, event } of due) void enqueue(() => attempt(event, claim));
        return due.length;
      } catch (error) {
        report(error, { phase: 'poll', willRetry: true });
        return 0;
      } finally {
        polling = null;
      }
    })();
    return polling;
  };

  const intervals: Array<ReturnType<typeof setInterval>> = [];
  if (durable) {
    const pollTimer = setInterval(() => void poll(), pollIntervalMs);
    unref(pollTimer);
    intervals.push(pollTimer);
    later(0, () => void poll()); // work left behind by a previous process
  }
  if (typeof store.purge === 'function') {
    const purgeTimer = setInterval(() => {
      store.purge!().catch((error) => report(error, { phase: 'store', willRetry: true }));
    }, purgeIntervalMs);
    unref(purgeTimer);
    intervals.push(purgeTimer);
  }

  const drain = (): Promise<void> => {
    if (running === 0 && waiting.length === 0 && !pumpScheduled) return Promise.resolve();
    return new Promise<void>((resolve) => idle.push(resolve));
  };

  return {
    async handle(request, handleOptions) {
      if (closed) return answer(503, { error: 'receiver_closed' });
      let event: WebhookEvent;
      try {
        event = await verify(request, clock());
      } catch (error) {
        // Spec 5.1.7: a failed verification is answered 400 and the event is not processed.
        if (error instanceof WebhookVerificationError) {
          try {
            (options.onRejected ?? defaultOnRejected)(error);
          } catch {
            // A hook that throws must not turn the 400 into something else.
          }
          return answer(400, { error: error.reason, message: error.message });
        }
        report(error, { phase: 'receive', willRetry: true });
        const message = error instanceof TypeError && error.message.startsWith('payhooks:') ? error.message : undefined;
        return answer(500, { error: 'internal_error', ...(message ? { message } : {}) });
      }
      // Spec 6.1.1: acknowledge and ignore the types this receiver does not handle.
      if (types && !types.has(event.type)) return answer(200, { received: true, ignored: true });
      // Spec 6.2.1: insert-or-ignore the evt_ id; seen -> 200 and stop.
      let claim: Claim | null;
      try {
        claim = await store.claim(event, leaseMs);
      } catch (error) {
        // Not recorded, not acknowledged: the service retries the delivery (spec 8).
        report(error, { phase: 'store', event, willRetry: true });
        return answer(500, { error: 'store_unavailable' });
      }
      if (!claim) return answer(200, { received: true, duplicate: true });
      // Spec 6.2.2: acknowledge now; the work runs from the queue.
      const work = enqueue(() => attempt(event, claim));
      handleOptions?.waitUntil?.(work);
      return answer(200, { received: true });
    },

    drain,

    poll,

    async close() {
      closed = true;
      for (const t of intervals) clearInterval(t);
      const released: Promise<void>[] = [];
      for (const timer of timers) {
        clearTimeout(timer);
        const claim = retryTimers.get(timer);
        if (claim) released.push(store.release(claim).catch((error) => report(error, { phase: 'store', willRetry: false })));
      }
      timers.clear();
      retryTimers.clear();
      await Promise.all(released);
      await polling;
      await drain();
    },
  };
}

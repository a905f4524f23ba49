/** Exports shared by both entry points (`@payhooks/receiver` and `@payhooks/receiver/fetch`). */
import type { PaymentEvent, WebhookEvent } from '@payhooks/contract';

export {
  DEDUP_RETENTION_MS,
  EVENT_ID_HEADER,
  EVENT_TYPES,
  PAYMENT_STATUSES,
  SIGNATURE_HEADER,
  SIGNATURE_TOLERANCE_SECONDS,
  type EventType,
  type PaymentStatus,
  type Payment,
  type PaymentEvent,
  type WebhookEvent,
} from '@payhooks/contract';
export {
  CreditInProgressError,
  VERIFICATION_REASONS,
  WebhookVerificationError,
  isWebhookVerificationError,
  type WebhookVerificationReason,
} from './errors.ts';
export type { HeadersInput, RawBody } from './input.ts';
export type { VerifyWebhookOptions } from './verify-core.ts';
export {
  DEFAULT_RETRY_DELAYS_MS,
  type ErrorInfo,
  type EventContext,
  type HandleOptions,
  type WebhookHandler,
  type WebhookHandlerOptions,
  type WebhookRequest,
  type WebhookResponse,
} from './handler.ts';
export type { Claim, CreditResult, CreditStore, WebhookStore } from './stores/types.ts';
export { memoryStore, type MemoryStore, type MemoryStoreOptions } from './stores/memory.ts';
export {
  pgStore,
  type PgPoolClientLike,
  type PgPoolLike,
  type PgQueryable,
  type PgStore,
  type PgStoreOptions,
  type PgTransactionClient,
} from './stores/pg.ts';
export { redisStore, type RedisLike, type RedisStore, type RedisStoreOptions } from './stores/redis.ts';
export { toFetchHandler, type FetchAdapterOptions } from './adapters/fetch.ts';

/** Narrows an event to a payment.* event, whose `data.object` is the Payment (spec 6.1.2). */
export function isPaymentEvent(event: WebhookEvent): event is PaymentEvent {
  return typeof event.type === 'string' && event.type.startsWith('payment.');
}

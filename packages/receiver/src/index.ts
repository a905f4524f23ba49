/**
 * @payhooks/receiver for Node.js: verification with node:crypto, the handler pipeline, the dedup
 * and credit stores, and adapters for node:http, Express, Fastify and the Fetch API.
 * Edge runtimes without node:crypto: import `@payhooks/receiver/fetch` instead.
 */
import { signPayload, type WebhookEvent } from '@payhooks/contract';
import { buildWebhookHandler, type WebhookHandler, type WebhookHandlerOptions } from './handler.ts';
import { nodeVerifier } from './verify-node.ts';

export * from './common.ts';
export { verifyWebhook } from './verify-node.ts';
export { verifyWebhookAsync } from './verify-web.ts';
export {
  BodyTooLargeError,
  readRawBody,
  toNodeHandler,
  type NodeAdapterOptions,
} from './adapters/node.ts';
export { expressWebhook } from './adapters/express.ts';
export { fastifyWebhook, type FastifyInstanceLike, type FastifyWebhookOptions } from './adapters/fastify.ts';

/**
 * The receive pipeline: verify (failure: 400, spec 5.1.7) -> ignore types not in `types`
 * (200, spec 6.1.1) -> insert-or-ignore the event id (seen: 200, spec 6.2.1) -> 200 at once, the
 * work queued (spec 6.2.2). Wrap it with an adapter.
 */
export function createWebhookHandler(options: WebhookHandlerOptions): WebhookHandler {
  return buildWebhookHandler(options, nodeVerifier(options.secret, options.publicKeys, options.toleranceSeconds));
}

/**
 * A signed delivery, as payhooks would send it, for your own tests: the body serialised once and
 * the `Service-Signature` and `Service-Event-Id` headers.
 */
export function signTestDelivery(options: {
  event: WebhookEvent;
  secret: string;
  /** Unix seconds. Default: now. */
  timestamp?: number;
}): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify(options.event);
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'service-event-id': options.event.id,
      'service-signature': signPayload(options.secret, timestamp, body),
    },
  };
}

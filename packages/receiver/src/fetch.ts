/**
 * @payhooks/receiver/fetch: the same receiver using WebCrypto (crypto.subtle) only, with no Node
 * built-ins, for edge runtimes (Cloudflare Workers, Vercel Edge, Deno, Bun) and Fetch-API
 * frameworks (Hono, Next.js route handlers).
 */
import { buildWebhookHandler, type WebhookHandler, type WebhookHandlerOptions } from './handler.ts';
import { webVerifier } from './verify-web.ts';

export * from './common.ts';
export { verifyWebhookAsync } from './verify-web.ts';

/** The receive pipeline of the main entry, verifying with WebCrypto. */
export function createWebhookHandler(options: WebhookHandlerOptions): WebhookHandler {
  return buildWebhookHandler(options, webVerifier(options.secret, options.publicKeys, options.toleranceSeconds));
}

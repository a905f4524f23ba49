import type { WebhookHandler } from '../handler.ts';

/**
 * The part of a Fastify (4 or 5) instance the plugin uses. Request and reply stay `any`: Fastify's
 * generic request/reply types differ across majors and type providers, and any narrower parameter
 * type would stop a real instance from fitting.
 */
// biome-ignore-start lint/suspicious/noExplicitAny: see above
export interface FastifyInstanceLike {
  removeAllContentTypeParsers(): void;
  addContentTypeParser(
    contentType: string,
    options: { parseAs: 'buffer'; bodyLimit?: number },
    parser: (request: any, body: any, done: (error: Error | null, body?: any) => void) => void,
  ): void;
  post(path: string, handler: (request: any, reply: any) => Promise<unknown>): unknown;
}
// biome-ignore-end lint/suspicious/noExplicitAny: see above

export interface FastifyWebhookOptions {
  /** The route path. Default `/webhooks/payhooks`. */
  path?: string;
  /** Larger bodies are refused with 413. Default: the server's bodyLimit. */
  bodyLimit?: number;
}

/**
 * A Fastify plugin that registers the webhook route in its own encapsulated context, where every
 * content type is read as a raw Buffer (your other routes keep Fastify's JSON parser):
 * `app.register(fastifyWebhook(handler, { path: '/webhooks/payhooks' }))`.
 */
export function fastifyWebhook(
  handler: WebhookHandler,
  options: FastifyWebhookOptions = {},
): (instance: FastifyInstanceLike, opts?: unknown) => Promise<void> {
  const path = options.path ?? '/webhooks/payhooks';
  return async function payhooksWebhook(instance) {
    instance.removeAllContentTypeParsers();
    instance.addContentTypeParser(
      '*',
      options.bodyLimit === undefined ? { parseAs: 'buffer' } : { parseAs: 'buffer', bodyLimit: options.bodyLimit },
      (_request, body, done) => done(null, body),
    );
    instance.post(path, async (request, reply) => {
      const body: unknown = request.body ?? new Uint8Array(0);
      const response = await handler.handle({ body: body as Uint8Array, headers: request.headers });
      return reply.code(response.status).headers(response.headers).send(response.body);
    });
  };
}

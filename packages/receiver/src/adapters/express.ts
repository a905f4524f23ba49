import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HandleOptions, WebhookHandler } from '../handler.ts';
import { BodyTooLargeError, DEFAULT_MAX_BODY_BYTES, readRawBody, writeNodeResponse, type NodeAdapterOptions } from './node.ts';

type ExpressRequestLike = IncomingMessage & { body?: unknown };

/**
 * Express (4 or 5) middleware for the webhook route:
 * `app.post('/webhooks/payhooks', expressWebhook(handler))`.
 *
 * It needs the raw bytes: register the route before any global `app.use(express.json())`. It reads
 * the body itself, or takes the Buffer from `express.raw()` on the route. If a JSON parser got there
 * first, the bytes are gone: the request is passed to `next(error)` (a 500, so the service retries
 * once you fix it) with a message saying so, rather than verifying re-serialised JSON.
 */
export function expressWebhook(
  handler: WebhookHandler,
  options: NodeAdapterOptions & HandleOptions = {},
): (req: ExpressRequestLike, res: ServerResponse, next: (error?: unknown) => void) => void {
  const limit = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  return (req, res, next) => {
    if (req.method !== 'POST') {
      req.resume();
      writeNodeResponse(res, {
        status: 405,
        headers: { allow: 'POST', 'content-type': 'application/json; charset=utf-8' },
        body: JSON.stringify({ error: 'method_not_allowed' }),
      });
      return;
    }
    let body: Promise<unknown>;
    if (req.body instanceof Uint8Array || typeof req.body === 'string') {
      body = Promise.resolve(req.body); // express.raw() / express.text()
    } else if (!req.readableEnded && !(req as { readableDidRead?: boolean }).readableDidRead) {
      body = readRawBody(req, limit);
    } else {
      next(
        new TypeError(
          'payhooks: the webhook request body was already parsed by another middleware (e.g. express.json()), so its raw ' +
            'bytes, which the signature covers, are gone (spec 5.1.4). Register the webhook route before ' +
            'app.use(express.json()); once a global JSON parser has read the body, express.raw() on the route cannot help.',
        ),
      );
      return;
    }
    body
      .then((raw) => handler.handle({ body: raw as Uint8Array | string, headers: req.headers }, options))
      .then(
        (response) => writeNodeResponse(res, response),
        (error: unknown) => {
          if (error instanceof BodyTooLargeError) {
            writeNodeResponse(res, {
              status: 413,
              headers: { connection: 'close', 'content-type': 'application/json; charset=utf-8' },
              body: JSON.stringify({ error: 'body_too_large' }),
            });
          } else next(error);
        },
      );
  };
}

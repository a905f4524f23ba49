import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HandleOptions, WebhookHandler, WebhookResponse } from '../handler.ts';

export interface NodeAdapterOptions {
  /** Larger bodies are refused with 413. Default 5 MiB. */
  maxBodyBytes?: number;
}

export const DEFAULT_MAX_BODY_BYTES = 5 * 1024 * 1024;

export class BodyTooLargeError extends Error {
  readonly status = 413;
  constructor(limit: number) {
    super(`payhooks: request body larger than ${limit} bytes`);
    this.name = 'BodyTooLargeError';
  }
}

/** Reads a request stream to the end, as raw bytes, never decoded or parsed. */
export function readRawBody(req: IncomingMessage, maxBodyBytes = DEFAULT_MAX_BODY_BYTES): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBodyBytes) {
      req.resume();
      reject(new BodyTooLargeError(maxBodyBytes));
      return;
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (chunk: Uint8Array) => {
      if (failed) return;
      size += chunk.length;
      if (size > maxBodyBytes) {
        failed = true;
        reject(new BodyTooLargeError(maxBodyBytes));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (failed) return;
      const body = new Uint8Array(size);
      let offset = 0;
      for (const c of chunks) {
        body.set(c, offset);
        offset += c.length;
      }
      resolve(body);
    });
    req.on('error', reject);
  });
}

export function writeNodeResponse(res: ServerResponse, response: WebhookResponse): void {
  res.statusCode = response.status;
  for (const [name, value] of Object.entries(response.headers)) res.setHeader(name, value);
  res.end(response.body);
}

function plain(res: ServerResponse, status: number, error: string, extra: Record<string, string> = {}): void {
  writeNodeResponse(res, {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...extra },
    body: JSON.stringify({ error }),
  });
}

/**
 * A `node:http` request listener: `http.createServer(toNodeHandler(handler))`, or call it from your
 * own router for the webhook path. Reads the raw body itself.
 */
export function toNodeHandler(
  handler: WebhookHandler,
  options: NodeAdapterOptions & HandleOptions = {},
): (req: IncomingMessage, res: ServerResponse) => void {
  const limit = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  return (req, res) => {
    if (req.method !== 'POST') {
      req.resume();
      plain(res, 405, 'method_not_allowed', { allow: 'POST' });
      return;
    }
    readRawBody(req, limit)
      .then((body) => handler.handle({ body, headers: req.headers }, options))
      .then(
        (response) => writeNodeResponse(res, response),
        (error: unknown) => {
          if (error instanceof BodyTooLargeError) plain(res, 413, 'body_too_large', { connection: 'close' });
          else plain(res, 500, 'internal_error');
        },
      );
  };
}

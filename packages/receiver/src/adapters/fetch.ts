import type { WebhookHandler } from '../handler.ts';

export interface FetchAdapterOptions {
  /** Larger bodies are refused with 413. Default 5 MiB. */
  maxBodyBytes?: number;
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
  });
}

/**
 * A Fetch-API handler, `Request` -> `Response`: Next.js route handlers (`export const POST = ...`),
 * Hono (`(c) => fetchHandler(c.req.raw, c.executionCtx)`), Cloudflare Workers, Deno, Bun. The second
 * argument may carry `waitUntil` (Workers' `ctx`, Vercel), which keeps the queued work alive after
 * the response.
 */
export function toFetchHandler(
  handler: WebhookHandler,
  options: FetchAdapterOptions = {},
): (request: Request, context?: unknown) => Promise<Response> {
  const limit = options.maxBodyBytes ?? 5 * 1024 * 1024;
  return async (request, context) => {
    if (request.method !== 'POST') return json(405, { error: 'method_not_allowed' }, { allow: 'POST' });
    const declared = Number(request.headers.get('content-length'));
    if (Number.isFinite(declared) && declared > limit) return json(413, { error: 'body_too_large' });
    // The raw bytes, never request.json(): the signature covers them (spec 5.1.4).
    const body = new Uint8Array(await request.arrayBuffer());
    if (body.byteLength > limit) return json(413, { error: 'body_too_large' });
    const waitUntil = (context as { waitUntil?: unknown } | undefined)?.waitUntil;
    const response = await handler.handle(
      { body, headers: request.headers },
      typeof waitUntil === 'function' ? { waitUntil: (p) => waitUntil.call(context, p) } : undefined,
    );
    return new Response(response.body, { status: response.status, headers: response.headers });
  };
}

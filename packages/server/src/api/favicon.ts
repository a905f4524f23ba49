import type { FastifyInstance } from 'fastify';

/**
 * The favicon of every page we serve (the portal, the hosted checkout): one small SVG, a
 * webhook's hook in the brand colour. Browsers ask for `/favicon.ico` by themselves when a page
 * names none; both paths answer it, so no page load logs a 404.
 */
export const FAVICON_PATH = '/favicon.svg';

const SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#635bff"/><path d="M11 9v8a5 5 0 0 0 10 0v-2" fill="none" stroke="#fff" stroke-width="3" stroke-linecap="round"/><circle cx="21" cy="11" r="2.5" fill="#fff"/></svg>`;

export async function faviconRoutes(app: FastifyInstance): Promise<void> {
  for (const path of [FAVICON_PATH, '/favicon.ico']) {
    app.get(path, { schema: { hide: true } }, async (_req, reply) =>
      reply.headers({ 'x-content-type-options': 'nosniff', 'cache-control': 'public, max-age=86400' }).type('image/svg+xml').send(SVG),
    );
  }
}

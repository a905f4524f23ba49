import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';
import { securityHeaders } from './security.ts';

/**
 * Where the built UI is: in the repository, where `npm install` (portal-ui's `prepare` script)
 * builds it, the same path from src/api/portal/ and dist/api/portal/; in the published package,
 * dist/portal-ui/, copied there before packing (scripts/copy-assets.js --portal).
 */
const PORTAL_DIST_CANDIDATES = [
  fileURLToPath(new URL('../../../../portal-ui/dist', import.meta.url)),
  fileURLToPath(new URL('../../portal-ui', import.meta.url)),
];
export const DEFAULT_PORTAL_DIST = PORTAL_DIST_CANDIDATES.find((dir) => existsSync(join(dir, 'index.html'))) ?? PORTAL_DIST_CANDIDATES[0]!;

export const NOT_BUILT_MESSAGE =
  'The Merchant Portal UI is not built yet. Build it with `npm run build -w packages/portal-ui` (npm install does this for you), then restart payhooks.';

/**
 * Every file of the built UI, relative to `dist` with `/` separators ('index.html',
 * 'assets/index-….js'), dotfiles left out. Read synchronously: a build is a handful of files.
 */
export function builtFiles(dist: string, under = ''): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(join(dist, under), { withFileTypes: true })) {
    if (entry.name.startsWith('.')) continue;
    const path = under ? `${under}/${entry.name}` : entry.name;
    if (entry.isDirectory()) files.push(...builtFiles(dist, path));
    else if (entry.isFile()) files.push(path);
  }
  return files;
}

/**
 * The built single-page app under /portal/. Hashed assets are cached for a year; index.html is
 * never cached, and any other path under /portal/ (a client-side route such as
 * /portal/endpoints/we_…) gets index.html too. Every page carries the portal's strict CSP.
 *
 * Registration waits on nothing: the files are listed synchronously here and get a route each,
 * and @fastify/static only lends `reply.sendFile` (`serve: false`). Its own per-file routes
 * (`wildcard: false`) came from an asynchronous glob inside the plugin, whose filesystem
 * callbacks queued behind whatever else the process was doing, and Fastify's 10 s
 * pluginTimeout is wall-clock time: a busy process (another service's embedded database
 * migrating beside it) failed to start with "Plugin did not start in time: '@fastify/static'"
 * (docs/decisions/portal-static-without-glob.md).
 */
export async function portalStatic(app: FastifyInstance, dist: string, frameAncestors: readonly string[]): Promise<void> {
  const built = existsSync(join(dist, 'index.html'));
  app.get('/portal', async (_req, reply) => reply.redirect('/portal/'));
  if (!built) {
    app.get('/portal/*', async (_req, reply) => {
      securityHeaders(reply, frameAncestors);
      return reply.code(503).type('text/plain; charset=utf-8').send(`${NOT_BUILT_MESSAGE}\n`);
    });
    return;
  }
  const files = builtFiles(dist);
  await app.register(fastifyStatic, {
    root: dist,
    serve: false,
    index: false,
    // Ours alone (setHeaders): `send`'s own "public, max-age=0" used to overwrite it.
    cacheControl: false,
    setHeaders(res, path) {
      res.setHeader('cache-control', path.includes(`${join(dist, 'assets')}`) ? 'public, max-age=31536000, immutable' : 'no-cache');
    },
  });
  const page = async (_req: unknown, reply: import('fastify').FastifyReply) => {
    securityHeaders(reply, frameAncestors);
    return reply.header('cache-control', 'no-cache').sendFile('index.html', dist);
  };
  for (const file of files) {
    if (file === 'index.html') continue;
    app.get(`/portal/${file}`, async (_req, reply) => reply.sendFile(file, dist));
  }
  app.get('/portal/', page);
  app.get('/portal/*', page);
}

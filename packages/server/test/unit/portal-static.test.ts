import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtFiles, portalStatic } from '../../src/api/portal/static.ts';

/**
 * The portal's static UI is registered without waiting on the event loop, so a process busy with
 * other work (another service's embedded database migrating beside it) cannot make the portal
 * miss Fastify's pluginTimeout: "Plugin did not start in time" (docs/decisions/portal-static-without-glob.md).
 */
let dist: string;
beforeAll(() => {
  dist = mkdtempSync(join(tmpdir(), 'portal-dist-'));
  mkdirSync(join(dist, 'assets'));
  writeFileSync(join(dist, 'index.html'), '<!doctype html><script type="module" src="/portal/assets/app-1a2b.js"></script>');
  writeFileSync(join(dist, 'assets/app-1a2b.js'), 'console.log(1)');
  writeFileSync(join(dist, 'assets/app-1a2b.css'), 'body{}');
  writeFileSync(join(dist, 'favicon.svg'), '<svg/>');
  writeFileSync(join(dist, '.env'), 'SECRET=1');
});
afterAll(() => rmSync(dist, { recursive: true, force: true }));

/** Blocks the event loop for `ms` at a time, again and again, until stopped. */
function hogTheEventLoop(ms: number): () => void {
  let running = true;
  const hog = () => {
    if (!running) return;
    const until = performance.now() + ms;
    while (performance.now() < until);
    setImmediate(hog);
  };
  setImmediate(hog);
  return () => {
    running = false;
  };
}

describe('portal static UI', () => {
  it('lists the built files synchronously, dotfiles left out', () => {
    expect(builtFiles(dist).sort()).toEqual(['assets/app-1a2b.css', 'assets/app-1a2b.js', 'favicon.svg', 'index.html']);
  });

  it('starts within a 100 ms plugin timeout while the event loop is blocked 300 ms at a time', async () => {
    const app = Fastify({ pluginTimeout: 100 });
    const stop = hogTheEventLoop(300);
    try {
      await app.register(async (scope) => portalStatic(scope, dist, []));
      await app.ready();
    } finally {
      stop();
    }
    await app.close();
  });

  it('serves each built file with its cache policy, the page (with its CSP) for everything else, and no dotfile', async () => {
    const app = Fastify();
    await app.register(async (scope) => portalStatic(scope, dist, []));
    try {
      const asset = await app.inject({ method: 'GET', url: '/portal/assets/app-1a2b.js' });
      expect(asset.statusCode).toBe(200);
      expect(asset.body).toBe('console.log(1)');
      expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      const icon = await app.inject({ method: 'GET', url: '/portal/favicon.svg' });
      expect(icon.body).toBe('<svg/>');
      expect(icon.headers['cache-control']).toBe('no-cache');
      expect((await app.inject({ method: 'HEAD', url: '/portal/assets/app-1a2b.css' })).statusCode).toBe(200);
      for (const url of ['/portal/', '/portal/index.html', '/portal/webhooks/endpoints/we_1', '/portal/.env', '/portal/assets/gone.js']) {
        const page = await app.inject({ method: 'GET', url });
        expect(page.statusCode, url).toBe(200);
        expect(page.body, url).toContain('<!doctype html>');
        expect(page.headers['cache-control'], url).toBe('no-cache');
        expect(page.headers['content-security-policy'], url).toContain("frame-ancestors 'none'");
      }
      expect((await app.inject({ method: 'GET', url: '/portal' })).headers.location).toBe('/portal/');
    } finally {
      await app.close();
    }
  });
});

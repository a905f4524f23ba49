import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ServiceContext } from '../context.ts';

/**
 * The Prometheus listener of `payhooks worker` (PAYHOOKS_METRICS_PORT): `GET /metrics` in the
 * text format, `GET /healthz`, 404 for anything else. A plain node:http server: a worker process
 * has no API, and this needs no routing, parsing or sessions. Like the API's `/metrics` it is
 * for the operator's network and holds no tenant data.
 */
export async function startMetricsServer(
  ctx: ServiceContext,
  options: { host: string; port: number },
): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('method not allowed\n');
    } else if (path === '/metrics') {
      ctx.metrics.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': ctx.metrics.registry.contentType }).end(req.method === 'HEAD' ? undefined : text),
        (err: unknown) => {
          ctx.logger.warn({ err }, 'metrics scrape failed');
          res
            .writeHead(503, { 'content-type': 'text/plain', 'retry-after': '5' })
            .end('metrics unavailable: the database did not answer\n');
        },
      );
    } else if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: this listener serves /metrics and /healthz\n');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}/metrics`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

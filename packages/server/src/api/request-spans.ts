import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { type SpanHandle, tracing } from '../telemetry/tracing.ts';

const spans = new WeakMap<FastifyRequest, SpanHandle>();

/**
 * A server span per API request (only while tracing), named by method and route, continuing a
 * caller's trace when the request carries a valid W3C `traceparent`. The route's handler runs
 * inside it, so `publishEvent` and manual attempts made by the request are its children.
 * Must be added before the routes are registered (it wraps each handler as it is added).
 */
export function traceRequests(app: FastifyInstance): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    const handler = route.handler;
    route.handler = function (this: FastifyInstance, req: FastifyRequest, reply: FastifyReply) {
      const span = spans.get(req);
      return span ? tracing.withSpan(span, () => handler.call(this, req, reply)) : handler.call(this, req, reply);
    };
  });
  app.addHook('onRequest', async (req) => {
    const route = req.routeOptions.url;
    const header = req.headers.traceparent;
    spans.set(
      req,
      tracing.startSpan(route ? `${req.method} ${route}` : req.method, {
        kind: 'server',
        parent: typeof header === 'string' ? header : undefined,
        attributes: {
          'http.request.method': req.method,
          'http.route': route,
          'url.path': req.url.split('?')[0],
          'payhooks.request.id': String(req.id),
        },
      }),
    );
  });
  app.addHook('onResponse', async (req, reply) => {
    const span = spans.get(req);
    if (!span) return;
    spans.delete(req);
    span.setAttributes({ 'http.response.status_code': reply.statusCode });
    span.end(reply.statusCode >= 500 ? `HTTP ${reply.statusCode}` : undefined);
  });
}

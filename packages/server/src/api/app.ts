import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { traceRequests } from './request-spans.ts';
import { tracing } from '../telemetry/tracing.ts';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { serializerFactory, validatorCompiler } from './schema-compilers.ts';
import type { ServiceContext } from '../context.ts';
import type { Scope } from '../scope.ts';
import { AppError } from '../errors.ts';
import { authenticate } from './auth.ts';
import { errorHandler } from './errors.ts';
import { clientErrorHandler, connectHandler, requireHost } from './client-errors.ts';
import { installJsonBodyParser } from './json-body.ts';
import { healthRoutes } from './health.ts';
import { jwksRoutes } from './jwks.ts';
import { connectRedis, installRateLimits } from './rate-limit.ts';
import { sharedCounters } from './window-counters.ts';
import { ErrorSchema } from './v1/schemas.ts';
import { CreatedEndpointSchema, PublicKeySchema, WebhookEndpointSchema, webhookEndpointRoutes } from './v1/webhook-endpoints.ts';
import { AttemptSchema, DeliverySchema, webhookDeliveryRoutes } from './v1/webhook-deliveries.ts';
import { EnabledEventTypeSchema, EventSchema, EventTypeSchema } from './v1/event-schemas.ts';
import { openApiRoutes, SECURITY_SCHEMES } from './openapi/routes.ts';
import { documentRoute } from './openapi/overlays.ts';
import { eventRoutes } from './v1/events.ts';
import { eventTypeRoutes } from './v1/event-types.ts';
import { internalEventRoutes } from './internal/events.ts';
import { internalEventBatchRoutes } from './internal/event-batches.ts';
import { internalPaymentRoutes } from './internal/payments.ts';
import { internalAuth } from './internal/auth.ts';
import { paymentRoutes } from './v1/payments.ts';
import { checkoutSessionRoutes } from './v1/checkout-sessions.ts';
import { sandboxRoutes } from './v1/sandbox.ts';
import { PaymentSchema, CheckoutSessionSchema } from './v1/payment-schemas.ts';
import { checkoutPageRoutes } from './checkout/page.ts';
import { faviconRoutes } from './favicon.ts';
import { portal } from './portal/index.ts';
import { REQUEST_ID_HEADER, newRequestId } from './request-id.ts';
import { ListenHub } from '../devtools/listen-sessions.ts';
import { RedisSlots } from '../delivery/shared-gate.ts';
import { listenSessionRoutes } from './v1/listen-sessions.ts';
import { listenRelayRoutes } from './listen-relay.ts';
import { API_BODY_LIMIT } from './body-limit.ts';
import { installAuditOfFailures, requireAuditDeclaration, type RouteAudit } from './audit-hook.ts';
import { AuditEventSchema, auditEventRoutes } from './v1/audit-events.ts';
import { internalPortalSessionRoutes } from './internal/portal-sessions.ts';
import { internalAlertSettingsRoutes } from './internal/alert-settings.ts';
import { internalOperatorEndpointRoutes } from './internal/operator-endpoints.ts';
import { StatsSchema, webhookStatsRoutes } from './v1/webhook-stats.ts';
import { emailUnsubscribeRoutes } from './email-unsubscribe.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the /api/v1 auth hook: the calling key's Platform and environment. */
    scope: Scope;
  }
}

export interface RouteInfo {
  method: string;
  url: string;
  /** The route's declarations the role and audit tests read: portal role, public, audit entry. */
  config: { role?: string; public?: boolean; audit?: RouteAudit };
}

const routeLists = new WeakMap<FastifyInstance, RouteInfo[]>();

/** Every route `buildApp` registered (HEAD twins left out): for docs and the all-routes fuzz test. */
export function routesOf(app: FastifyInstance): RouteInfo[] {
  return routeLists.get(app) ?? [];
}

// Management requests are small; anything bigger is refused with a 413 before parsing.
export { API_BODY_LIMIT };

/** Schemas referenced by name (`Type.Ref`): known to the validators, the serializers and the documents. */
const SHARED_SCHEMAS = [
  ErrorSchema,
  EventTypeSchema,
  EnabledEventTypeSchema,
  PublicKeySchema,
  WebhookEndpointSchema,
  CreatedEndpointSchema,
  AttemptSchema,
  DeliverySchema,
  PaymentSchema,
  CheckoutSessionSchema,
  EventSchema,
  AuditEventSchema,
  StatsSchema,
];

/**
 * One log line per request, with what an operator looks for: method, path (never the query
 * string), status, duration, request id. In development successful reads are left out, so the
 * attempt lines (delivery/attempt-log.ts) stand out.
 */
function requestLogLine(dev: boolean) {
  return async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const status = reply.statusCode;
    if (dev && (req.method === 'GET' || req.method === 'HEAD') && status < 400) return;
    const path = req.url.split('?')[0];
    const ms = Math.round(reply.elapsedTime);
    req.log.info(
      { http_method: req.method, http_path: path, http_status: status, duration_ms: ms },
      `${req.method} ${path} ${status} in ${ms} ms (${req.id})`,
    );
  };
}

/** PAYHOOKS_TRUST_PROXY as Fastify takes it: a hop count is "trust the first n hops from us". */
function fastifyTrustProxy(setting: false | number | string[]): false | string[] | ((address: string, hop: number) => boolean) {
  return typeof setting === 'number' ? (_address, hop) => hop < setting : setting;
}

/** `portalDist`: the built portal UI (default: packages/portal-ui/dist). */
export async function buildApp(ctx: ServiceContext, options: { portalDist?: string } = {}): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: ctx.logger,
    bodyLimit: API_BODY_LIMIT,
    // Only proxies the operator named may set the client's address (X-Forwarded-For): every
    // per-address limit counts req.ip.
    trustProxy: fastifyTrustProxy(ctx.config.trustProxy),
    requestIdHeader: false,
    genReqId: newRequestId,
    // Fastify's two multi-field lines per request buried the attempt lines: ours below is one.
    logController: new LogController({ disableRequestLogging: true }),
    // Malformed URLs and over-long path parameters get our error shape too.
    frameworkErrors: errorHandler as never,
    // ... and so do requests Node's HTTP parser refuses before routing, and HTTP/1.1 requests
    // without Host (Node's own check would answer an empty 400: requireHost below answers instead).
    clientErrorHandler,
    http: { requireHostHeader: false },
    schemaController: { compilersFactory: { buildSerializer: serializerFactory } },
  }).withTypeProvider<TypeBoxTypeProvider>();
  // The same instance, typed without the TypeBox provider, for the plugins and hooks that take a
  // plain FastifyInstance (the provider's generic parameters make the two types unrelated).
  const plain = app as unknown as FastifyInstance;

  const routes: RouteInfo[] = [];
  app.addHook('onRoute', (r) => {
    requireAuditDeclaration(r);
    const config = (r.config ?? {}) as RouteInfo['config'];
    for (const method of [r.method].flat())
      if (method !== 'HEAD') routes.push({ method, url: r.url, config: { role: config.role, public: config.public, audit: config.audit } });
  });
  routeLists.set(plain, routes);
  // Routes without TypeBox response schemas (portal API, checkout pages, listen relay) get
  // their document entry from openapi/overlays.ts.
  app.addHook('onRoute', documentRoute);
  if (tracing.enabled) traceRequests(plain);
  app.addHook('onRequest', async (req, reply) => {
    void reply.header(REQUEST_ID_HEADER, req.id);
  });
  app.addHook('onRequest', requireHost);
  // Stopping (SIGTERM): a response still in flight closes its connection. Otherwise a client's
  // keep-alive connection, idle after it, would hold the process until Fastify's keep-alive
  // timeout (72 s); requests that arrive on it meanwhile are already shed with a 503 by Fastify.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (_req, reply) => {
    if (closing) void reply.header('connection', 'close');
  });
  app.addHook('onResponse', requestLogLine(ctx.config.dev));
  installAuditOfFailures(plain, ctx.audit, ctx.database.db);
  app.server.on('connect', connectHandler);

  // Every body we accept is JSON; anything else is a 415, on every route.
  app.removeContentTypeParser('text/plain');
  // JSON bodies with lone surrogates or absurd nesting are 400s naming the field.
  installJsonBodyParser(plain);

  app.setValidatorCompiler(validatorCompiler(SHARED_SCHEMAS));
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler((req, reply) => {
    const err = new AppError('not_found', 'route_not_found', `No route ${req.method} ${req.url.split('?')[0]}. See /api/v1/openapi.json.`);
    void reply.code(404).send(err.toBody());
  });
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema);

  await app.register(swagger, {
    // One generated document of every route; openapi/document.ts splits it into the public and
    // the operator document and completes both (errors, headers, examples, tags).
    openapi: { openapi: '3.1.0', info: { title: 'payhooks', version: 'v1' }, components: { securitySchemes: SECURITY_SCHEMES } },
    refResolver: { buildLocalReference: (json, _base, _frag, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
  });

  // Rate limits: shared through Redis across API processes when PAYHOOKS_REDIS_URL is set.
  const redis = ctx.config.redisUrl ? await connectRedis(ctx.config.redisUrl, ctx.logger) : null;
  if (redis) app.addHook('onClose', async () => void (await redis.quit().catch(() => redis.disconnect())));
  const rateLimits = await installRateLimits(plain, { redis, logger: ctx.logger });
  // Manual attempts per endpoint are capped across processes in the same Redis (delivery/shared-gate.ts).
  if (redis) ctx.deliveries.shareManualGate(new RedisSlots(redis), ctx.logger);

  await app.register(healthRoutes(ctx));
  await app.register(openApiRoutes(ctx));
  // Prometheus text. Like /readyz it is for the operator's network; it holds no tenant data.
  app.get(
    '/metrics',
    {
      schema: {
        tags: ['operations'],
        security: [],
        operationId: 'metrics',
        summary: 'Prometheus metrics (text exposition format)',
        response: {
          200: {
            description: 'The metrics of this process and the delivery queue.',
            content: {
              'text/plain': {
                schema: {
                  type: 'string',
                  examples: [
                    '# HELP payhooks_deliveries_total Deliveries by outcome.\n# TYPE payhooks_deliveries_total counter\npayhooks_deliveries_total{outcome="delivered"} 12\n',
                  ],
                },
              },
            },
          },
        },
      },
    },
    async (_req, reply) => reply.type(ctx.metrics.registry.contentType).send(await ctx.metrics.registry.metrics()),
  );
  const rule = { perSecond: ctx.config.rateLimitPerSecond, burst: ctx.config.rateLimitBurst };
  const failedInternalAuth = rateLimits.limit(
    'failed-internal-auth',
    rule,
    (req) => req.ip,
    'Too many requests with an invalid internal token from this address',
  );
  await app.register(
    async (internal) => {
      internal.addHook('onRequest', internalAuth(ctx, failedInternalAuth));
      await internal.register(internalEventRoutes(ctx));
      await internal.register(internalEventBatchRoutes(ctx));
      await internal.register(internalPaymentRoutes(ctx));
      await internal.register(internalPortalSessionRoutes(ctx));
      await internal.register(internalAlertSettingsRoutes(ctx));
      await internal.register(internalOperatorEndpointRoutes(ctx));
    },
    { prefix: '/internal/v1' },
  );
  await app.register(faviconRoutes);
  await app.register(emailUnsubscribeRoutes(ctx));
  await app.register(
    jwksRoutes(
      ctx,
      rateLimits.limit('jwks', rule, (req) => req.ip, 'Too many JWKS requests from this address'),
    ),
  );
  await app.register(checkoutPageRoutes(ctx));
  // `payhooks listen`: sessions live in the process holding their stream; on PostgreSQL the
  // hand-over reaches it from any API process (devtools/listen-sessions.ts, listen-relays.ts).
  const listenHub = new ListenHub(ctx.database, ctx.secrets, ctx.clock, ctx.logger, ctx.audit);
  await listenHub.start();
  app.addHook('onClose', async () => listenHub.stop());
  await app.register(listenRelayRoutes(listenHub));

  const perKey = rateLimits.limit('api-key', rule, (req) => req.scope.actor.id ?? req.ip, 'Too many requests for this API key');
  const failedAuth = rateLimits.limit('failed-auth', rule, (req) => req.ip, 'Too many requests with an invalid API key from this address');
  await app.register(
    async (v1) => {
      v1.addHook('onRequest', async (req) => {
        try {
          req.scope = await authenticate(ctx.database.db, req);
          req.auditSubject = req.scope;
        } catch (err) {
          // Failed authentications are limited per client address, so guessing keys (or
          // flooding with bad ones) costs the caller a 429 after the same budget a key gets.
          if (err instanceof AppError && err.kind === 'authentication') await failedAuth(req);
          throw err;
        }
        await perKey(req);
      });
      await v1.register(webhookEndpointRoutes(ctx));
      await v1.register(webhookStatsRoutes(ctx));
      await v1.register(webhookDeliveryRoutes(ctx));
      await v1.register(eventRoutes(ctx));
      await v1.register(eventTypeRoutes);
      await v1.register(paymentRoutes(ctx));
      await v1.register(checkoutSessionRoutes(ctx));
      await v1.register(sandboxRoutes(ctx));
      await v1.register(listenSessionRoutes(ctx, listenHub));
      await v1.register(auditEventRoutes(ctx));
    },
    { prefix: '/api/v1' },
  );
  const counters = sharedCounters({ redis, database: ctx.database, logger: ctx.logger });
  await portal(plain, ctx, { dist: options.portalDist, counters });
  return plain;
}

/**
 * The URL of the address `app` listens on, once it does (undefined before): what the context
 * offers as its public URL when PAYHOOKS_PUBLIC_URL is unset (`createContext`'s `listeningAt`).
 * Bound to every interface, it is offered on localhost: a browser can't open 0.0.0.0.
 */
export function listeningUrl(app: { addresses(): ReturnType<FastifyInstance['addresses']> }): string | undefined {
  const address = app.addresses()[0];
  if (!address || typeof address === 'string') return undefined;
  const host =
    address.address === '0.0.0.0' || address.address === '::'
      ? 'localhost'
      : address.family === 'IPv6'
        ? `[${address.address}]`
        : address.address;
  return `http://${host}:${address.port}`;
}

import type { ServerResponse } from 'node:http';
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import { sandboxOnly } from '../../payments/service.ts';
import { validateEnabledEvents } from '../../endpoints/enabled-events.ts';
import { HEARTBEAT_MS, type ListenHub } from '../../devtools/listen-sessions.ts';
import { RESPONSE_BODY_LIMIT } from '../../delivery/destinations/http.ts';
import { IdParams, errorResponses } from './schemas.ts';
import { EnabledEventTypeSchema } from './event-schemas.ts';
import { REQUEST_ID_HEADER } from '../request-id.ts';

const OpenBody = Type.Object(
  {
    enabled_events: Type.Optional(
      Type.Array(Type.Ref(EnabledEventTypeSchema), {
        minItems: 1,
        maxItems: 100,
        description: 'Event types to forward; default every type (`*`).',
      }),
    ),
  },
  { additionalProperties: false },
);

const ResultBody = Type.Object(
  {
    forward_id: Type.String({ minLength: 1, maxLength: 64 }),
    status_code: Type.Union([Type.Integer({ minimum: 100, maximum: 599 }), Type.Null()]),
    body: Type.String({ maxLength: RESPONSE_BODY_LIMIT }),
    duration_ms: Type.Integer({ minimum: 0 }),
    error: Type.Union([Type.String({ maxLength: 1000 }), Type.Null()]),
  },
  { additionalProperties: false },
);

/** Open streams, so a closing server ends them (a hijacked response would hold `close` open). */
const streams = new Set<ServerResponse>();

/**
 * `/api/v1/listen_sessions`: what `payhooks listen` talks to. `POST` opens a session (sandbox keys
 * only) and answers with a Server-Sent Events stream: one `session` event (the endpoint id and its
 * `whsec_` secret), then one `delivery` event per delivery to forward, and a comment every 15 s.
 * The CLI posts each forwarded delivery's outcome to `…/:id/results`. Closing the stream ends the
 * session.
 */
export const listenSessionRoutes =
  (ctx: ServiceContext, hub: ListenHub): FastifyPluginAsyncTypebox =>
  async (app) => {
    const tags = ['listen'];
    const security = [{ bearerAuth: [] }];

    app.addHook('preClose', async () => {
      for (const s of streams) s.end();
    });

    app.post(
      '/listen_sessions',
      {
        config: { audit: { action: 'listen_session.open', resource: 'webhook_endpoint' } },
        schema: {
          tags,
          security,
          operationId: 'openListenSession',
          summary: 'Open a listen session (an event stream of deliveries to forward)',
          description:
            'Used by `payhooks listen`. Answers with a Server-Sent Events stream: one `session` event (the endpoint id, its whsec_ secret, its url), then one `delivery` event per delivery to forward, and a comment every 15 s. Closing the stream ends the session.',
          body: Type.Optional(OpenBody),
          'x-optional-body': true,
          response: {
            200: {
              description: "The session's event stream.",
              content: {
                'text/event-stream': {
                  schema: {
                    type: 'string',
                    examples: [
                      'event: session\ndata: {"id":"we_1","object":"listen_session","secret":"whsec_…","enabled_events":["*"],"url":"http://localhost:3000/listen/we_1"}\n\n',
                    ],
                  },
                },
              },
            },
            ...errorResponses(403, 503),
          },
        },
      },
      async (req, reply) => {
        sandboxOnly(req.scope, 'payhooks listen');
        const body = (req.body ?? {}) as Static<typeof OpenBody>;
        const enabledEvents = validateEnabledEvents(body.enabled_events ?? ['*'], 'sandbox');
        const publicUrl = ctx.publicUrl();
        const raw = reply.raw;
        const write = (event: string, data: unknown) => raw.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
        const session = await hub.open(req.scope, { enabledEvents, publicUrl, push: (r) => write('delivery', r) });
        reply.hijack();
        raw.writeHead(200, {
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-cache',
          connection: 'keep-alive',
          [REQUEST_ID_HEADER]: req.id,
          'x-accel-buffering': 'no',
        });
        streams.add(raw);
        write('session', {
          id: session.id,
          object: 'listen_session',
          secret: session.secret,
          enabled_events: enabledEvents,
          url: session.url,
        });
        req.log.info({ endpoint_id: session.id }, `listen session ${session.id} opened`);
        const heartbeat = setInterval(() => {
          raw.write(': heartbeat\n\n');
          hub.heartbeat(session.id).catch((err: unknown) => req.log.warn({ err }, 'renewing a listen session lease failed'));
        }, HEARTBEAT_MS);
        raw.on('close', () => {
          clearInterval(heartbeat);
          streams.delete(raw);
          hub.end(session.id, req.scope).then(
            () => req.log.info({ endpoint_id: session.id }, `listen session ${session.id} ended`),
            (err: unknown) => req.log.warn({ err, endpoint_id: session.id }, 'ending a listen session failed; its lease will expire'),
          );
        });
      },
    );

    app.post(
      '/listen_sessions/:id/results',
      {
        config: { audit: { exempt: 'reports the outcome of a forwarded delivery, which the delivery log records as its attempt' } },
        schema: {
          tags,
          security,
          operationId: 'reportListenResult',
          summary: "Report a forwarded delivery's outcome",
          params: IdParams,
          body: ResultBody,
          response: {
            200: Type.Object({ received: Type.Boolean() }, { description: 'The outcome is recorded as the attempt.' }),
            ...errorResponses(404),
          },
        },
      },
      async (req) => {
        const body = req.body as Static<typeof ResultBody>;
        const ok = await hub.complete(req.params.id, req.scope, body.forward_id, body);
        // Unknown, another tenant's, ended, or already answered: all the same 404.
        if (!ok)
          throw new AppError(
            'not_found',
            'resource_missing',
            `No forwarded delivery ${body.forward_id} is waiting in listen session ${req.params.id}.`,
            { param: 'forward_id' },
          );
        return { received: true };
      },
    );
  };

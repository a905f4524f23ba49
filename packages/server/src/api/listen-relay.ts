import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { EVENT_ID_HEADER, SIGNATURE_HEADER, checkSignature } from '@payhooks/contract';
import type { ListenHub } from '../devtools/listen-sessions.ts';
import { AppError } from '../errors.ts';

/** The stored event is at most this big (events/publish.ts caps what it accepts well below). */
const RELAY_BODY_LIMIT = 1024 * 1024;

/**
 * `POST /listen/:id`: the URL of a listen session's endpoint. The delivery worker POSTs each
 * delivery here like to any endpoint; the relay checks the signature with the session's secret
 * (so nobody else can push requests to a developer's laptop), hands the exact bytes and the
 * signature header to the CLI, and answers with the local receiver's status and body, which
 * the worker records as the attempt. The session's stream may be held by another API process:
 * the hand-over then goes through the database (devtools/listen-relays.ts). A session that is
 * nowhere (ended, or its lease ran out) answers 404.
 */
export const listenRelayRoutes =
  (hub: ListenHub): FastifyPluginAsync =>
  async (app: FastifyInstance) => {
    // The bytes as sent: the signature covers them, and the CLI forwards them unchanged.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: RELAY_BODY_LIMIT }, (_req, body, done) => done(null, body));

    app.post<{ Params: { id: string } }>(
      '/listen/:id',
      {
        schema: { hide: true },
        config: { audit: { exempt: "a delivery attempt to a listen session's endpoint: the delivery log records it" } },
      },
      async (req, reply) => {
        const session = await hub.target(req.params.id);
        if (!session)
          throw new AppError('not_found', 'listen_session_not_connected', `No payhooks listen session is connected for ${req.params.id}.`);
        const bytes = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        const header = req.headers[SIGNATURE_HEADER.toLowerCase()];
        const eventId = req.headers[EVENT_ID_HEADER.toLowerCase()];
        const check =
          typeof header === 'string'
            ? checkSignature({ header, rawBody: bytes, secrets: [session.secret], nowSeconds: Math.floor(Date.now() / 1000) })
            : null;
        if (!check?.ok || typeof eventId !== 'string')
          throw new AppError('invalid_request', 'listen_signature_invalid', 'Not a delivery signed for this listen session.');
        let type = 'unknown';
        try {
          type = String((JSON.parse(bytes.toString('utf8')) as { type?: unknown }).type ?? 'unknown');
        } catch {
          // Signed by us, so JSON; the type is only for the CLI's line anyway.
        }
        const result = await hub.forward(req.params.id, session, {
          event_id: eventId,
          event_type: type,
          signature: header as string,
          body: bytes.toString('utf8'),
        });
        if (result.status_code === null || result.status_code < 200) {
          // The local receiver's failure, not ours: a 502 in our error shape, logged as the attempt's body.
          return reply.code(502).send({
            error: {
              type: 'api_error',
              code: 'listen_forward_failed',
              message: `payhooks listen could not forward the delivery: ${result.error ?? 'no answer'}`,
            },
          });
        }
        // The local receiver's answer, as text: the log never renders it as HTML.
        return reply.code(result.status_code).type('text/plain; charset=utf-8').send(result.body);
      },
    );
  };

import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../context.ts';
import { unsubscribe } from '../alerts/unsubscribe.ts';
import { requestOrigin } from './request-origin.ts';

/**
 * `/email/unsubscribe?token=…`: the link in every health mail. POST is RFC 8058's one-click
 * unsubscribe (a mail client posts `List-Unsubscribe=One-Click`, from no page and with no Origin,
 * so there is no CSRF token to check: the signed token is the authority, and it only ever turns
 * mail off). GET, from a person following the link, shows one button that posts it.
 */
export const emailUnsubscribeRoutes = (ctx: ServiceContext) => async (scope: FastifyInstance) => {
  // The one-click body (form-encoded, or multipart from some clients) is not read.
  for (const type of ['application/x-www-form-urlencoded', 'multipart/form-data'])
    scope.addContentTypeParser(type, { parseAs: 'string', bodyLimit: 4096 }, (_req, _body, done) => done(null, null));
  const headers = {
    'cache-control': 'no-store',
    'content-security-policy': "default-src 'none'; form-action 'self'; frame-ancestors 'none'",
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  };
  const token = (query: unknown) => String((query as { token?: unknown }).token ?? '');

  scope.get('/email/unsubscribe', { schema: { hide: true } }, async (req, reply) => {
    // The token is echoed only after this check: base64url and dots, nothing HTML can use.
    const t = token(req.query);
    const valid = /^[A-Za-z0-9_.-]{1,600}$/.test(t);
    void reply.headers(headers).type('text/html; charset=utf-8');
    return valid
      ? `<!doctype html><meta charset="utf-8"><title>Stop health mail</title><p>Stop the mails about your webhook endpoints' health?</p><form method="post" action="/email/unsubscribe?token=${t}"><button>Stop these mails</button></form>`
      : '<!doctype html><meta charset="utf-8"><title>Invalid link</title><p>This unsubscribe link is not valid: use the link of a recent mail.</p>';
  });

  scope.post(
    '/email/unsubscribe',
    { schema: { hide: true }, config: { audit: { action: 'health_mail.unsubscribe', resource: 'portal_user' } } },
    async (req, reply) => {
      const { email } = await unsubscribe(
        { db: ctx.database.db, secrets: ctx.secrets, audit: ctx.audit },
        token(req.query),
        requestOrigin(req),
      );
      void reply.headers(headers).type('text/plain; charset=utf-8');
      return `Done: ${email || 'this address'} gets no more mail about webhook endpoint health. An admin can turn it on again in the portal.\n`;
    },
  );
};

import formbody from '@fastify/formbody';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Tx } from '../../db/client.ts';
import type { CheckoutSessionRow } from '../../db/schema.ts';
import { requestOrigin } from '../request-origin.ts';
import type { ServiceContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import { successRedirect } from '../../payments/checkout.ts';
import { checkoutPage, errorPage, STYLESHEET, STYLESHEET_PATH } from './render.ts';

const CSRF_PURPOSE = 'checkout-csrf';

/**
 * A return URL as a header or a link may carry it: the parsed URL's serialisation (the parser
 * drops tabs and newlines; sessions created before issue 22 may hold them), or null when it does
 * not parse as an http(s) URL.
 */
export function safeUrl(raw: string | null): URL | null {
  if (!raw) return null;
  try {
    const url = new URL(raw);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url : null;
  } catch {
    return null;
  }
}

/** An origin fit for a CSP source list: scheme, host name or IP literal, port, nothing else. */
const CSP_ORIGIN = /^https?:\/\/(?:[a-z0-9.-]+|\[[0-9a-f:.]+\])(?::\d+)?$/;

/**
 * The CSP of every checkout page: no script at all, styles only from our stylesheet, no
 * framing, and forms may post only here. Chromium also applies `form-action` to the redirect a
 * form POST answers with, so the merchant's success and cancel origins are listed too: built
 * from the parsed URLs, and only when the origin is nothing but scheme, host and port (a host
 * like `shop.example;sandbox` would otherwise write a directive of its own).
 */
function securityHeaders(reply: FastifyReply, formTargets: Array<string | null> = []): FastifyReply {
  const origins = [
    ...new Set(formTargets.map((u) => safeUrl(u)?.origin).filter((o): o is string => typeof o === 'string' && CSP_ORIGIN.test(o))),
  ].join(' ');
  return reply.headers({
    'content-security-policy': `default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'${origins ? ` ${origins}` : ''}; frame-ancestors 'none'; base-uri 'none'`,
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    // The cs_ id in the page URL is the customer's access: never leak it to the next site.
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
  });
}

/** Back to the shop: its cancel_url, else the origin of its success_url. */
function shopUrlOf(session: { cancelUrl: string | null; successUrl: string }): string | null {
  return safeUrl(session.cancelUrl)?.href ?? (safeUrl(session.successUrl) ? `${safeUrl(session.successUrl)!.origin}/` : null);
}

function sendError(reply: FastifyReply, status: number, title: string, message: string) {
  return securityHeaders(reply).code(status).type('text/html; charset=utf-8').send(errorPage(title, message));
}

interface FormBody {
  csrf_token?: string;
}

/**
 * The hosted checkout page at a session's `url` (`/checkout/cs_…`): server-rendered HTML, no
 * API key (the unguessable session id is the customer's access). In sandbox it has Pay, Fail
 * and Cancel forms; each POST carries a CSRF token, an HMAC of the session id under the
 * server's key, so a POST can only come from a page this server rendered for that session.
 */
export const checkoutPageRoutes = (ctx: ServiceContext) => async (app: FastifyInstance) => {
  await app.register(formbody, { bodyLimit: 4096 });

  app.setErrorHandler((err, _req, reply) => {
    if (err instanceof AppError) {
      const title = err.status === 404 ? 'Checkout not found' : err.status === 403 ? 'Not available' : 'Checkout unavailable';
      return sendError(reply, err.status, title, err.message);
    }
    const status = (err as { statusCode?: number }).statusCode;
    if (status && status >= 400 && status < 500)
      return sendError(reply, status, 'Bad request', 'The form could not be read; reload the page and try again.');
    reply.log.error({ err }, 'checkout page error');
    return sendError(reply, 500, 'Something went wrong', 'Something went wrong on our side; reload the page.');
  });

  app.get(STYLESHEET_PATH, { schema: { hide: true } }, async (_req, reply) =>
    reply
      .headers({ 'x-content-type-options': 'nosniff', 'cache-control': 'public, max-age=3600' })
      .type('text/css; charset=utf-8')
      .send(STYLESHEET),
  );

  app.get<{ Params: { id: string } }>('/checkout/:id', { schema: { hide: true } }, async (req, reply) => {
    const found = await ctx.checkout.forPage(req.params.id);
    if (!found) return sendError(reply, 404, 'Checkout not found', 'No such checkout session. Check the link the shop gave you.');
    const { session, payment, shopName } = found;
    const now = ctx.clock.now();
    const expired = session.status === 'expired' || (session.status === 'open' && session.expiresAt <= now);
    const page = checkoutPage({
      shopName,
      description: session.description,
      sessionId: session.id,
      sessionStatus: expired ? 'expired' : session.status,
      paymentStatus: payment.status,
      amount: session.amount,
      assetCode: session.assetCode,
      environment: session.environment,
      csrfToken: ctx.secrets.tag(CSRF_PURPOSE, session.id),
      expiresAt: session.expiresAt,
      now,
      shopUrl: shopUrlOf(session),
    });
    return securityHeaders(reply, [session.successUrl, session.cancelUrl]).type('text/html; charset=utf-8').send(page);
  });

  const checkCsrf = (id: string, body: FormBody | undefined) => {
    const token = typeof body?.csrf_token === 'string' ? body.csrf_token : '';
    if (!ctx.secrets.verifyTag(CSRF_PURPOSE, id, token)) {
      throw new AppError(
        'forbidden',
        'csrf_token_invalid',
        'This form has expired or did not come from the checkout page; reload the page and try again.',
      );
    }
  };

  /** The customer's choice on the page, in the session's Platform's trail. */
  const recordCustomer = (tx: Tx, req: FastifyRequest, session: CheckoutSessionRow, action: string) =>
    ctx.audit.record(
      tx,
      {
        platformId: session.platformId,
        environment: session.environment,
        actor: { type: 'customer', id: null },
        origin: requestOrigin(req),
      },
      { action, resourceType: 'checkout_session', resourceId: session.id, changes: { status: session.status } },
    );
  const customerAudit = (action: string) => ({ audit: { action, resource: 'checkout_session' } });

  app.post<{ Params: { id: string }; Body: FormBody }>(
    '/checkout/:id/pay',
    { schema: { hide: true }, config: customerAudit('checkout_session.pay') },
    async (req, reply) => {
      checkCsrf(req.params.id, req.body);
      const session = await ctx.database.db.transaction(async (tx) => {
        const paid = await ctx.checkout.pay(req.params.id, tx);
        await recordCustomer(tx, req, paid, 'checkout_session.pay');
        return paid;
      });
      // The redirect and the webhooks race (spec 1): the shop must credit only on a verified
      // webhook or a server-side GET of the payment, never on this redirect.
      return securityHeaders(reply, [session.successUrl]).redirect(successRedirect(session.successUrl, session.id), 303);
    },
  );

  app.post<{ Params: { id: string }; Body: FormBody }>(
    '/checkout/:id/fail',
    { schema: { hide: true }, config: customerAudit('checkout_session.fail') },
    async (req, reply) => {
      checkCsrf(req.params.id, req.body);
      const session = await ctx.database.db.transaction(async (tx) => {
        const failed = await ctx.checkout.fail(req.params.id, tx);
        await recordCustomer(tx, req, failed, 'checkout_session.fail');
        return failed;
      });
      return securityHeaders(reply).redirect(`/checkout/${session.id}`, 303);
    },
  );

  app.post<{ Params: { id: string }; Body: FormBody }>(
    '/checkout/:id/cancel',
    {
      schema: { hide: true },
      config: { audit: { exempt: 'a redirect back to the shop: the session stays open and nothing changes' } },
    },
    async (req, reply) => {
      checkCsrf(req.params.id, req.body);
      const found = await ctx.checkout.forPage(req.params.id);
      if (!found) throw new AppError('not_found', 'resource_missing', 'No such checkout session.');
      // Like Stripe's cancel_url: the customer goes back to the shop (its cancel_url, else its
      // success_url's origin); the session stays open until it expires (or is paid from another tab).
      const target = shopUrlOf(found.session) ?? `/checkout/${found.session.id}`;
      return securityHeaders(reply, [target]).redirect(target, 303);
    },
  );
};

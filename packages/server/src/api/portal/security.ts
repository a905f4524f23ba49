import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../errors.ts';
import { csrfMatches, type PortalSession } from '../../portal/sessions.ts';

/** The session cookie: scoped to /portal, httpOnly, SameSite=Lax, Secure when served over TLS. */
export const SESSION_COOKIE = 'payhooks_portal';
/** The header the page sends the session's CSRF token in, on every mutation. */
export const CSRF_HEADER = 'x-csrf-token';

/**
 * The portal's pages: scripts and styles only from our origin (Vite emits them as files; no
 * inline script anywhere), no plugins, no framing, no <base> tricks, requests to our origin only.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export function securityHeaders(reply: FastifyReply): void {
  void reply.headers({
    'content-security-policy': CONTENT_SECURITY_POLICY,
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'same-origin',
    'cross-origin-opener-policy': 'same-origin',
  });
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
export const isMutation = (req: FastifyRequest) => !SAFE_METHODS.has(req.method);

/**
 * The Origin check of every mutation (sign-in included): the browser's Origin header (or, when
 * a browser leaves it out, the Referer's origin) must be this server's own origin as the
 * request addressed it. Requests from other sites, and mutations with neither header, are 403.
 */
export function checkOrigin(req: FastifyRequest): void {
  const expected = `${req.protocol}://${req.headers.host ?? ''}`;
  let origin = req.headers.origin;
  if (!origin && typeof req.headers.referer === 'string') {
    try {
      origin = new URL(req.headers.referer).origin;
    } catch {
      origin = undefined;
    }
  }
  if (!origin) throw new AppError('forbidden', 'origin_missing', 'Portal changes must come from the portal page: the request has no Origin header.');
  if (origin !== expected) throw new AppError('forbidden', 'cross_origin_request', `Portal changes must come from the portal page at ${expected}; this request came from ${origin.slice(0, 200)}.`);
}

/** The CSRF token check of every mutation made in a session (constant-time compare). */
export function checkCsrf(req: FastifyRequest, session: PortalSession): void {
  const sent = req.headers[CSRF_HEADER];
  if (!csrfMatches(session, typeof sent === 'string' ? sent : undefined)) {
    throw new AppError('forbidden', 'csrf_token_invalid', `Missing or wrong ${CSRF_HEADER} header: reload the portal page and try again.`);
  }
}

export function cookieOptions(req: FastifyRequest, expires?: Date) {
  return { path: '/portal', httpOnly: true, sameSite: 'lax' as const, secure: req.protocol === 'https', ...(expires ? { expires } : {}) };
}

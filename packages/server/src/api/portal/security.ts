import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../errors.ts';
import { csrfMatches, type PortalSession } from '../../accounts/sessions.ts';

/** The session cookie: scoped to /portal, httpOnly, SameSite=Lax, Secure when served over TLS. */
export const SESSION_COOKIE = 'payhooks_portal';
/** The header the page sends the session's CSRF token in, on every mutation. */
export const CSRF_HEADER = 'x-csrf-token';

/**
 * The portal's pages: scripts and styles only from our origin (Vite emits them as files; no
 * inline script anywhere), no plugins, no <base> tricks, requests to our origin only. Framing:
 * only by the origins of `PAYHOOKS_PORTAL_FRAME_ANCESTORS` (the payment service's portal that
 * embeds it), none by default.
 */
export function contentSecurityPolicy(frameAncestors: readonly string[]): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "font-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    `frame-ancestors ${frameAncestors.length ? frameAncestors.join(' ') : "'none'"}`,
  ].join('; ');
}

export function securityHeaders(reply: FastifyReply, frameAncestors: readonly string[]): void {
  void reply.headers({
    'content-security-policy': contentSecurityPolicy(frameAncestors),
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'same-origin',
  });
  // X-Frame-Options can only say "nobody" (or "same origin"); CSP's frame-ancestors names the
  // allowed hosts, and browsers that know it ignore X-Frame-Options anyway.
  if (frameAncestors.length === 0) void reply.header('x-frame-options', 'DENY');
  // A page that may be framed by another site can't insist on its own browsing context group:
  // same-origin would cut the framing page off from the frame's postMessage.
  void reply.header('cross-origin-opener-policy', frameAncestors.length === 0 ? 'same-origin' : 'same-origin-allow-popups');
}

/**
 * The session token of a request: the cookie of a password session, or, for a page opened
 * through the payment service's link (often inside its frame, where third-party cookies may not
 * be sent), `Authorization: Bearer <token>`. The page keeps that token in its own tab's
 * sessionStorage; another site can neither read it nor make the browser send it.
 */
export function sessionToken(req: FastifyRequest): string | undefined {
  const auth = req.headers.authorization;
  if (typeof auth === 'string') {
    const m = /^Bearer\s+([A-Za-z0-9_-]{1,100})$/.exec(auth);
    if (m) return m[1];
  }
  return req.cookies[SESSION_COOKIE];
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
export const isMutation = (req: FastifyRequest) => !SAFE_METHODS.has(req.method);

/** The page's origin as the browser states it: Origin, or the Referer's origin when a browser leaves Origin out. */
function pageOrigin(req: FastifyRequest): URL | null {
  for (const raw of [req.headers.origin, req.headers.referer]) {
    if (typeof raw !== 'string' || raw === 'null') continue;
    try {
      return new URL(raw);
    } catch {
      return null;
    }
  }
  return null;
}

/**
 * The Origin check of every mutation (sign-in included): the page's origin must name the host
 * (and port) the request was sent to. Only the host is compared, not the scheme: behind a
 * TLS-terminating proxy the browser says https while this process sees http, and the Host
 * header is passed through. Requests from other sites, and mutations with neither header, are 403.
 */
export function checkOrigin(req: FastifyRequest): void {
  const origin = pageOrigin(req);
  const host = req.headers.host ?? '';
  if (!origin)
    throw new AppError('forbidden', 'origin_missing', 'Portal changes must come from the portal page: the request has no Origin header.');
  if (origin.host !== host) {
    throw new AppError(
      'forbidden',
      'cross_origin_request',
      `Portal changes must come from the portal page on ${host}; this request came from ${origin.origin.slice(0, 200)}.`,
    );
  }
}

/** The CSRF token check of every mutation made in a session (constant-time compare). */
export function checkCsrf(req: FastifyRequest, session: PortalSession): void {
  const sent = req.headers[CSRF_HEADER];
  if (!csrfMatches(session, typeof sent === 'string' ? sent : undefined)) {
    throw new AppError('forbidden', 'csrf_token_invalid', `Missing or wrong ${CSRF_HEADER} header: reload the portal page and try again.`);
  }
}

/**
 * Secure when the page is on https: either this process terminates TLS, or the browser's Origin
 * says https (a TLS-terminating proxy in front). On plain http (development) a Secure cookie
 * would never come back, so it is left off there.
 */
export function cookieOptions(req: FastifyRequest, expires?: Date) {
  const secure = req.protocol === 'https' || pageOrigin(req)?.protocol === 'https:';
  return { path: '/portal', httpOnly: true, sameSite: 'lax' as const, secure, ...(expires ? { expires } : {}) };
}

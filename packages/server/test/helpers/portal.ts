import type { DeliveryWorker } from '../../src/delivery/worker.ts';
import type { ServiceContext } from '../../src/context.ts';
import type { Scope } from '../../src/scope.ts';

export interface PortalResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export interface PortalClient {
  /** The session as sign-in returned it (csrf_token, environment, platform). */
  session: any;
  cookie: string;
  /**
   * A portal API call with the session cookie, the page's Origin and the CSRF token, as the
   * portal page sends them. `origin: null` / `csrf: null` leave the header out; a string
   * replaces it.
   */
  call(
    method: string,
    path: string,
    body?: unknown,
    options?: { origin?: string | null; csrf?: string | null; cookie?: string | null },
  ): Promise<PortalResponse>;
}

export function portalRequest(
  baseUrl: string,
  method: string,
  path: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<PortalResponse> {
  return jsonRequest(`${baseUrl}/portal/api${path}`, method, body, headers);
}

/** A JSON request; the answer parsed when it is JSON, kept as text otherwise. */
async function jsonRequest(url: string, method: string, body: unknown, headers: Record<string, string>): Promise<PortalResponse> {
  const h = { ...headers };
  if (body !== undefined) h['content-type'] = 'application/json';
  const res = await fetch(url, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body), redirect: 'manual' });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

/** Signs in over HTTP like the sign-in form does; throws unless it worked. */
export async function portalSignIn(baseUrl: string, email: string, password: string): Promise<PortalClient> {
  const res = await portalRequest(baseUrl, 'POST', '/session', { email, password }, { origin: baseUrl });
  if (res.status !== 200) throw new Error(`sign-in failed: ${res.status} ${res.text}`);
  return clientOf(baseUrl, res);
}

/** The session cookie a response set (the first Set-Cookie of `payhooks_portal`). */
export function sessionCookieOf(res: PortalResponse): string {
  const all = res.headers.getSetCookie();
  const cookie = all.find((c) => c.startsWith('payhooks_portal='));
  if (!cookie) throw new Error(`no session cookie in ${JSON.stringify(all)}`);
  return cookie.split(';')[0]!;
}

/** A client on the session a response started: its cookie, or (`bearer`) the token of an embedded page. */
export function clientOf(baseUrl: string, res: PortalResponse, options: { bearer?: string } = {}): PortalClient {
  const cookie = options.bearer ? '' : sessionCookieOf(res);
  const client: PortalClient = {
    session: res.body,
    cookie,
    call(method, path, body, callOptions = {}) {
      const headers: Record<string, string> = {};
      const origin = callOptions.origin === undefined ? baseUrl : callOptions.origin;
      if (origin !== null) headers.origin = origin;
      const c = callOptions.cookie === undefined ? cookie : callOptions.cookie;
      if (c) headers.cookie = c;
      if (options.bearer && callOptions.cookie === undefined) headers.authorization = `Bearer ${options.bearer}`;
      if (method !== 'GET') {
        const csrf = callOptions.csrf === undefined ? client.session.csrf_token : callOptions.csrf;
        if (csrf !== null) headers['x-csrf-token'] = csrf;
      }
      return portalRequest(baseUrl, method, path, body, headers);
    },
  };
  return client;
}

/** The token in a link's fragment (`…#token=…`). */
export const tokenOf = (url: string) => new URL(url).hash.replace(/^#token=/, '');

/** Invites `email` as `role` from an admin's session and accepts it: a client signed in as the new user. */
export async function inviteAndAccept(
  baseUrl: string,
  admin: PortalClient,
  email: string,
  role: 'viewer' | 'developer' | 'admin',
  password = 'a long enough password',
): Promise<PortalClient> {
  const invited = await admin.call('POST', '/invitations', { email, role });
  if (invited.status !== 201) throw new Error(`invite failed: ${invited.status} ${invited.text}`);
  const accepted = await portalRequest(
    baseUrl,
    'POST',
    '/invitation/accept',
    { token: tokenOf(invited.body.url), password },
    { origin: baseUrl },
  );
  if (accepted.status !== 200) throw new Error(`accept failed: ${accepted.status} ${accepted.text}`);
  return clientOf(baseUrl, accepted);
}

/** An internal-API call with the operator's token. */
export function internalCall(baseUrl: string, token: string, method: string, path: string, body?: unknown): Promise<PortalResponse> {
  return jsonRequest(`${baseUrl}/internal/v1${path}`, method, body, { authorization: `Bearer ${token}` });
}

/** Asks for the payment service's link and opens it as the page does: a client on the embedded session (bearer token). */
export async function embeddedSignIn(
  baseUrl: string,
  internalToken: string,
  request: {
    merchant_id: string;
    environment: string;
    role: string;
    user: { id: string; email?: string; name?: string };
    return_url?: string;
  },
): Promise<PortalClient> {
  const link = await internalCall(baseUrl, internalToken, 'POST', '/portal_sessions', request);
  if (link.status !== 201) throw new Error(`portal session failed: ${link.status} ${link.text}`);
  const opened = await portalRequest(baseUrl, 'POST', '/session/link', { token: tokenOf(link.body.url) }, { origin: baseUrl });
  if (opened.status !== 200) throw new Error(`link failed: ${opened.status} ${opened.text}`);
  return clientOf(baseUrl, opened, { bearer: opened.body.session_token });
}

/**
 * Runs the worker until the deliveries of `endpointId` reach `state` (use a retry schedule of a
 * few milliseconds, so each round finds the next retry due).
 */
export async function drainUntil(
  ctx: ServiceContext,
  worker: DeliveryWorker,
  scope: Scope,
  endpointId: string,
  state: string,
  count = 1,
): Promise<void> {
  for (let i = 0; i < 200; i++) {
    await worker.drain();
    const page = await ctx.deliveries.list(scope, { limit: 100, endpointId, state: state as never });
    if (page.data.length >= count) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`deliveries of ${endpointId} did not reach ${state}`);
}

import type { DeliveryWorker } from '../../src/delivery/worker.ts';
import type { ServiceContext } from '../../src/context.ts';
import type { Scope } from '../../src/tenancy/scope.ts';

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

export async function portalRequest(
  baseUrl: string,
  method: string,
  path: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<PortalResponse> {
  const h = { ...headers };
  if (body !== undefined) h['content-type'] = 'application/json';
  const res = await fetch(`${baseUrl}/portal/api${path}`, {
    method,
    headers: h,
    body: body === undefined ? undefined : JSON.stringify(body),
    redirect: 'manual',
  });
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
  const cookie = res.headers.get('set-cookie')!.split(';')[0]!;
  const client: PortalClient = {
    session: res.body,
    cookie,
    call(method, path, body, options = {}) {
      const headers: Record<string, string> = {};
      const origin = options.origin === undefined ? baseUrl : options.origin;
      if (origin !== null) headers.origin = origin;
      const c = options.cookie === undefined ? cookie : options.cookie;
      if (c !== null) headers.cookie = c;
      if (method !== 'GET') {
        const csrf = options.csrf === undefined ? client.session.csrf_token : options.csrf;
        if (csrf !== null) headers['x-csrf-token'] = csrf;
      }
      return portalRequest(baseUrl, method, path, body, headers);
    },
  };
  return client;
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

/** The portal's JSON API (/portal/api). Mutations carry the session's CSRF token in a header. */

export type Environment = 'sandbox' | 'live';
export type DeliveryState = 'pending' | 'delivered' | 'failed_retrying' | 'exhausted' | 'cancelled';

export interface Session {
  user: { id: string; email: string };
  platform: { id: string; name: string };
  environment: Environment;
  csrf_token: string;
}

export interface Stats {
  attempts: number;
  succeeded: number;
  success_rate: number | null;
  hourly: Array<{ attempts: number; succeeded: number }>;
}

export interface Endpoint {
  id: string;
  url: string;
  enabled_events: string[];
  description: string | null;
  status: 'enabled' | 'disabled';
  environment: Environment;
  created_at: string;
  updated_at: string;
  stats?: Stats;
  secret?: string;
  /** `failing`: disabled automatically because every delivery kept failing. */
  disabled_reason: 'manual' | 'failing' | null;
  disabled_at: string | null;
  /** After "Roll secret": until when the previous secret still signs too. */
  previous_secret_expires_at: string | null;
}

export interface Attempt {
  id: string;
  attempt_number: number;
  trigger: 'automatic' | 'manual';
  succeeded: boolean;
  started_at: string;
  duration_ms: number;
  status_code: number | null;
  response_body: string | null;
  error_kind: string | null;
  error_message: string | null;
  /** The worker that held an `interrupted` attempt. */
  worker_id: string | null;
}

export interface DeliveryRow {
  id: string;
  event_id: string;
  event_type: string | null;
  endpoint_id: string;
  endpoint_url: string | null;
  state: DeliveryState;
  /** Why a cancelled delivery ended: `endpoint_deleted`. */
  cancel_reason: string | null;
  attempt_count: number;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  created_at: string;
  last_attempt: Attempt | null;
}

export interface Delivery extends Omit<DeliveryRow, 'last_attempt'> {
  attempts: Attempt[];
  event_body: string;
  endpoint_deleted: boolean;
}

export interface EventView {
  id: string;
  type: string;
  created_at: string;
  body: string;
}

export interface BulkReplay {
  id: string;
  endpoint_id: string;
  since: string;
  status: 'running' | 'finished' | 'stopped';
  total: number;
  attempted: number;
  delivered: number;
  failed: number;
  skipped: number;
}

export interface Catalog {
  event_types: string[];
  wildcard: string;
  required_live_event_types: string[];
}

export interface Page<T> {
  data: T[];
  has_more: boolean;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly param?: string,
  ) {
    super(message);
  }
}

let csrfToken = '';
/** Called whenever a session arrives, so later mutations carry its token. */
export function setCsrfToken(token: string): void {
  csrfToken = token;
}

/** Set by the app: called on a 401 so the page goes back to sign-in. */
export let onSignedOut: () => void = () => {};
export function setOnSignedOut(fn: () => void): void {
  onSignedOut = fn;
}

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken;
  const res = await fetch(`/portal/api${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
  });
  const text = await res.text();
  const parsed = text ? (JSON.parse(text) as unknown) : undefined;
  if (!res.ok) {
    const e = (parsed as { error?: { code?: string; message?: string; param?: string } } | undefined)?.error;
    if (res.status === 401 && e?.code === 'not_signed_in') onSignedOut();
    throw new ApiError(res.status, e?.code ?? 'error', e?.message ?? `Request failed (${res.status}).`, e?.param);
  }
  return parsed as T;
}

const qs = (params: Record<string, string | number | undefined>) => {
  const entries = Object.entries(params).filter(([, v]) => v !== undefined && v !== '') as [string, string][];
  return entries.length ? `?${new URLSearchParams(entries.map(([k, v]) => [k, String(v)])).toString()}` : '';
};

export const api = {
  session: () => call<Session>('GET', '/session'),
  signIn: (email: string, password: string) => call<Session>('POST', '/session', { email, password }),
  signOut: () => call<unknown>('DELETE', '/session'),
  switchEnvironment: (environment: Environment) => call<Session>('PUT', '/session/environment', { environment }),
  catalog: () => call<Catalog>('GET', '/catalog'),
  endpoints: (startingAfter?: string) => call<Page<Endpoint>>('GET', `/endpoints${qs({ limit: 20, starting_after: startingAfter })}`),
  endpoint: (id: string) => call<Endpoint>('GET', `/endpoints/${encodeURIComponent(id)}`),
  createEndpoint: (input: { url: string; enabled_events: string[]; description: string | null }) =>
    call<Endpoint>('POST', '/endpoints', input),
  updateEndpoint: (id: string, input: Partial<Pick<Endpoint, 'url' | 'enabled_events' | 'description' | 'status'>>) =>
    call<Endpoint>('PATCH', `/endpoints/${encodeURIComponent(id)}`, input),
  deleteEndpoint: (id: string) => call<unknown>('DELETE', `/endpoints/${encodeURIComponent(id)}`),
  rotateSecret: (id: string, expirePreviousIn: number) =>
    call<Endpoint & { secret: string }>('POST', `/endpoints/${encodeURIComponent(id)}/rotate_secret`, {
      expire_previous_in: expirePreviousIn,
    }),
  sendTestEvent: (id: string) =>
    call<{ event_id: string; delivery_id: string | null }>('POST', `/endpoints/${encodeURIComponent(id)}/test_event`),
  bulkReplay: (id: string, since: string) => call<BulkReplay>('POST', `/endpoints/${encodeURIComponent(id)}/bulk_replays`, { since }),
  bulkReplayStatus: (id: string) => call<BulkReplay>('GET', `/bulk_replays/${encodeURIComponent(id)}`),
  deliveries: (filter: { endpoint_id?: string; event_id?: string; state?: string; starting_after?: string; limit?: number }) =>
    call<Page<DeliveryRow>>('GET', `/deliveries${qs({ limit: 20, ...filter })}`),
  delivery: (id: string) => call<Delivery>('GET', `/deliveries/${encodeURIComponent(id)}`),
  replay: (id: string) => call<Delivery>('POST', `/deliveries/${encodeURIComponent(id)}/replay`),
  resend: (id: string) => call<Delivery>('POST', `/deliveries/${encodeURIComponent(id)}/resend`),
  event: (id: string) => call<EventView>('GET', `/events/${encodeURIComponent(id)}`),
};

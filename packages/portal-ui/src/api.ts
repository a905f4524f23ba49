/** The portal's JSON API (/portal/api). Mutations carry the session's CSRF token in a header. */

import type { components, operations } from './generated/portal-api.ts';

/**
 * The server's answers, typed from the portal's own OpenAPI document (GET /portal/api/openapi.json)
 * by openapi-typescript (generated/portal-api.ts, checked for staleness by the server's tests):
 * a field the server stops sending, or sends in another shape, fails `npm run typecheck` here.
 */
type Json<T> = T extends { content: { 'application/json': infer B } } ? B : never;
type Ok<Op extends keyof operations, Status extends number = 200> = Json<
  operations[Op]['responses'] extends Record<Status, infer R> ? R : never
>;

export type Session = Ok<'portalSession'>;
export type Environment = Session['environment'];
export type Endpoint = Ok<'portalRetrieveEndpoint'>;
/** An endpoint as created or rolled: with its signing secret, shown once. */
export type EndpointWithSecret = Ok<'portalCreateEndpoint', 201>;
export type Stats = Endpoint['stats'];
export type Catalog = Ok<'portalCatalog'>;
export type DeliveryRow = Ok<'portalListDeliveries'>['data'][number];
export type DeliveryState = DeliveryRow['state'];
export type Delivery = Ok<'portalRetrieveDelivery'>;
export type Attempt = components['schemas']['DeliveryAttempt'];
export type EventView = Ok<'portalRetrieveEvent'>;
export type BulkReplay = Ok<'portalBulkReplay'>;
export type BulkReplayPreview = Ok<'portalPreviewBulkReplay'>;
export type ShopSettings = Ok<'portalSettings'>;
export type TestEvent = Ok<'portalSendTestEvent', 201>;

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
    call<EndpointWithSecret>('POST', '/endpoints', input),
  updateEndpoint: (
    id: string,
    input: {
      url?: string;
      enabled_events?: string[];
      description?: string | null;
      status?: Endpoint['status'];
      delivery_order?: Endpoint['delivery_order'];
    },
  ) => call<Endpoint>('PATCH', `/endpoints/${encodeURIComponent(id)}`, input),
  deleteEndpoint: (id: string) => call<unknown>('DELETE', `/endpoints/${encodeURIComponent(id)}`),
  rotateSecret: (id: string, expirePreviousIn: number) =>
    call<EndpointWithSecret>('POST', `/endpoints/${encodeURIComponent(id)}/rotate_secret`, {
      expire_previous_in: expirePreviousIn,
    }),
  sendTestEvent: (id: string) => call<TestEvent>('POST', `/endpoints/${encodeURIComponent(id)}/test_event`),
  bulkReplayPreview: (id: string, since: string) =>
    call<BulkReplayPreview>('GET', `/endpoints/${encodeURIComponent(id)}/bulk_replays/preview${qs({ since })}`),
  bulkReplay: (id: string, since: string) => call<BulkReplay>('POST', `/endpoints/${encodeURIComponent(id)}/bulk_replays`, { since }),
  bulkReplayStatus: (id: string) => call<BulkReplay>('GET', `/bulk_replays/${encodeURIComponent(id)}`),
  deliveries: (filter: DeliveryFilter) => call<Page<DeliveryRow>>('GET', `/deliveries${qs({ limit: 20, ...filter })}`),
  delivery: (id: string) => call<Delivery>('GET', `/deliveries/${encodeURIComponent(id)}`),
  replay: (id: string) => call<Delivery>('POST', `/deliveries/${encodeURIComponent(id)}/replay`),
  resend: (id: string) => call<Delivery>('POST', `/deliveries/${encodeURIComponent(id)}/resend`),
  cancelDelivery: (id: string) => call<Delivery>('POST', `/deliveries/${encodeURIComponent(id)}/cancel`),
  event: (id: string) => call<EventView>('GET', `/events/${encodeURIComponent(id)}`),
  settings: () => call<ShopSettings>('GET', '/settings'),
  updateSettings: (displayName: string | null) => call<ShopSettings>('PUT', '/settings', { display_name: displayName }),
};

/** The delivery log's filters (all optional). */
export interface DeliveryFilter {
  endpoint_id?: string;
  event_id?: string;
  /** The object an event is about: a payment (pay_…) or a checkout session (cs_…). */
  object_id?: string;
  state?: string;
  type?: string;
  'created[gte]'?: string;
  'created[lt]'?: string;
  starting_after?: string;
  limit?: number;
}

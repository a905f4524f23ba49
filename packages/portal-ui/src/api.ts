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
/** The JSON body an operation takes. */
type Body<Op extends keyof operations> = Json<NonNullable<operations[Op]['requestBody']>>;

export type Session = Ok<'portalSession'>;
export type Role = Session['role'];
export type Environment = Session['environment'];
export type Theme = Session['theme'];
/** Password sign-in: a session, or the two-factor step. */
export type SignInAnswer = Ok<'portalSignIn'>;
export type TwoFactorChallenge = Extract<SignInAnswer, { object: 'two_factor_challenge' }>;
/** An opened link of the payment service: the session and its token, sent back as a bearer token. */
export type LinkSession = Ok<'portalOpenLink'>;
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
export type SettingsChange = Body<'portalUpdateSettings'>;
export type TestEvent = Ok<'portalSendTestEvent', 201>;
export type EventTypeEntry = Ok<'portalEventTypes'>['data'][number];
/** Health over time: an endpoint's or the Platform's buckets (the charts' data). */
export type WebhookStats = Ok<'portalStats'>;
export type StatsQuery = NonNullable<operations['portalStats']['parameters']['query']>;
export type TeamUser = Ok<'portalListUsers'>['data'][number];
export type Invitation = Ok<'portalListInvitations'>['data'][number];
/** A new invitation: with its link (shown once) and whether it was emailed. */
export type CreatedInvitation = Ok<'portalInvite', 201>;
export type InvitationPreview = Ok<'portalInspectInvitation'>;
export type PasswordResetPreview = Ok<'portalInspectPasswordReset'>;
export type PasswordReset = Ok<'portalResetPassword'>;
export type Account = Ok<'portalAccount'>;
export type TwoFactorSetup = Ok<'portalStartTwoFactor'>;
export type RecoveryCodes = Ok<'portalEnableTwoFactor'>;
export type AuditEvent = Ok<'portalAuditEvents'>['data'][number];
export type AuditFilter = NonNullable<operations['portalAuditEvents']['parameters']['query']>;

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
/**
 * Which session a request was sent under: a new session (a new CSRF token) starts a new one. A
 * 401 to a request of an earlier session, answered after the user signed in again (a slow read
 * sent just before the old session ended), must not end the new one.
 */
let sessionGeneration = 0;
/** Called whenever a session arrives, so later mutations carry its token. */
export function setCsrfToken(token: string): void {
  if (token !== csrfToken) sessionGeneration++;
  csrfToken = token;
}

/**
 * The bearer token of a session opened through the payment service's link. Such a page is often
 * inside the payment service's frame, where the browser may not send our cookie: the token is
 * kept in this tab's sessionStorage (another site can neither read it nor make the browser send
 * it) and sent as `Authorization: Bearer …` on every call while it is there. A copy in memory
 * serves when storage is blocked.
 */
export const SESSION_TOKEN_KEY = 'payhooks.session_token';
let memoryToken: string | null = null;

export function sessionToken(): string | null {
  try {
    return window.sessionStorage.getItem(SESSION_TOKEN_KEY) ?? memoryToken;
  } catch {
    return memoryToken;
  }
}

export function setSessionToken(token: string | null): void {
  memoryToken = token;
  try {
    if (token === null) window.sessionStorage.removeItem(SESSION_TOKEN_KEY);
    else window.sessionStorage.setItem(SESSION_TOKEN_KEY, token);
  } catch {
    // storage blocked (a sandboxed frame): the copy in memory lasts as long as the page
  }
}

/** The 401 codes that mean the session is gone; the message says why (for people). */
export const SESSION_ENDED_CODES = ['not_signed_in', 'session_idle', 'session_expired'] as const;
export interface SessionEnded {
  code: string;
  message: string;
  /** The request carried the bearer token of an embedded session. */
  bearer: boolean;
}

/** Set by the app: called on a 401 that ends the session, with the server's code and message. */
let onSessionEnded: (why: SessionEnded) => void = () => {};
export function setOnSessionEnded(fn: (why: SessionEnded) => void): void {
  onSessionEnded = fn;
}

/** Set by the app: a 403 saying the session changed under the page (role changed, two-factor set-up required). */
let onSessionChanged: (code: string) => void = () => {};
export function setOnSessionChanged(fn: (code: string) => void): void {
  onSessionChanged = fn;
}

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken;
  const bearer = sessionToken();
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  const generation = sessionGeneration;
  const res = await fetch(`/portal/api${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? (JSON.parse(text) as unknown) : undefined;
  } catch {
    parsed = undefined; // a proxy's error page
  }
  if (!res.ok) {
    const e = (parsed as { error?: { code?: string; message?: string; param?: string } } | undefined)?.error;
    const error = new ApiError(res.status, e?.code ?? 'error', e?.message ?? `Request failed (${res.status}).`, e?.param);
    if (res.status === 401) {
      // Whatever the reason, a token the server refused is of no further use.
      if (bearer && generation === sessionGeneration) setSessionToken(null);
      if (generation === sessionGeneration && (SESSION_ENDED_CODES as readonly string[]).includes(error.code))
        onSessionEnded({ code: error.code, message: error.message, bearer: !!bearer });
    }
    if (res.status === 403 && (error.code === 'insufficient_role' || error.code === 'two_factor_setup_required'))
      onSessionChanged(error.code);
    throw error;
  }
  return parsed as T;
}

const qs = (params: Record<string, string | number | undefined>) => {
  const entries = Object.entries(params).filter(([, v]) => v !== undefined && v !== '') as [string, string][];
  return entries.length ? `?${new URLSearchParams(entries.map(([k, v]) => [k, String(v)])).toString()}` : '';
};
const id = encodeURIComponent;

export const api = {
  session: () => call<Session>('GET', '/session'),
  signIn: (email: string, password: string) => call<SignInAnswer>('POST', '/session', { email, password } satisfies Body<'portalSignIn'>),
  signInTwoFactor: (challenge: string, code: string) =>
    call<Ok<'portalSignInTwoFactor'>>('POST', '/session/two_factor', { challenge, code } satisfies Body<'portalSignInTwoFactor'>),
  openLink: (token: string) => call<LinkSession>('POST', '/session/link', { token } satisfies Body<'portalOpenLink'>),
  signOut: () => call<Ok<'portalSignOut'>>('DELETE', '/session'),
  switchEnvironment: (environment: Environment) => call<Session>('PUT', '/session/environment', { environment }),
  catalog: () => call<Catalog>('GET', '/catalog'),
  endpoints: (startingAfter?: string, limit = 20) =>
    call<Page<Endpoint>>('GET', `/endpoints${qs({ limit, starting_after: startingAfter })}`),
  endpoint: (endpointId: string) => call<Endpoint>('GET', `/endpoints/${id(endpointId)}`),
  createEndpoint: (input: {
    url: string;
    enabled_events: string[];
    description: string | null;
    standard_webhooks?: boolean;
    headers?: Record<string, string> | null;
    max_requests_per_second?: Endpoint['max_requests_per_second'];
    asymmetric_signature?: boolean;
  }) => call<EndpointWithSecret>('POST', '/endpoints', input),
  updateEndpoint: (
    endpointId: string,
    input: {
      url?: string;
      enabled_events?: string[];
      description?: string | null;
      status?: Endpoint['status'];
      delivery_order?: Endpoint['delivery_order'];
      standard_webhooks?: boolean;
      headers?: Record<string, string> | null;
      max_requests_per_second?: Endpoint['max_requests_per_second'];
      asymmetric_signature?: boolean;
    },
  ) => call<Endpoint>('PATCH', `/endpoints/${id(endpointId)}`, input),
  deleteEndpoint: (endpointId: string) => call<unknown>('DELETE', `/endpoints/${id(endpointId)}`),
  rotateSecret: (endpointId: string, expirePreviousIn: number) =>
    call<EndpointWithSecret>('POST', `/endpoints/${id(endpointId)}/rotate_secret`, {
      expire_previous_in: expirePreviousIn,
    }),
  rotateSigningKey: (endpointId: string, expirePreviousIn: number) =>
    call<Endpoint>('POST', `/endpoints/${id(endpointId)}/rotate_signing_key`, { expire_previous_in: expirePreviousIn }),
  sendTestEvent: (endpointId: string, type?: string) =>
    call<TestEvent>('POST', `/endpoints/${id(endpointId)}/test_event`, type ? { type } : undefined),
  eventTypes: () => call<Ok<'portalEventTypes'>>('GET', '/event_types'),
  stats: (query: StatsQuery) => call<WebhookStats>('GET', `/stats${qs(query)}`),
  endpointStats: (endpointId: string, query: StatsQuery) => call<WebhookStats>('GET', `/endpoints/${id(endpointId)}/stats${qs(query)}`),
  bulkReplayPreview: (endpointId: string, since: string) =>
    call<BulkReplayPreview>('GET', `/endpoints/${id(endpointId)}/bulk_replays/preview${qs({ since })}`),
  bulkReplay: (endpointId: string, since: string) => call<BulkReplay>('POST', `/endpoints/${id(endpointId)}/bulk_replays`, { since }),
  bulkReplayStatus: (jobId: string) => call<BulkReplay>('GET', `/bulk_replays/${id(jobId)}`),
  deliveries: (filter: DeliveryFilter) => call<Page<DeliveryRow>>('GET', `/deliveries${qs({ limit: 20, ...filter })}`),
  delivery: (deliveryId: string) => call<Delivery>('GET', `/deliveries/${id(deliveryId)}`),
  replay: (deliveryId: string) => call<Delivery>('POST', `/deliveries/${id(deliveryId)}/replay`),
  resend: (deliveryId: string) => call<Delivery>('POST', `/deliveries/${id(deliveryId)}/resend`),
  cancelDelivery: (deliveryId: string) => call<Delivery>('POST', `/deliveries/${id(deliveryId)}/cancel`),
  event: (eventId: string) => call<EventView>('GET', `/events/${id(eventId)}`),
  settings: () => call<ShopSettings>('GET', '/settings'),
  updateSettings: (change: SettingsChange) => call<Ok<'portalUpdateSettings'>>('PUT', '/settings', change),

  // The team (admins)
  users: () => call<Ok<'portalListUsers'>>('GET', '/users'),
  changeRole: (userId: string, role: Role) =>
    call<Ok<'portalChangeRole'>>('PATCH', `/users/${id(userId)}`, { role } satisfies Body<'portalChangeRole'>),
  removeUser: (userId: string) => call<Ok<'portalRemoveUser'>>('DELETE', `/users/${id(userId)}`),
  invitations: () => call<Ok<'portalListInvitations'>>('GET', '/invitations'),
  invite: (email: string, role: Role) => call<CreatedInvitation>('POST', '/invitations', { email, role } satisfies Body<'portalInvite'>),
  revokeInvitation: (invitationId: string) => call<Ok<'portalRevokeInvitation'>>('DELETE', `/invitations/${id(invitationId)}`),

  // Single-use links opened without a session
  inspectInvitation: (token: string) =>
    call<InvitationPreview>('POST', '/invitation/inspect', { token } satisfies Body<'portalInspectInvitation'>),
  acceptInvitation: (token: string, password: string, name: string | null) =>
    call<Ok<'portalAcceptInvitation'>>('POST', '/invitation/accept', { token, password, name } satisfies Body<'portalAcceptInvitation'>),
  inspectPasswordReset: (token: string) =>
    call<PasswordResetPreview>('POST', '/password_reset/inspect', { token } satisfies Body<'portalInspectPasswordReset'>),
  resetPassword: (token: string, password: string) =>
    call<PasswordReset>('POST', '/password_reset', { token, password } satisfies Body<'portalResetPassword'>),

  // One's own account (password sessions)
  account: () => call<Account>('GET', '/account'),
  changePassword: (current: string, next: string) =>
    call<Ok<'portalChangePassword'>>('PUT', '/account/password', {
      current_password: current,
      new_password: next,
    } satisfies Body<'portalChangePassword'>),
  setHealthMail: (on: boolean) =>
    call<Ok<'portalSetHealthMail'>>('PUT', '/account/health_mail', { health_mail: on } satisfies Body<'portalSetHealthMail'>),
  startTwoFactor: () => call<TwoFactorSetup>('POST', '/account/two_factor/setup'),
  enableTwoFactor: (code: string) =>
    call<RecoveryCodes>('POST', '/account/two_factor/enable', { code } satisfies Body<'portalEnableTwoFactor'>),
  disableTwoFactor: (password: string) =>
    call<Ok<'portalDisableTwoFactor'>>('DELETE', '/account/two_factor', { password } satisfies Body<'portalDisableTwoFactor'>),
  newRecoveryCodes: (password: string) =>
    call<Ok<'portalNewRecoveryCodes'>>('POST', '/account/two_factor/recovery_codes', { password } satisfies Body<'portalNewRecoveryCodes'>),

  // The audit trail (admins)
  auditEvents: (filter: AuditFilter) => call<Ok<'portalAuditEvents'>>('GET', `/audit_events${qs({ limit: 50, ...filter })}`),
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

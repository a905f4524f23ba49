import { EVENT_TYPES, REQUIRED_LIVE_EVENT_TYPES, WILDCARD_EVENT_TYPE } from '@payhooks/contract';
import { CSRF_HEADER } from '../portal/security.ts';
import { DeliverySchema } from '../v1/webhook-deliveries.ts';

/**
 * How the routes without a TypeBox response schema appear in the public document: the portal's
 * JSON API (its handlers add fields such as `stats`, so a response schema would also reshape
 * what they send) and the listen relay. Only
 * the document reads these (via @fastify/swagger's per-route `swaggerTransform`); requests are
 * validated as before. Keyed `METHOD url`; a route of these families without an entry fails
 * at start, so a new route can't be left out of the document.
 */

type Schema = Record<string, unknown>;
const ref = (id: string): Schema => ({ $ref: id });
const error = ref('Error');
const nullable = (s: Schema): Schema => ({ anyOf: [s, { type: 'null' }] });
const obj = (properties: Record<string, Schema>, extra: Schema = {}): Schema => ({
  type: 'object',
  required: Object.keys(properties),
  properties,
  ...extra,
});
const json = (description: string, schema: Schema): Schema => ({ ...schema, description });
const idParam = (description: string): Schema => ({
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', minLength: 1, maxLength: 64, description } },
});

const Stats = obj(
  {
    attempts: { type: 'integer', minimum: 0 },
    succeeded: { type: 'integer', minimum: 0 },
    success_rate: nullable({ type: 'number', minimum: 0, maximum: 1 }),
    hourly: {
      type: 'array',
      items: obj({ attempts: { type: 'integer', minimum: 0 }, succeeded: { type: 'integer', minimum: 0 } }),
      description: '24 one-hour buckets, the last hour last.',
    },
  },
  { description: 'Attempts of the last 24 hours.' },
);
const EndpointWithStats = { allOf: [ref('WebhookEndpoint'), obj({ stats: Stats })] };
const Role = { type: 'string', enum: ['viewer', 'developer', 'admin'] };
const Theme = obj(
  {
    accent_color: nullable({ type: 'string', description: '#rrggbb' }),
    name: nullable({ type: 'string', description: "Shown in place of payhooks' name; null: the Platform's name." }),
    logo: nullable({ type: 'string', description: 'A PNG, JPEG or WebP data: URL.' }),
    mode: { type: 'string', enum: ['light', 'dark', 'auto'] },
  },
  { description: "The portal's look inside the payment service's portal." },
);
const PortalSession = obj({
  object: { const: 'portal_session', type: 'string' },
  kind: { type: 'string', enum: ['password', 'embedded'], description: "embedded: opened through the payment service's link." },
  user: obj({
    id: { type: 'string', description: "usr_… for portal users; the payment service's user id for embedded sessions." },
    email: nullable({ type: 'string' }),
    name: nullable({ type: 'string' }),
  }),
  role: Role,
  platform: obj({ id: { type: 'string' }, name: { type: 'string' } }),
  environment: { type: 'string', enum: ['sandbox', 'live'] },
  environment_locked: { type: 'boolean', description: 'Embedded sessions stay in the environment their link named.' },
  csrf_token: { type: 'string', description: `Send it back as ${CSRF_HEADER} on every change.` },
  expires_at: { type: 'string', description: 'The absolute end of the session.' },
  idle_timeout_seconds: { type: 'integer', description: 'The session ends after this long without a request.' },
  needs_two_factor_setup: { type: 'boolean', description: 'The team requires two-factor sign-in and this user has not set it up yet.' },
  return_url: nullable({ type: 'string', description: "Embedded sessions: the payment service's page to go back to." }),
  theme: Theme,
  frame_ancestors: { type: 'array', items: { type: 'string' }, description: 'Origins allowed to frame the portal.' },
  password_sign_in: { type: 'boolean' },
});
const TwoFactorChallenge = obj(
  {
    object: { const: 'two_factor_challenge', type: 'string' },
    challenge: { type: 'string', description: 'Send it back with the code to POST /portal/api/session/two_factor.' },
    expires_at: { type: 'string' },
  },
  { description: 'The password was right and the user has two-factor sign-in on: a code is asked next.' },
);
const PortalUser = obj({
  id: { type: 'string' },
  object: { const: 'portal_user', type: 'string' },
  email: { type: 'string' },
  name: nullable({ type: 'string' }),
  role: Role,
  two_factor_enabled: { type: 'boolean' },
  created_at: { type: 'string' },
});
const Invitation = obj({
  id: { type: 'string' },
  object: { const: 'invitation', type: 'string' },
  email: { type: 'string' },
  role: Role,
  created_at: { type: 'string' },
  expires_at: { type: 'string' },
});
const Account = obj({
  object: { const: 'account', type: 'string' },
  id: { type: 'string' },
  email: { type: 'string' },
  name: nullable({ type: 'string' }),
  role: Role,
  two_factor: obj({ enabled: { type: 'boolean' }, required: { type: 'boolean' }, recovery_codes_left: { type: 'integer', minimum: 0 } }),
  password_changed_at: nullable({ type: 'string' }),
  health_mail: { type: 'boolean', description: "Mail about the Platform's endpoint health (developers and admins)." },
});
const RecoveryCodes = json(
  'Ten single-use recovery codes, shown only here: each signs in once in place of a code from the app.',
  obj({ object: { const: 'recovery_codes', type: 'string' }, codes: { type: 'array', items: { type: 'string' } } }),
);
const BulkReplay = obj({
  id: { type: 'string' },
  object: { const: 'bulk_replay', type: 'string' },
  endpoint_id: { type: 'string' },
  since: { type: 'string' },
  status: { type: 'string', enum: ['running', 'finished', 'stopped'] },
  total: { type: 'integer', minimum: 0 },
  attempted: { type: 'integer', minimum: 0 },
  delivered: { type: 'integer', minimum: 0 },
  failed: { type: 'integer', minimum: 0 },
  skipped: { type: 'integer', minimum: 0 },
  created_at: { type: 'string' },
  finished_at: nullable({ type: 'string' }),
});
const PlatformSettings = obj({
  object: { type: 'string', const: 'platform_settings' },
  display_name: nullable({
    type: 'string',
    description: 'The name customers see on the hosted checkout page; null shows the Platform name.',
  }),
  platform_name: { type: 'string' },
  require_two_factor: { type: 'boolean', description: 'Every portal user must sign in with a second factor.' },
  asymmetric_signature_default: {
    type: 'boolean',
    description: 'New endpoints created without asymmetric_signature sign with ed25519 too (existing endpoints keep theirs).',
  },
  theme: Theme,
  alerts: obj(
    {
      mail_live: {
        type: 'boolean',
        description: 'Mail the team when a live endpoint starts failing, is warned, disabled or recovers (default on).',
      },
      mail_sandbox: { type: 'boolean', description: 'The same for sandbox endpoints (default off).' },
      emails: { type: 'array', items: { type: 'string' }, description: 'More recipients than the developers and admins (at most 20).' },
      endpoint_link_template: nullable({
        type: 'string',
        description: "The endpoint's page in the payment service's portal, with {endpoint_id}; null links to payhooks' portal.",
      }),
    },
    { description: 'Mail about endpoint health.' },
  ),
});
const Labels = { event_type: nullable(ref('EventType')), endpoint_url: nullable({ type: 'string' }) };
const { attempts: _attempts, ...deliveryFields } = DeliverySchema.properties as Record<string, Schema>;
const DeliveryRow = obj(
  { ...deliveryFields, ...Labels, last_attempt: nullable(ref('DeliveryAttempt')) },
  { description: 'A delivery with its latest attempt (the log leaves the full `attempts` list out).' },
);
const DeliveryDetail = json('The delivery, its attempts and the exact event body they sent.', {
  allOf: [
    ref('WebhookDelivery'),
    obj({
      ...Labels,
      endpoint_deleted: { type: 'boolean' },
      event_body: { type: 'string', description: 'The stored event, byte for byte.' },
    }),
  ],
});
const list = (item: Schema, description: string) =>
  json(
    description,
    obj({ object: { type: 'string', const: 'list' }, data: { type: 'array', items: item }, has_more: { type: 'boolean' } }),
  );

const portal = (operationId: string, summary: string, response: Record<number, Schema>, extra: Schema = {}) => ({
  tags: ['portal'],
  security: [{ portalSession: [] }],
  operationId,
  summary,
  response,
  ...extra,
});

export const DOCUMENTED_ROUTES: Record<string, Schema> = {
  'POST /portal/api/session': portal(
    'portalSignIn',
    'Sign in (sets the session cookie)',
    {
      200: json('Signed in (the session cookie is set), or a second factor is asked for.', { oneOf: [PortalSession, TwoFactorChallenge] }),
      401: error,
      403: error,
      413: error,
      415: error,
      429: error,
    },
    { security: [] },
  ),
  'POST /portal/api/session/two_factor': portal(
    'portalSignInTwoFactor',
    'The second step of signing in: a code from the authenticator app, or a recovery code',
    { 200: json('Signed in (the session cookie is set).', PortalSession), 401: error, 429: error },
    { security: [] },
  ),
  'POST /portal/api/session/link': portal(
    'portalOpenLink',
    "Trade the token of the payment service's link for a session",
    {
      200: json('The session, with its token: send it as `Authorization: Bearer <session_token>`.', {
        allOf: [PortalSession, obj({ session_token: { type: 'string' } })],
      }),
      401: error,
      429: error,
    },
    { security: [] },
  ),
  'GET /portal/api/session': portal('portalSession', 'Who is signed in, and the CSRF token', { 200: json('The session.', PortalSession) }),
  'PUT /portal/api/session/environment': portal('portalSwitchEnvironment', 'Switch between sandbox and live', {
    200: json('The session in its new environment.', PortalSession),
  }),
  'DELETE /portal/api/session': portal('portalSignOut', 'Sign out', {
    200: json('Signed out.', obj({ object: { type: 'string', const: 'portal_session' }, signed_out: { type: 'boolean', const: true } })),
  }),
  'GET /portal/api/catalog': portal('portalCatalog', 'The event-type catalog', {
    200: json('The catalog.', {
      ...obj({
        event_types: { type: 'array', items: ref('EventType') },
        wildcard: { type: 'string', const: WILDCARD_EVENT_TYPE },
        required_live_event_types: { type: 'array', items: ref('EventType') },
      }),
      examples: [
        { event_types: [...EVENT_TYPES], wildcard: WILDCARD_EVENT_TYPE, required_live_event_types: [...REQUIRED_LIVE_EVENT_TYPES] },
      ],
    }),
  }),
  'GET /portal/api/endpoints': portal('portalListEndpoints', 'List endpoints with their last-24-hour statistics', {
    200: list(EndpointWithStats, 'A page of endpoints.'),
  }),
  'POST /portal/api/endpoints': portal('portalCreateEndpoint', 'Create an endpoint', {
    201: json('The endpoint, with its signing secret (shown only here).', ref('WebhookEndpointWithSecret')),
    422: error,
  }),
  'GET /portal/api/endpoints/:id': portal('portalRetrieveEndpoint', 'Retrieve an endpoint with its statistics', {
    200: json('The endpoint.', EndpointWithStats),
  }),
  'GET /portal/api/endpoints/:id/stats': portal('portalEndpointStats', "An endpoint's health over time (the endpoint page's charts)", {
    200: json("The endpoint's stats.", ref('WebhookStats')),
    400: error,
  }),
  'GET /portal/api/stats': portal('portalStats', "Every endpoint's health over time (the overview's charts)", {
    200: json("The Platform's stats in the session's environment.", ref('WebhookStats')),
    400: error,
  }),
  'PATCH /portal/api/endpoints/:id': portal('portalUpdateEndpoint', 'Update an endpoint', {
    200: json('The updated endpoint.', ref('WebhookEndpoint')),
    409: error,
    422: error,
  }),
  'DELETE /portal/api/endpoints/:id': portal('portalDeleteEndpoint', 'Delete an endpoint', {
    200: json(
      'Deleted.',
      obj({ id: { type: 'string' }, object: { type: 'string', const: 'webhook_endpoint' }, deleted: { type: 'boolean', const: true } }),
    ),
  }),
  'POST /portal/api/endpoints/:id/rotate_secret': portal(
    'portalRotateSecret',
    'Roll the signing secret',
    { 200: json('The endpoint, with its new signing secret (shown only here).', ref('WebhookEndpointWithSecret')) },
    {
      'x-optional-body': {
        type: 'object',
        additionalProperties: false,
        properties: { expire_previous_in: { type: 'integer', minimum: 0 } },
      },
    },
  ),
  'POST /portal/api/endpoints/:id/rotate_signing_key': portal(
    'portalRotateSigningKey',
    'Roll the ed25519 key pair (asymmetric_signature on)',
    { 200: json('The endpoint, its new public key first in public_keys.', ref('WebhookEndpoint')), 409: error },
    {
      'x-optional-body': {
        type: 'object',
        additionalProperties: false,
        properties: { expire_previous_in: { type: 'integer', minimum: 0 } },
      },
    },
  ),
  'POST /portal/api/endpoints/:id/test_event': portal(
    'portalSendTestEvent',
    'Send a test event (or an example of a payment event type) to a sandbox endpoint',
    {
      201: json(
        'The test event, its delivery, and the sandbox payment behind it (retrievable with GET /api/v1/payments/{id}).',
        obj({
          object: { type: 'string', const: 'test_event' },
          event_id: { type: 'string' },
          type: ref('EventType'),
          delivery_id: { type: 'string' },
          payment_id: { type: 'string' },
        }),
      ),
      409: error,
    },
  ),
  'POST /portal/api/endpoints/:id/bulk_replays': portal('portalStartBulkReplay', 'Replay every failed delivery since a time', {
    202: json('The job, started.', BulkReplay),
    409: error,
  }),
  'GET /portal/api/bulk_replays/:id': portal('portalBulkReplay', 'Progress of a bulk replay', { 200: json('The job.', BulkReplay) }),
  'GET /portal/api/endpoints/:id/bulk_replays/preview': portal(
    'portalPreviewBulkReplay',
    'How many deliveries a bulk replay would replay now',
    {
      200: json(
        'A dry run: nothing is replayed.',
        obj({
          object: { type: 'string', const: 'bulk_replay_preview' },
          endpoint_id: { type: 'string' },
          since: { type: 'string' },
          count: { type: 'integer', minimum: 0 },
        }),
      ),
    },
  ),
  'GET /portal/api/settings': portal('portalSettings', "The Platform's settings (admins)", {
    200: json('The settings.', PlatformSettings),
  }),
  'PUT /portal/api/settings': portal(
    'portalUpdateSettings',
    "Change the Platform's settings (admins): the shop's name, two-factor sign-in required, ed25519 signing for new endpoints, the theme; fields left out stay",
    { 200: json('The settings.', PlatformSettings) },
  ),
  'GET /portal/api/users': portal('portalListUsers', 'The team (admins)', { 200: list(PortalUser, 'Every portal user of the Platform.') }),
  'PATCH /portal/api/users/:id': portal('portalChangeRole', "Change a user's role (admins; a Platform keeps one admin)", {
    200: json('The user.', PortalUser),
    409: error,
  }),
  'DELETE /portal/api/users/:id': portal('portalRemoveUser', 'Remove a user; their sessions end at once (admins)', {
    200: json('Removed.', { allOf: [PortalUser, obj({ deleted: { type: 'boolean', const: true } })] }),
    409: error,
  }),
  'GET /portal/api/invitations': portal('portalListInvitations', 'Open invitations (admins)', {
    200: list(Invitation, 'Unused, unexpired invitations.'),
  }),
  'POST /portal/api/invitations': portal('portalInvite', 'Invite a teammate (admins): a single-use link, shown once', {
    201: json('The invitation with its link (mailed too when SMTP is set up).', {
      allOf: [Invitation, obj({ url: { type: 'string' }, emailed: { type: 'boolean' } })],
    }),
    409: error,
  }),
  'DELETE /portal/api/invitations/:id': portal('portalRevokeInvitation', 'Revoke an invitation (admins)', {
    200: json('Revoked.', { allOf: [Invitation, obj({ deleted: { type: 'boolean', const: true } })] }),
  }),
  'POST /portal/api/invitation/inspect': portal(
    'portalInspectInvitation',
    'What an invitation is for, without using it',
    {
      200: json(
        'The invitation.',
        obj({
          object: { const: 'invitation_preview', type: 'string' },
          email: { type: 'string' },
          role: Role,
          platform_name: { type: 'string' },
          expires_at: { type: 'string' },
        }),
      ),
      401: error,
      429: error,
    },
    { security: [] },
  ),
  'POST /portal/api/invitation/accept': portal(
    'portalAcceptInvitation',
    'Accept an invitation: choose a password and sign in',
    { 200: json('Signed in (the session cookie is set).', PortalSession), 401: error, 409: error, 429: error },
    { security: [] },
  ),
  'POST /portal/api/password_reset/inspect': portal(
    'portalInspectPasswordReset',
    'Which account a reset link is for',
    {
      200: json(
        'The reset.',
        obj({ object: { const: 'password_reset_preview', type: 'string' }, email: { type: 'string' }, expires_at: { type: 'string' } }),
      ),
      401: error,
      429: error,
    },
    { security: [] },
  ),
  'POST /portal/api/password_reset': portal(
    'portalResetPassword',
    "Choose a new password through an operator's reset link (every session of the user ends)",
    {
      200: json(
        'Done: sign in with the new password.',
        obj({ object: { const: 'password_reset', type: 'string' }, email: { type: 'string' }, done: { type: 'boolean', const: true } }),
      ),
      401: error,
      429: error,
    },
    { security: [] },
  ),
  'GET /portal/api/account': portal('portalAccount', 'Your own account', { 200: json('The account.', Account) }),
  'PUT /portal/api/account/password': portal('portalChangePassword', 'Change your password (your other sessions end)', {
    200: json('The account.', Account),
    401: error,
    429: error,
  }),
  'PUT /portal/api/account/health_mail': portal(
    'portalSetHealthMail',
    "Turn mail about the Platform's endpoint health on or off for yourself (developers and admins get it)",
    { 200: json('The account.', Account) },
  ),
  'POST /portal/api/account/two_factor/setup': portal('portalStartTwoFactor', 'Start setting up two-factor sign-in', {
    200: json(
      'The secret to add to an authenticator app (as text or as the otpauth URI, a QR code); not in use until confirmed.',
      obj({ object: { const: 'two_factor_setup', type: 'string' }, secret: { type: 'string' }, otpauth_uri: { type: 'string' } }),
    ),
    409: error,
  }),
  'POST /portal/api/account/two_factor/enable': portal(
    'portalEnableTwoFactor',
    'Confirm with a code from the app: two-factor sign-in is on',
    {
      200: RecoveryCodes,
      400: error,
      409: error,
    },
  ),
  'DELETE /portal/api/account/two_factor': portal('portalDisableTwoFactor', 'Turn two-factor sign-in off (asks for the password)', {
    200: json('The account.', Account),
    401: error,
    409: error,
  }),
  'POST /portal/api/account/two_factor/recovery_codes': portal('portalNewRecoveryCodes', 'New recovery codes (the old ones stop working)', {
    200: RecoveryCodes,
    401: error,
    409: error,
  }),
  'GET /portal/api/audit_events': portal('portalAuditEvents', "The Platform's audit trail (admins)", {
    200: list(ref('AuditEvent'), 'A page of entries, newest first.'),
  }),
  'GET /portal/api/deliveries': portal('portalListDeliveries', 'The delivery log', { 200: list(DeliveryRow, 'A page of deliveries.') }),
  'GET /portal/api/deliveries/:id': portal('portalRetrieveDelivery', 'A delivery with its attempts and event body', {
    200: DeliveryDetail,
  }),
  'POST /portal/api/deliveries/:id/replay': portal('portalReplayDelivery', 'Replay a delivery now (a manual attempt)', {
    200: DeliveryDetail,
    409: error,
  }),
  'POST /portal/api/deliveries/:id/resend': portal('portalResendDelivery', 'Resend a finished delivery (a manual attempt)', {
    200: DeliveryDetail,
    409: error,
  }),
  'POST /portal/api/deliveries/:id/cancel': portal(
    'portalCancelDelivery',
    'Cancel an unfinished delivery: no more attempts (409 delivery_in_flight while one is in flight, delivery_not_cancellable once finished)',
    {
      200: DeliveryDetail,
      409: error,
    },
  ),
  'GET /portal/api/event_types': portal(
    'portalEventTypes',
    'The event catalog: each type, when it is sent, its JSON Schema and an example',
    {
      200: json(
        'The catalog.',
        obj({
          object: { type: 'string', const: 'list' },
          data: {
            type: 'array',
            items: obj({
              object: { type: 'string', const: 'event_type' },
              type: ref('EventType'),
              description: { type: 'string' },
              sent_when: { type: 'string' },
              schema: { type: 'object', additionalProperties: true },
              example: { type: 'object', additionalProperties: true },
              sendable: { type: 'boolean', description: '"Send example" can send a real sandbox event of this type.' },
            }),
          },
          has_more: { type: 'boolean' },
        }),
      ),
    },
  ),
  'GET /portal/api/events/:id': portal('portalRetrieveEvent', 'An event with its stored body', {
    200: json(
      'The event.',
      obj({
        id: { type: 'string' },
        object: { type: 'string', const: 'event' },
        type: ref('EventType'),
        created_at: { type: 'string' },
        body: { type: 'string', description: 'The stored event, byte for byte.' },
      }),
    ),
  }),

  'POST /listen/:id': {
    tags: ['listen'],
    security: [],
    operationId: 'listenRelay',
    summary: "The url of a listen session's endpoint: deliveries are forwarded to `payhooks listen`",
    description:
      "The delivery worker POSTs each delivery here like to any endpoint. The Service-Signature must verify with the session's secret. The answer is the local receiver's status and body.",
    params: idParam("The listen session's endpoint (we_…)."),
    consumes: ['application/json'],
    body: ref('Event'),
    response: {
      200: {
        description: "The local receiver's answer (any status it gave), as text.",
        content: { 'text/plain': { schema: { type: 'string', examples: ['{"received":true}'] } } },
      },
      400: error,
      404: error,
      413: error,
      502: json('payhooks listen could not reach the local receiver.', error),
    },
  },
};

/** Merged into the route's schema for the document only. */
export function documentedRoute(method: string, url: string): Schema | undefined {
  return DOCUMENTED_ROUTES[`${method} ${url}`];
}

/** Families of routes documented here: each of their routes needs an entry (the portal's own document has its schema). */
const OVERLAID = /^\/(portal\/api\/(?!openapi\.json$)|listen\/)/;

/**
 * The browser pages: the hosted checkout page with its form posts and stylesheet, the
 * portal's page and assets, the favicon, and a health mail's unsubscribe link (a page, and the
 * one-click POST of RFC 8058 that mail clients make). They are HTML, redirects and files for a browser, not an API, so
 * neither document lists them (docs/decisions/openapi-documents.md); every other route is in one of the two.
 */
export const isBrowserPage = (url: string) =>
  url.startsWith('/checkout/') ||
  url === '/favicon.svg' ||
  url === '/favicon.ico' ||
  url === '/email/unsubscribe' ||
  ((url === '/portal' || url.startsWith('/portal/')) && !url.startsWith('/portal/api/'));

/**
 * The app's `onRoute` hook: gives a route of these families its document entry, through
 * @fastify/swagger's per-route `swaggerTransform` (the route's own schema is left as it is).
 */
export function documentRoute(route: { method: string | string[]; url: string; config?: unknown; schema?: unknown }): void {
  const methods = [route.method].flat().filter((m) => m !== 'HEAD');
  if (methods.length === 0) return;
  const overlay = documentedRoute(methods[0]!, route.url);
  if (!overlay) {
    if (OVERLAID.test(route.url)) throw new Error(`${methods[0]} ${route.url} has no entry in api/openapi/overlays.ts: document it there.`);
    return;
  }
  const config = (route.config ?? {}) as Record<string, unknown>;
  route.config = { ...config, swaggerTransform: ({ schema }: { schema?: Schema }) => ({ schema: { ...schema, ...overlay, hide: false } }) };
}

import { bigint, boolean, index, integer, jsonb, pgTable, primaryKey, smallint, text, timestamp, unique } from 'drizzle-orm/pg-core';
import { sql } from 'drizzle-orm';

/**
 * drizzle mirror of the numbered SQL migrations in ./migrations (the SQL is the source of
 * truth; this file gives queries their types). Keep both in step.
 */
const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const platforms = pgTable('platforms', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
  /** 0022: every portal user must sign in with a second factor. */
  requireTwoFactor: boolean('require_two_factor').notNull().default(false),
  /** 0022: the portal's look when embedded (tenancy/portal-theme.ts). */
  portalTheme: jsonb('portal_theme').$type<object>().notNull().default({}),
  /** 0024: new endpoints sign with ed25519 too unless created with `asymmetric_signature: false`. */
  asymmetricSignatureDefault: boolean('asymmetric_signature_default').notNull().default(false),
  /** 0034: health mail per environment, extra addresses, the payment service's endpoint link (alerts/settings.ts). */
  alertSettings: jsonb('alert_settings').$type<object>().notNull().default({}),
});

/** 0034: an endpoint's health change, to be mailed once (alerts/health-mail.ts). */
export const healthNotices = pgTable('health_notices', {
  id: text('id').primaryKey(),
  platformId: text('platform_id').notNull(),
  environment: text('environment').$type<Environment>().notNull(),
  endpointId: text('endpoint_id').notNull(),
  kind: text('kind').$type<HealthNoticeKind>().notNull(),
  warning: integer('warning'),
  createdAt: ts('created_at').notNull(),
  sentAt: ts('sent_at'),
});

export type HealthNoticeKind = 'failing' | 'warning' | 'disabled' | 'recovered' | 'certificate_expiring';

export const merchants = pgTable('merchants', {
  id: text('id').primaryKey(),
  platformId: text('platform_id').notNull(),
  name: text('name').notNull(),
  /** 0012: the shop's name on the hosted checkout page (null: the Platform's name). */
  displayName: text('display_name'),
  createdAt: ts('created_at').notNull().defaultNow(),
});

export type Environment = 'live' | 'sandbox';

export const apiKeys = pgTable('api_keys', {
  id: text('id').primaryKey(),
  platformId: text('platform_id').notNull(),
  environment: text('environment').$type<Environment>().notNull(),
  prefix: text('prefix').notNull(),
  keyHash: text('key_hash').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
  revokedAt: ts('revoked_at'),
});

export type EndpointStatus = 'enabled' | 'disabled';

export const webhookEndpoints = pgTable('webhook_endpoints', {
  id: text('id').primaryKey(),
  platformId: text('platform_id').notNull(),
  environment: text('environment').$type<Environment>().notNull(),
  url: text('url').notNull(),
  enabledEvents: text('enabled_events').array().notNull(),
  description: text('description'),
  metadata: jsonb('metadata').$type<Record<string, string>>().notNull(),
  status: text('status').$type<EndpointStatus>().notNull(),
  secretCiphertext: text('secret_ciphertext').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
  deletedAt: ts('deleted_at'),
  /** Timeouts since the endpoint last answered; see delivery/fairness.ts. */
  consecutiveTimeouts: integer('consecutive_timeouts').notNull().default(0),
  /** When it was throttled (null: healthy). */
  throttledAt: ts('throttled_at'),
  /** 0006: the replaced secret, still signing until `previousSecretExpiresAt` (rotation). */
  previousSecretCiphertext: text('previous_secret_ciphertext'),
  previousSecretExpiresAt: ts('previous_secret_expires_at'),
  /** 0006: why and when it was disabled (`failing`: auto-disable). */
  disabledReason: text('disabled_reason').$type<DisabledReason>(),
  disabledAt: ts('disabled_at'),
  /** 0006: start of its current run of failed attempts (null: its last attempt succeeded). */
  failingSince: ts('failing_since'),
  /** 0011: a `payhooks listen` session's endpoint (never set through the API). */
  listenSession: boolean('listen_session').notNull().default(false),
  /** 0016: `per_object` delivers one object's events one at a time, in publish order. */
  deliveryOrder: text('delivery_order').$type<DeliveryOrder>().notNull().default('unordered'),
  /** 0017: a broker URL's `user:password`, sealed like the signing secret (never shown again). */
  urlCredentialsCiphertext: text('url_credentials_ciphertext'),
  /** 0023: also send the Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature). */
  standardWebhooks: boolean('standard_webhooks').notNull().default(false),
  /** 0023: the merchant's own request headers, name to value (endpoints/custom-headers.ts); null: none. */
  headers: jsonb('headers').$type<Record<string, string>>(),
  /** 0025: a 429/503 with Retry-After stops automatic attempts until then (delivery/pause.ts). */
  pausedUntil: ts('paused_until'),
  /** 0025: the merchant's cap on requests per second (null: uncapped; delivery/rate-cap.ts). */
  maxRequestsPerSecond: integer('max_requests_per_second'),
  /** 0025: the earliest start of the cap's next request (written by payhooks.reserve_rate only). */
  rateNextAt: ts('rate_next_at'),
  /** 0037: how payhooks authenticates to the receiver (security/receiver-credentials.ts); null: only the signature. */
  authenticationType: text('authentication_type').$type<ReceiverAuthType>(),
  /** 0037: what the API shows of it (basic: the username); never a secret. */
  authenticationShown: jsonb('authentication_shown').$type<Record<string, string>>(),
  /** 0037: its secret part, sealed to the endpoint (never shown). */
  authenticationCiphertext: text('authentication_ciphertext'),
  /** 0039: the replaced client certificate, presented when the receiver refuses the current one, until the expiry below. */
  previousClientCertificateCiphertext: text('previous_client_certificate_ciphertext'),
  previousClientCertificateShown: jsonb('previous_client_certificate_shown').$type<Record<string, string>>(),
  previousClientCertificateExpiresAt: ts('previous_client_certificate_expires_at'),
  /** 0040: `<fingerprint>/<days>`: the client certificate and stage (30, 7 days) last warned about (endpoints/certificate-expiry.ts). */
  certificateWarned: text('certificate_warned'),
  /** 0038: certificate authorities trusted for this endpoint beside the public ones (PEM), else null. */
  tlsCaCertificates: text('tls_ca_certificates'),
  /** 0024: also signed with ed25519 (`v1a=`), by the key pair below (kept while the flag is off). */
  asymmetricSignature: boolean('asymmetric_signature').notNull().default(false),
  /** 0024: the sealed PKCS#8 private key (never shown) and its public key (a JWK's `x`, in clear). */
  signingKeyCiphertext: text('signing_key_ciphertext'),
  signingPublicKey: text('signing_public_key'),
  signingKeyCreatedAt: ts('signing_key_created_at'),
  /** 0024: the rotated-out key pair, still signing until `previousSigningKeyExpiresAt`. */
  previousSigningKeyCiphertext: text('previous_signing_key_ciphertext'),
  previousSigningPublicKey: text('previous_signing_public_key'),
  previousSigningKeyCreatedAt: ts('previous_signing_key_created_at'),
  previousSigningKeyExpiresAt: ts('previous_signing_key_expires_at'),
  /** 0033: the health the merchant sees (endpoints/health.ts); disabled is `status`. */
  healthState: text('health_state').$type<HealthState>().notNull().default('healthy'),
  healthChangedAt: ts('health_changed_at'),
  /** 0033: the last warning announced before auto-disable: 0, 50 or 90 (% of the window). */
  healthWarned: integer('health_warned').notNull().default(0),
  /** 0033: when auto-disable will disable it if nothing succeeds (set while failing; null when off). */
  healthDisablesAt: ts('health_disables_at'),
});

export type HealthState = 'healthy' | 'failing' | 'recovered';

/** 0035: an operator endpoint (of the reserved operator Platform) and the Platform it watches (null: all). */
export const operatorEndpoints = pgTable('operator_endpoints', {
  endpointId: text('endpoint_id').primaryKey(),
  platformId: text('platform_id'),
});

export type DeliveryOrder = 'unordered' | 'per_object';

export type DisabledReason = 'manual' | 'failing';
/** How payhooks authenticates to a receiver beside the signature (migration 0037). */
export type ReceiverAuthType = 'basic' | 'oauth2_client_credentials' | 'mtls';

export type WebhookEndpointRow = typeof webhookEndpoints.$inferSelect;

export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    platformId: text('platform_id').notNull(),
    environment: text('environment').$type<Environment>().notNull(),
    key: text('key').notNull(),
    requestHash: text('request_hash').notNull(),
    responseStatus: integer('response_status').notNull(),
    responseBody: text('response_body').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.platformId, t.environment, t.key] })],
);

export const events = pgTable(
  'events',
  {
    id: text('id').notNull(),
    platformId: text('platform_id').notNull(),
    environment: text('environment').$type<Environment>().notNull(),
    merchantId: text('merchant_id').notNull(),
    type: text('type').notNull(),
    body: text('body').notNull(),
    idempotencyKey: text('idempotency_key'),
    createdAt: ts('created_at').notNull(),
    /** 0013: `data.object.id`, the resource the event is about (null for rows of earlier releases). */
    objectId: text('object_id'),
    /** 0018: the W3C traceparent of the span that published it (only while tracing). */
    traceParent: text('trace_parent'),
  },
  // 0007: partitioned by week on created_at, which every key must hold; 0027 named the
  // constraints after the table (they were 0007's `events_new_*`).
  (t) => [
    primaryKey({ name: 'events_pkey', columns: [t.id, t.createdAt] }),
    index('events_tenant_idx').on(t.platformId, t.environment, t.createdAt.desc(), t.id.desc()),
    index('events_object_idx').on(t.platformId, t.environment, t.objectId, t.createdAt.desc(), t.id.desc()),
    index('events_type_idx').on(t.platformId, t.environment, t.type, t.createdAt.desc(), t.id.desc()),
  ],
);

export type EventRow = typeof events.$inferSelect;

export type DeliveryState = 'pending' | 'delivered' | 'failed_retrying' | 'exhausted' | 'cancelled';

export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: text('id').notNull(),
    eventId: text('event_id').notNull(),
    endpointId: text('endpoint_id').notNull(),
    platformId: text('platform_id').notNull(),
    environment: text('environment').$type<Environment>().notNull(),
    state: text('state').$type<DeliveryState>().notNull(),
    attemptCount: integer('attempt_count').notNull(),
    automaticAttempts: integer('automatic_attempts').notNull(),
    nextAttemptAt: ts('next_attempt_at'),
    lastAttemptAt: ts('last_attempt_at'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
    /** 0003: 1, or 2 for the second delivery of a double-delivered event (spec 6.2 rule 5). */
    copy: smallint('copy').notNull().default(1),
    /** 0006: why a `cancelled` delivery ended (`endpoint_deleted`, `manual`). */
    cancelReason: text('cancel_reason'),
    /** 0013: its event's type, for the log's type filter. */
    eventType: text('event_type'),
  },
  // Every index of the table, with the reads that need it: decision record delivery-log-indexes.
  (t) => [
    primaryKey({ name: 'webhook_deliveries_pkey', columns: [t.id, t.createdAt] }),
    unique('webhook_deliveries_event_endpoint_copy_key').on(t.eventId, t.endpointId, t.copy, t.createdAt),
    index('webhook_deliveries_tenant_idx').on(t.platformId, t.environment, t.createdAt.desc(), t.id.desc()),
    index('webhook_deliveries_endpoint_idx').on(t.endpointId, t.createdAt.desc()),
    index('webhook_deliveries_type_idx').on(t.platformId, t.environment, t.eventType, t.createdAt.desc(), t.id.desc()),
    index('webhook_deliveries_state_idx')
      .on(t.state, t.platformId, t.environment, t.createdAt.desc(), t.eventId.desc())
      .where(sql`state <> 'delivered'`),
  ],
);

/**
 * 0007: the work to do, one row per delivery with an attempt coming (see the migration). The
 * claim scans only this table; a delivery without a row is finished or parked.
 */
export const deliveryQueue = pgTable('delivery_queue', {
  deliveryId: text('delivery_id').primaryKey(),
  deliveryCreatedAt: ts('delivery_created_at').notNull(),
  eventId: text('event_id').notNull(),
  endpointId: text('endpoint_id').notNull(),
  platformId: text('platform_id').notNull(),
  /** When a worker may take it: the schedule, or its lease's expiry while leased. */
  dueAt: ts('due_at').notNull(),
  leaseToken: text('lease_token'),
  /** When the current lease was taken (start of the attempt a takeover logs as interrupted). */
  leasedAt: ts('leased_at'),
  /** Order of arrival: rows due at the same instant are taken in publish order. */
  seq: bigint('seq', { mode: 'number' }).generatedByDefaultAsIdentity(),
  /** 0016: the event's object id when the endpoint is `per_object` (null otherwise): see claim.ts. */
  orderKey: text('order_key'),
});

/**
 * 0007: an event's idempotency key, unique per tenant for at least 7 days (migration 0030: a
 * publish looks at its own week and the previous one, never at every week kept). Outside
 * `events` because a unique index on a partitioned table must hold the partition key (it would
 * be unique within one week only). Dropped with its week.
 */
export const eventIdempotencyKeys = pgTable(
  'event_idempotency_keys',
  {
    platformId: text('platform_id').notNull(),
    environment: text('environment').notNull(),
    idempotencyKey: text('idempotency_key').notNull(),
    eventId: text('event_id').notNull(),
    eventCreatedAt: ts('event_created_at').notNull(),
    /** Partitioned by week (migration 0028): its event's week, or the next for the key's guard row. */
    week: ts('week').notNull(),
  },
  (t) => [primaryKey({ columns: [t.platformId, t.environment, t.idempotencyKey, t.week] })],
);

export type DeliveryRow = typeof webhookDeliveries.$inferSelect;

export type AttemptTrigger = 'automatic' | 'manual';

export const deliveryAttempts = pgTable(
  'delivery_attempts',
  {
    id: text('id').notNull(),
    deliveryId: text('delivery_id').notNull(),
    attemptNumber: integer('attempt_number').notNull(),
    trigger: text('trigger').$type<AttemptTrigger>().notNull(),
    succeeded: boolean('succeeded').notNull(),
    startedAt: ts('started_at').notNull(),
    durationMs: integer('duration_ms').notNull(),
    statusCode: integer('status_code'),
    responseBody: text('response_body'),
    errorKind: text('error_kind'),
    errorMessage: text('error_message'),
    /** 0006: the worker that held the attempt (set on `interrupted` attempts). */
    workerId: text('worker_id'),
    /** 0007: the delivery's `created_at`, the partition key (an attempt leaves with its delivery's week). */
    deliveryCreatedAt: ts('delivery_created_at').notNull(),
    /** 0013: the Service-Signature header it was sent with (null when no request was made). */
    requestSignature: text('request_signature'),
    /** 0020: the kind of broker the attempt went to; null for an HTTP request. */
    broker: text('broker').$type<'amqp' | 'nats'>(), // BrokerKind (endpoint-urls/broker-url.ts)
    /** 0021: the traceparent the attempt was sent with (only while tracing). */
    traceParent: text('trace_parent'),
    /** 0023: the webhook-signature header it was sent with (Standard Webhooks endpoints only). */
    requestWebhookSignature: text('request_webhook_signature'),
    /** 0023: the endpoint's custom headers it was sent with, as JSON text (null: none). */
    requestCustomHeaders: text('request_custom_headers'),
    /** 0025: how long it waited for the endpoint's max_requests_per_second (null: no cap). */
    rateLimitedMs: integer('rate_limited_ms'),
  },
  // 0029: keyed by its delivery, the only way attempts are read; `id` is returned, never looked up.
  (t) => [primaryKey({ name: 'delivery_attempts_pkey', columns: [t.deliveryId, t.attemptNumber, t.deliveryCreatedAt] })],
);

export type AttemptRow = typeof deliveryAttempts.$inferSelect;

// 0003: payments and checkout sessions (issue 7); 0003 also adds `webhookDeliveries.copy` above.

export type PaymentStatusValue =
  | 'created'
  | 'requires_action'
  | 'under_review'
  | 'processing'
  | 'succeeded'
  | 'failed'
  | 'cancelled'
  | 'expired';

export const payments = pgTable('payments', {
  id: text('id').primaryKey(),
  platformId: text('platform_id').notNull(),
  environment: text('environment').$type<Environment>().notNull(),
  merchantId: text('merchant_id').notNull(),
  status: text('status').$type<PaymentStatusValue>().notNull(),
  amount: text('amount').notNull(),
  assetCode: text('asset_code').notNull(),
  /** The metadata object's JSON text, echoed as stored. */
  metadata: text('metadata').notNull(),
  /** 0012: what the customer pays for, up to 500 characters. */
  description: text('description'),
  checkoutSessionId: text('checkout_session_id'),
  doubleDelivery: boolean('double_delivery').notNull(),
  createdAt: ts('created_at').notNull(),
  updatedAt: ts('updated_at').notNull(),
});

export type PaymentRow = typeof payments.$inferSelect;

export type CheckoutSessionStatus = 'open' | 'complete' | 'expired';

export const checkoutSessions = pgTable('checkout_sessions', {
  id: text('id').primaryKey(),
  platformId: text('platform_id').notNull(),
  environment: text('environment').$type<Environment>().notNull(),
  merchantId: text('merchant_id').notNull(),
  status: text('status').$type<CheckoutSessionStatus>().notNull(),
  amount: text('amount').notNull(),
  assetCode: text('asset_code').notNull(),
  metadata: text('metadata').notNull(),
  /** 0012: what the customer pays for, up to 500 characters. */
  description: text('description'),
  paymentId: text('payment_id').notNull(),
  url: text('url').notNull(),
  successUrl: text('success_url').notNull(),
  cancelUrl: text('cancel_url'),
  doubleDelivery: boolean('double_delivery').notNull(),
  expiresAt: ts('expires_at').notNull(),
  completedAt: ts('completed_at'),
  createdAt: ts('created_at').notNull(),
  updatedAt: ts('updated_at').notNull(),
});

export type CheckoutSessionRow = typeof checkoutSessions.$inferSelect;

export type PortalRole = 'viewer' | 'developer' | 'admin';

/** Who acted, in an audit entry (scope.ts explains each). */
export type ActorType = 'user' | 'embedded_user' | 'api_key' | 'internal' | 'operator' | 'system' | 'customer';

/** Merchant Portal users (migration 0004). `email` is unique case-insensitively. */
export const portalUsers = pgTable('portal_users', {
  id: text('id').primaryKey(),
  platformId: text('platform_id').notNull(),
  email: text('email').notNull(),
  passwordHash: text('password_hash').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
  /** 0022: what the user may do (accounts/roles.ts). */
  role: text('role').$type<PortalRole>().notNull(),
  name: text('name'),
  /** 0022: the TOTP secret, sealed; set while enrolling, in use once `totpEnabledAt` is set. */
  totpSecretCiphertext: text('totp_secret_ciphertext'),
  totpEnabledAt: ts('totp_enabled_at'),
  /** 0022: the last TOTP time step accepted (each code works once). */
  totpLastStep: bigint('totp_last_step', { mode: 'number' }),
  passwordChangedAt: ts('password_changed_at'),
  /** 0034: health mail about the Platform's endpoints (alerts/health-mail.ts); off: none to this user. */
  healthMail: boolean('health_mail').notNull().default(true),
});

/** 0022: recovery codes, by SHA-256. */
export const portalRecoveryCodes = pgTable(
  'portal_recovery_codes',
  {
    userId: text('user_id').notNull(),
    codeHash: text('code_hash').notNull(),
    usedAt: ts('used_at'),
  },
  (t) => [primaryKey({ columns: [t.userId, t.codeHash] })],
);

export type PortalUserRow = typeof portalUsers.$inferSelect;

/** Portal sessions: the cookie's token is stored only as its SHA-256 (`tokenHash`). */
export const portalSessions = pgTable('portal_sessions', {
  tokenHash: text('token_hash').primaryKey(),
  /** null for an embedded session (0022). */
  userId: text('user_id'),
  platformId: text('platform_id').notNull(),
  environment: text('environment').$type<Environment>().notNull(),
  csrfToken: text('csrf_token').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
  expiresAt: ts('expires_at').notNull(),
  /** 0022: `password` (a portal user) or `embedded` (a link the payment service asked for). */
  kind: text('kind').$type<'password' | 'embedded'>().notNull().default('password'),
  /** 0022: an embedded session's role (a password session's is its user's). */
  role: text('role').$type<PortalRole>(),
  /** 0022: the payment service's user of an embedded session. */
  externalUser: jsonb('external_user').$type<ExternalUser>(),
  returnUrl: text('return_url'),
  lastSeenAt: ts('last_seen_at').notNull().defaultNow(),
  needsTwoFactorSetup: boolean('needs_two_factor_setup').notNull().default(false),
});

/** The payment service's user an embedded session belongs to, as its session call named them. */
export interface ExternalUser {
  id: string;
  email: string | null;
  name: string | null;
}

/** 0022: single-use tokens (accounts/tokens.ts), by SHA-256. */
export const accountTokens = pgTable('account_tokens', {
  tokenHash: text('token_hash').primaryKey(),
  id: text('id').notNull(),
  purpose: text('purpose').$type<'portal_link' | 'invitation' | 'password_reset' | 'two_factor'>().notNull(),
  platformId: text('platform_id').notNull(),
  userId: text('user_id'),
  email: text('email'),
  role: text('role').$type<PortalRole>(),
  details: jsonb('details').$type<Record<string, unknown>>().notNull(),
  attempts: integer('attempts').notNull().default(0),
  createdAt: ts('created_at').notNull(),
  expiresAt: ts('expires_at').notNull(),
  usedAt: ts('used_at'),
});

export type AccountTokenRow = typeof accountTokens.$inferSelect;

/** 0022: the audit trail (audit/trail.ts); append-only, partitioned by week. */
export const auditEvents = pgTable('audit_events', {
  id: text('id').notNull(),
  createdAt: ts('created_at').notNull(),
  platformId: text('platform_id'),
  environment: text('environment').$type<Environment>(),
  actorType: text('actor_type').$type<ActorType>().notNull(),
  actorId: text('actor_id'),
  actorEmail: text('actor_email'),
  actorName: text('actor_name'),
  ip: text('ip'),
  userAgent: text('user_agent'),
  requestId: text('request_id'),
  action: text('action').notNull(),
  resourceType: text('resource_type').notNull(),
  resourceId: text('resource_id'),
  changes: jsonb('changes').$type<Record<string, unknown>>(),
  outcome: text('outcome').$type<'succeeded' | 'failed' | 'denied'>().notNull(),
  errorCode: text('error_code'),
});

export type AuditEventRow = typeof auditEvents.$inferSelect;

export type PortalSessionRow = typeof portalSessions.$inferSelect;

export type BulkReplayStatus = 'running' | 'finished' | 'stopped';

/** Portal bulk replay jobs (migration 0004); `updatedAt` is the running process's heartbeat. */
export const bulkReplays = pgTable('bulk_replays', {
  id: text('id').primaryKey(),
  platformId: text('platform_id').notNull(),
  environment: text('environment').$type<Environment>().notNull(),
  endpointId: text('endpoint_id').notNull(),
  since: ts('since').notNull(),
  status: text('status').$type<BulkReplayStatus>().notNull(),
  total: integer('total').notNull(),
  attempted: integer('attempted').notNull().default(0),
  delivered: integer('delivered').notNull().default(0),
  failed: integer('failed').notNull().default(0),
  skipped: integer('skipped').notNull().default(0),
  createdAt: ts('created_at').notNull(),
  updatedAt: ts('updated_at').notNull(),
  finishedAt: ts('finished_at'),
});

export type BulkReplayRow = typeof bulkReplays.$inferSelect;

/** 0031: partitions whose indexes retention rebuilt once their week was closed (db/compact-weeks.ts). */
export const compactedWeeks = pgTable('compacted_weeks', {
  partition: text('partition').primaryKey(),
  compactedAt: ts('compacted_at').notNull(),
  indexBytesBefore: bigint('index_bytes_before', { mode: 'number' }).notNull(),
  indexBytesAfter: bigint('index_bytes_after', { mode: 'number' }).notNull(),
  durationMs: integer('duration_ms').notNull(),
});

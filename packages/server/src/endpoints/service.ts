import { and, eq, isNull } from 'drizzle-orm';
import { listPage, pageOf, type ListPage } from '../db/pagination.ts';
import { formatEventTimestamp, standardWebhooksKey } from '@payhooks/contract';
import type { Db, Queryable } from '../db/client.ts';
import {
  platforms,
  webhookEndpoints,
  type DeliveryOrder,
  type DisabledReason,
  type EndpointStatus,
  type WebhookEndpointRow,
} from '../db/schema.ts';
import { notFound } from '../errors.ts';
import { newId, newSigningSecret } from '../ids.ts';
import type { SecretBox } from '../security/encryption.ts';
import { validateEndpointUrl, type UrlPolicy } from '../security/url-policy.ts';
import { brokerIdentity, credentialsAad, encodeCredentials } from '../endpoint-urls/broker-url.ts';
import { isOperatorPlatform, type Scope } from '../scope.ts';
import type { Clock } from '../clock.ts';
import { validateEnabledEvents } from './enabled-events.ts';
import { cancelEndpointDeliveries, resumeEndpointDeliveries } from '../delivery/parking.ts';
import { setEndpointOrdering } from '../delivery/ordering.ts';
import { AppError } from '../errors.ts';
import type { AuditTrail } from '../audit/trail.ts';
import { redactHeaderValues, validateCustomHeaders } from './custom-headers.ts';
import {
  authenticationColumns,
  authenticationView,
  previousCertificateColumns,
  checkAuthenticationFits,
  trustedCasOf,
  type AuthenticationInput,
  type TlsInput,
  type AuthenticationView,
} from './receiver-auth.ts';
import { healthOf, type EndpointHealth } from './health.ts';
import type { Ed25519Jwk } from '@payhooks/contract';
import { generateSigningKeyPair, jwkOf, whpkOf } from '../security/signing-key-pairs.ts';

/** The endpoint as the API shows it. The secret is never part of it. */
export interface WebhookEndpoint {
  id: string;
  object: 'webhook_endpoint';
  url: string;
  enabled_events: string[];
  description: string | null;
  metadata: Record<string, string>;
  status: EndpointStatus;
  environment: 'live' | 'sandbox';
  created_at: string;
  updated_at: string;
  /**
   * Whether deliveries to it are throttled to one attempt at a time because its attempts keep
   * timing out (delivery/fairness.ts); its next answer lifts it.
   */
  delivery_health: { status: 'healthy' | 'throttled'; consecutive_timeouts: number; throttled_since: string | null };
  /** Why it is disabled: `manual` (API or portal) or `failing` (auto-disable); null when enabled. */
  disabled_reason: DisabledReason | null;
  disabled_at: string | null;
  /** While a rotated-out secret still signs (one more `v1=`), when it stops; else null. */
  previous_secret_expires_at: string | null;
  /** `per_object`: the events about one object go one at a time, in publish order (delivery/ordering.ts). */
  delivery_order: DeliveryOrder;
  /** A broker URL's credentials are stored (sealed; never shown again). */
  url_has_credentials: boolean;
  /** Deliveries also carry the Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature). */
  standard_webhooks: boolean;
  /** The merchant's own request headers, sent with every attempt (endpoints/custom-headers.ts); {} when none. */
  headers: Record<string, string>;
  /** Most requests a second the workers send it (delivery/rate-cap.ts); null: no cap. */
  max_requests_per_second: number | null;
  /** While a 429's or 503's Retry-After pauses its automatic attempts (delivery/pause.ts), until when; else null. */
  paused_until: string | null;
  /** Also signed with ed25519: a `v1a=` entry per public key below in `Service-Signature`. */
  asymmetric_signature: boolean;
  /** How payhooks authenticates to the receiver beside the signature (endpoints/receiver-auth.ts); never a secret; null: none. */
  authentication: AuthenticationView | null;
  /** Certificate authorities trusted for this endpoint beside the public ones (PEM); null: the public ones only. */
  tls: { ca_certificates: string } | null;
  /** The public keys that sign (new first; two during a rotation's overlap); empty while the flag is off. */
  public_keys: PublicKey[];
  /** What the merchant should know about its deliveries: healthy, failing (with warnings), disabled, recovered. */
  health: EndpointHealth;
}

/** One public key of an endpoint: the JWK (as in the Platform's JWKS document) and the `whpk_` form. */
export interface PublicKey {
  object: 'public_key';
  /** The JWK's `kid` (its RFC 7638 thumbprint), repeated for lookups. */
  kid: string;
  /** `whpk_<base64 of the 32 key bytes>`, what the receiver libraries take. */
  public_key: string;
  jwk: Ed25519Jwk;
  created_at: string;
  /** When a rotated-out key stops signing; null for the current key. */
  expires_at: string | null;
}

/** Longest overlap of a rotation: 7 days, in seconds. */
export const MAX_EXPIRE_PREVIOUS_IN = 7 * 86_400;
export const DEFAULT_EXPIRE_PREVIOUS_IN = 86_400;

/** How an endpoint is described and sent to, each optional (one entry per setting; the API's schema is EndpointSettings). */
export interface EndpointSettingsInput {
  description?: string | null | undefined;
  metadata?: Record<string, string> | undefined;
  delivery_order?: DeliveryOrder | undefined;
  standard_webhooks?: boolean | undefined;
  /** Replaces the whole set; null or {} removes them all. */
  headers?: Record<string, string> | null | undefined;
  max_requests_per_second?: number | null | undefined;
  /** Absent at creation: the Platform's default (`asymmetric_signature_default`). */
  asymmetric_signature?: boolean | undefined;
  /** Replaces the whole authentication; null removes it. */
  authentication?: AuthenticationInput | null | undefined;
  /** Replaces the endpoint's own trusted authorities; null removes them. */
  tls?: TlsInput | null | undefined;
}

export interface CreateEndpointInput extends EndpointSettingsInput {
  url: string;
  enabled_events: string[];
}

export interface UpdateEndpointInput extends EndpointSettingsInput {
  url?: string | undefined;
  enabled_events?: string[] | undefined;
  status?: EndpointStatus | undefined;
}

function publicKeyEntry(x: string, createdAt: Date | null, expiresAt: Date | null): PublicKey {
  const jwk = jwkOf(x);
  return {
    object: 'public_key',
    kid: jwk.kid,
    public_key: whpkOf(x),
    jwk,
    created_at: formatEventTimestamp(createdAt ?? new Date(0)),
    expires_at: expiresAt ? formatEventTimestamp(expiresAt) : null,
  };
}

/** The keys that sign at `now`: none while the flag is off; the previous one only in its overlap. */
export function livePublicKeys(
  row: Pick<
    WebhookEndpointRow,
    | 'asymmetricSignature'
    | 'signingPublicKey'
    | 'signingKeyCreatedAt'
    | 'previousSigningPublicKey'
    | 'previousSigningKeyCreatedAt'
    | 'previousSigningKeyExpiresAt'
  >,
  now: Date,
): PublicKey[] {
  if (!row.asymmetricSignature || row.signingPublicKey === null) return [];
  const keys = [publicKeyEntry(row.signingPublicKey, row.signingKeyCreatedAt, null)];
  if (row.previousSigningPublicKey !== null && row.previousSigningKeyExpiresAt !== null && row.previousSigningKeyExpiresAt > now)
    keys.push(publicKeyEntry(row.previousSigningPublicKey, row.previousSigningKeyCreatedAt, row.previousSigningKeyExpiresAt));
  return keys;
}

/** `now` decides whether a rotated-out secret still counts as live. */
export function toApiEndpoint(row: WebhookEndpointRow, now: Date): WebhookEndpoint {
  const previousLive = row.previousSecretExpiresAt !== null && row.previousSecretExpiresAt > now;
  return {
    id: row.id,
    object: 'webhook_endpoint',
    url: row.url,
    enabled_events: row.enabledEvents,
    description: row.description,
    metadata: row.metadata,
    status: row.status,
    environment: row.environment,
    created_at: formatEventTimestamp(row.createdAt),
    updated_at: formatEventTimestamp(row.updatedAt),
    delivery_health: {
      status: row.throttledAt ? 'throttled' : 'healthy',
      consecutive_timeouts: row.consecutiveTimeouts,
      throttled_since: row.throttledAt ? formatEventTimestamp(row.throttledAt) : null,
    },
    disabled_reason: row.status === 'disabled' ? (row.disabledReason ?? 'manual') : null,
    disabled_at: row.status === 'disabled' && row.disabledAt ? formatEventTimestamp(row.disabledAt) : null,
    previous_secret_expires_at: previousLive ? formatEventTimestamp(row.previousSecretExpiresAt!) : null,
    delivery_order: row.deliveryOrder,
    url_has_credentials: row.urlCredentialsCiphertext !== null,
    standard_webhooks: row.standardWebhooks,
    headers: row.headers ?? {},
    max_requests_per_second: row.maxRequestsPerSecond,
    paused_until: row.pausedUntil && row.pausedUntil > now ? formatEventTimestamp(row.pausedUntil) : null,
    asymmetric_signature: row.asymmetricSignature,
    authentication: authenticationView(row, now),
    tls: row.tlsCaCertificates === null ? null : { ca_certificates: row.tlsCaCertificates },
    public_keys: livePublicKeys(row, now),
    health: healthOf(row, now),
  };
}

const kindOf = (scope: Scope) => (isOperatorPlatform(scope.platformId) ? 'operator' : 'merchant');

/** Rows of this scope that are not deleted. Every read and write below starts here. */
const inScope = (scope: Scope) =>
  and(
    eq(webhookEndpoints.platformId, scope.platformId),
    eq(webhookEndpoints.environment, scope.environment),
    isNull(webhookEndpoints.deletedAt),
  );

export class EndpointService {
  private readonly db: Db;
  private readonly secrets: SecretBox;
  private readonly urlPolicy: UrlPolicy;
  private readonly clock: Clock;
  private readonly audit: AuditTrail;

  constructor(deps: { db: Db; secrets: SecretBox; urlPolicy: UrlPolicy; clock: Clock; audit: AuditTrail }) {
    this.db = deps.db;
    this.secrets = deps.secrets;
    this.urlPolicy = deps.urlPolicy;
    this.clock = deps.clock;
    this.audit = deps.audit;
  }

  /** `fn` in `db` when it is a transaction of the caller's (an idempotent request), else in a transaction of its own. */
  private inTransaction<T>(db: Queryable | undefined, fn: (tx: Queryable) => Promise<T>): Promise<T> {
    return db ? fn(db) : this.db.transaction(fn);
  }

  /** Creates an endpoint; the returned `secret` is the only time it leaves the service. */
  async create(scope: Scope, input: CreateEndpointInput, db?: Queryable): Promise<WebhookEndpoint & { secret: string }> {
    return this.inTransaction(db, (tx) => this.createIn(tx, scope, input));
  }

  private async createIn(db: Queryable, scope: Scope, input: CreateEndpointInput): Promise<WebhookEndpoint & { secret: string }> {
    const { url, credentials } = validateEndpointUrl(input.url, scope.environment, this.urlPolicy);
    const enabledEvents = validateEnabledEvents(input.enabled_events, scope.environment, kindOf(scope));
    const headers = input.headers === undefined ? null : validateCustomHeaders(input.headers);
    const id = newId('webhookEndpoint');
    const secret = newSigningSecret();
    const now = this.clock.now();
    const authentication = authenticationColumns(this.secrets, id, input.authentication ?? null, {
      environment: scope.environment,
      urlPolicy: this.urlPolicy,
      now,
    });
    const trustedCas = trustedCasOf(input.tls ?? null);
    checkAuthenticationFits(url, headers, authentication.authenticationType, trustedCas);
    const asymmetric = input.asymmetric_signature ?? (await this.asymmetricDefault(db, scope.platformId));
    const keyPair = asymmetric ? generateSigningKeyPair(this.secrets, id) : null;
    const [row] = await db
      .insert(webhookEndpoints)
      .values({
        id,
        platformId: scope.platformId,
        environment: scope.environment,
        url,
        enabledEvents,
        description: input.description ?? null,
        metadata: input.metadata ?? {},
        deliveryOrder: input.delivery_order ?? 'unordered',
        maxRequestsPerSecond: checkRate(input.max_requests_per_second),
        status: 'enabled',
        secretCiphertext: this.secrets.encrypt(secret, id),
        urlCredentialsCiphertext: credentials ? this.secrets.encrypt(encodeCredentials(credentials), credentialsAad(id)) : null,
        // A new secret is always one the Standard Webhooks libraries take (ids.ts).
        standardWebhooks: input.standard_webhooks ?? false,
        headers,
        ...authentication,
        tlsCaCertificates: trustedCas,
        asymmetricSignature: asymmetric,
        signingKeyCiphertext: keyPair?.ciphertext ?? null,
        signingPublicKey: keyPair?.publicKey ?? null,
        signingKeyCreatedAt: keyPair ? now : null,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    const created = toApiEndpoint(row!, now);
    await this.audit.record(db, scope, {
      action: 'webhook_endpoint.create',
      resourceType: 'webhook_endpoint',
      resourceId: id,
      changes: {
        url: created.url,
        enabled_events: created.enabled_events,
        description: created.description,
        metadata: created.metadata,
        delivery_order: created.delivery_order,
        standard_webhooks: created.standard_webhooks,
        headers: redactHeaderValues(created.headers),
        max_requests_per_second: created.max_requests_per_second,
        asymmetric_signature: created.asymmetric_signature,
        authentication: created.authentication,
        tls: created.tls,
      },
    });
    return { ...created, secret };
  }

  /** The Platform's default for endpoints created without `asymmetric_signature`. */
  private async asymmetricDefault(db: Queryable, platformId: string): Promise<boolean> {
    const [row] = await db.select({ value: platforms.asymmetricSignatureDefault }).from(platforms).where(eq(platforms.id, platformId));
    return row?.value ?? false;
  }

  async get(scope: Scope, id: string): Promise<WebhookEndpoint> {
    return toApiEndpoint(await this.getRow(scope, id), this.clock.now());
  }

  async getRow(scope: Scope, id: string, db: Queryable = this.db): Promise<WebhookEndpointRow> {
    const [row] = await db
      .select()
      .from(webhookEndpoints)
      .where(and(inScope(scope), eq(webhookEndpoints.id, id)));
    if (!row) throw notFound('webhook endpoint', id);
    return row;
  }

  /** Newest first; `startingAfter` is the id of the last endpoint of the previous page. */
  async list(scope: Scope, options: { limit: number; startingAfter?: string | undefined }): Promise<ListPage<WebhookEndpoint>> {
    const { rows, hasMore } = await pageOf<WebhookEndpointRow>(this.db, webhookEndpoints, inScope(scope), {
      ...options,
      what: 'webhook endpoint',
    });
    const now = this.clock.now();
    return listPage(
      rows.map((r) => toApiEndpoint(r, now)),
      hasMore,
    );
  }

  async update(scope: Scope, id: string, input: UpdateEndpointInput): Promise<WebhookEndpoint> {
    return this.db.transaction(async (tx) => {
      const current = await this.getRow(scope, id, tx);
      const changes: Partial<typeof webhookEndpoints.$inferInsert> = { updatedAt: this.clock.now() };
      if (input.url !== undefined) {
        const { url, credentials } = validateEndpointUrl(input.url, scope.environment, this.urlPolicy);
        changes.url = url;
        // Credentials in the new url replace the stored ones. Without any, the stored ones stay
        // only while the url names the same broker (scheme, host, port, virtual host): a client
        // that sends back the url it read keeps them, and they never go to another host.
        if (credentials) changes.urlCredentialsCiphertext = this.secrets.encrypt(encodeCredentials(credentials), credentialsAad(id));
        else if (brokerIdentity(url) !== brokerIdentity(current.url)) changes.urlCredentialsCiphertext = null;
      }
      if (input.enabled_events !== undefined)
        changes.enabledEvents = validateEnabledEvents(input.enabled_events, scope.environment, kindOf(scope));
      if (input.description !== undefined) changes.description = input.description;
      if (input.metadata !== undefined) changes.metadata = mergeMetadata(current.metadata, input.metadata);
      if (input.delivery_order !== undefined) changes.deliveryOrder = input.delivery_order;
      if (input.headers !== undefined) changes.headers = validateCustomHeaders(input.headers);
      if (input.standard_webhooks !== undefined) {
        if (input.standard_webhooks && !current.standardWebhooks) this.checkStandardWebhooksSecret(current);
        changes.standardWebhooks = input.standard_webhooks;
      }
      if (input.max_requests_per_second !== undefined) changes.maxRequestsPerSecond = checkRate(input.max_requests_per_second);
      if (input.authentication !== undefined) {
        const now = this.clock.now();
        Object.assign(
          changes,
          authenticationColumns(this.secrets, id, input.authentication, { environment: scope.environment, urlPolicy: this.urlPolicy, now }),
          previousCertificateColumns(current, input.authentication, now),
        );
      }
      if (input.tls !== undefined) changes.tlsCaCertificates = trustedCasOf(input.tls);
      checkAuthenticationFits(
        changes.url ?? current.url,
        changes.headers !== undefined ? changes.headers : current.headers,
        changes.authenticationType !== undefined ? changes.authenticationType : current.authenticationType,
        changes.tlsCaCertificates !== undefined ? changes.tlsCaCertificates : current.tlsCaCertificates,
      );
      if (input.asymmetric_signature !== undefined) {
        changes.asymmetricSignature = input.asymmetric_signature;
        // The first time on, a key pair is made. Turned off, it is kept (it signs nothing and is
        // listed nowhere), so turning it on again brings back the key receivers already have.
        if (input.asymmetric_signature && current.signingKeyCiphertext === null) {
          const keyPair = generateSigningKeyPair(this.secrets, id);
          Object.assign(changes, {
            signingKeyCiphertext: keyPair.ciphertext,
            signingPublicKey: keyPair.publicKey,
            signingKeyCreatedAt: changes.updatedAt,
          });
        }
      }
      if (input.status !== undefined && input.status !== current.status) {
        changes.status = input.status;
        // Enabling starts afresh: the auto-disable window counts from the next failure.
        Object.assign(
          changes,
          input.status === 'disabled'
            ? { disabledReason: 'manual', disabledAt: changes.updatedAt }
            : { disabledReason: null, disabledAt: null, failingSince: null },
        );
      }
      const [row] = await tx
        .update(webhookEndpoints)
        .set(changes)
        .where(and(inScope(scope), eq(webhookEndpoints.id, id)))
        .returning();
      if (!row) throw notFound('webhook endpoint', id);
      if (current.status === 'disabled' && row.status === 'enabled') await resumeEndpointDeliveries(tx, id, this.clock.now());
      if (row.deliveryOrder !== current.deliveryOrder) await setEndpointOrdering(tx, id, row.deliveryOrder);
      const updated = toApiEndpoint(row, this.clock.now());
      // Enabling and disabling are their own actions (what an auditor looks for); other changes
      // are an update naming each field that changed, with its new value.
      const statusChange = row.status !== current.status ? (row.status === 'enabled' ? 'enable' : 'disable') : null;
      await this.audit.record(tx, scope, {
        action: `webhook_endpoint.${statusChange ?? 'update'}`,
        resourceType: 'webhook_endpoint',
        resourceId: id,
        changes: {
          ...changedFields(toApiEndpoint(current, this.clock.now()), updated),
          // Set again with the same username (a new password): recorded too, never its value.
          ...(input.authentication !== undefined ? { authentication: updated.authentication } : {}),
        },
      });
      return updated;
    });
  }

  /** Soft delete: the endpoint stops receiving at once; its delivery log stays readable. */
  async delete(scope: Scope, id: string): Promise<{ id: string; object: 'webhook_endpoint'; deleted: true }> {
    return this.db.transaction(async (tx) => {
      const rows = await tx
        .update(webhookEndpoints)
        .set({ deletedAt: this.clock.now(), updatedAt: this.clock.now() })
        .where(and(inScope(scope), eq(webhookEndpoints.id, id)))
        .returning({ id: webhookEndpoints.id });
      if (rows.length === 0) throw notFound('webhook endpoint', id);
      await cancelEndpointDeliveries(tx, id, this.clock.now());
      await this.audit.record(tx, scope, { action: 'webhook_endpoint.delete', resourceType: 'webhook_endpoint', resourceId: id });
      return { id, object: 'webhook_endpoint' as const, deleted: true as const };
    });
  }

  /**
   * Rotates the signing secret: a new one signs from now on, first in `Service-Signature`; the
   * replaced one keeps signing too (a second `v1=`) for `expirePreviousIn` seconds (0: stops at
   * once), so receivers can switch without rejecting a delivery. A secret replaced before, still
   * in its overlap, stops at once (two live secrets at most, like Stripe). The new secret is
   * returned here only.
   */
  async rotateSecret(
    scope: Scope,
    id: string,
    expirePreviousIn: number = DEFAULT_EXPIRE_PREVIOUS_IN,
    db?: Queryable,
  ): Promise<WebhookEndpoint & { secret: string }> {
    return this.inTransaction(db, (tx) => this.rotateIn(tx, scope, id, expirePreviousIn));
  }

  private async rotateIn(db: Queryable, scope: Scope, id: string, expirePreviousIn: number): Promise<WebhookEndpoint & { secret: string }> {
    checkExpirePreviousIn(expirePreviousIn);
    const current = await this.getRow(scope, id, db);
    const now = this.clock.now();
    const secret = newSigningSecret();
    const keep = expirePreviousIn > 0;
    const [row] = await db
      .update(webhookEndpoints)
      .set({
        secretCiphertext: this.secrets.encrypt(secret, id),
        // The old ciphertext moves as is: it is bound to this endpoint id like the new one.
        previousSecretCiphertext: keep ? current.secretCiphertext : null,
        previousSecretExpiresAt: keep ? new Date(now.getTime() + expirePreviousIn * 1000) : null,
        updatedAt: now,
      })
      .where(and(inScope(scope), eq(webhookEndpoints.id, id)))
      .returning();
    if (!row) throw notFound('webhook endpoint', id);
    const rotated = toApiEndpoint(row, now);
    await this.audit.record(db, scope, {
      action: 'webhook_endpoint.rotate_secret',
      resourceType: 'webhook_endpoint',
      resourceId: id,
      changes: { previous_secret_expires_at: rotated.previous_secret_expires_at },
    });
    return { ...rotated, secret };
  }

  /**
   * Turning the Standard Webhooks headers on needs a secret those libraries can take: one made
   * before Standard Webhooks support (base64url, 43 characters) is refused by them, so the
   * merchant rolls it first (docs/decisions/standard-webhooks-headers.md). Rolling makes a
   * compatible one.
   */
  private checkStandardWebhooksSecret(row: WebhookEndpointRow): void {
    if (standardWebhooksKey(this.secrets.decrypt(row.secretCiphertext, row.id)) !== null) return;
    throw new AppError(
      'invalid_state',
      'secret_not_standard_webhooks_compatible',
      "This endpoint's signing secret predates Standard Webhooks support: the Standard Webhooks libraries can't decode it (what follows whsec_ must be standard base64). Roll the secret first (rotate_secret, or Roll secret in the portal; the new one works with both kinds of library), then turn standard_webhooks on.",
      { param: 'standard_webhooks' },
    );
  }

  /**
   * Rotates the ed25519 key pair, like `rotateSecret`: a new key pair signs from now on (the
   * first `v1a=`); the replaced one keeps signing for `expirePreviousIn` seconds and stays in the
   * endpoint's `public_keys` and the Platform's JWKS until then. Only while the flag is on.
   */
  async rotateSigningKey(
    scope: Scope,
    id: string,
    expirePreviousIn: number = DEFAULT_EXPIRE_PREVIOUS_IN,
    db?: Queryable,
  ): Promise<WebhookEndpoint> {
    return this.inTransaction(db, (tx) => this.rotateKeyIn(tx, scope, id, expirePreviousIn));
  }

  private async rotateKeyIn(db: Queryable, scope: Scope, id: string, expirePreviousIn: number): Promise<WebhookEndpoint> {
    checkExpirePreviousIn(expirePreviousIn);
    const current = await this.getRow(scope, id, db);
    if (!current.asymmetricSignature || current.signingKeyCiphertext === null) {
      throw new AppError(
        'invalid_state',
        'asymmetric_signature_off',
        'This endpoint does not sign with ed25519: set asymmetric_signature to true first (that makes its first key pair).',
      );
    }
    const now = this.clock.now();
    const keyPair = generateSigningKeyPair(this.secrets, id);
    const keep = expirePreviousIn > 0;
    const [row] = await db
      .update(webhookEndpoints)
      .set({
        signingKeyCiphertext: keyPair.ciphertext,
        signingPublicKey: keyPair.publicKey,
        signingKeyCreatedAt: now,
        // Moved as is: the sealed key is bound to this endpoint id like the new one.
        previousSigningKeyCiphertext: keep ? current.signingKeyCiphertext : null,
        previousSigningPublicKey: keep ? current.signingPublicKey : null,
        previousSigningKeyCreatedAt: keep ? current.signingKeyCreatedAt : null,
        previousSigningKeyExpiresAt: keep ? new Date(now.getTime() + expirePreviousIn * 1000) : null,
        updatedAt: now,
      })
      .where(and(inScope(scope), eq(webhookEndpoints.id, id)))
      .returning();
    if (!row) throw notFound('webhook endpoint', id);
    const rotated = toApiEndpoint(row, now);
    await this.audit.record(db, scope, {
      action: 'webhook_endpoint.rotate_signing_key',
      resourceType: 'webhook_endpoint',
      resourceId: id,
      changes: { public_keys: rotated.public_keys.map((k) => ({ kid: k.kid, expires_at: k.expires_at })) },
    });
    return rotated;
  }

  /** The signing secret in clear, for the delivery sender only. */
  decryptSecret(row: Pick<WebhookEndpointRow, 'id' | 'secretCiphertext'>): string {
    return this.secrets.decrypt(row.secretCiphertext, row.id);
  }
}

/** The overlap of a rotation, secret or key pair alike: 0 (none) to 7 days. */
function checkExpirePreviousIn(expirePreviousIn: number): void {
  if (!Number.isInteger(expirePreviousIn) || expirePreviousIn < 0 || expirePreviousIn > MAX_EXPIRE_PREVIOUS_IN) {
    throw new AppError(
      'invalid_request',
      'parameter_invalid',
      `expire_previous_in must be a whole number of seconds from 0 to ${MAX_EXPIRE_PREVIOUS_IN} (7 days).`,
      { param: 'expire_previous_in' },
    );
  }
}

/** The fields an update changed, with their new values (never a secret: the endpoint object has none). */
function changedFields(before: WebhookEndpoint, after: WebhookEndpoint): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of [
    'url',
    'enabled_events',
    'description',
    'metadata',
    'status',
    'delivery_order',
    'url_has_credentials',
    'standard_webhooks',
    'headers',
    'max_requests_per_second',
    'asymmetric_signature',
    'authentication',
    'tls',
  ] as const) {
    if (JSON.stringify(before[key]) !== JSON.stringify(after[key]))
      out[key] = key === 'headers' ? redactHeaderValues(after.headers) : after[key];
  }
  return out;
}

/** The endpoint for an operational event (webhook_endpoint.*), its headers' values redacted. */
export function withRedactedHeaders(endpoint: WebhookEndpoint): WebhookEndpoint {
  return { ...endpoint, headers: redactHeaderValues(endpoint.headers) };
}

/** Stripe's metadata semantics on update: keys merge; a key set to "" is removed. */
function mergeMetadata(current: Record<string, string>, patch: Record<string, string>): Record<string, string> {
  const out = { ...current };
  for (const [k, v] of Object.entries(patch)) {
    if (v === '') delete out[k];
    else out[k] = v;
  }
  return out;
}

/** Highest max_requests_per_second: above it a cap protects no receiver (and migration 0025 refuses it). */
export const MAX_REQUESTS_PER_SECOND = 10_000;

/** A rate cap as given: a whole number from 1 to MAX_REQUESTS_PER_SECOND, or null for none. */
function checkRate(value: number | null | undefined): number | null {
  if (value === undefined || value === null) return null;
  if (!Number.isInteger(value) || value < 1 || value > MAX_REQUESTS_PER_SECOND)
    throw new AppError(
      'invalid_request',
      'parameter_invalid',
      `Invalid 'max_requests_per_second': give a whole number of requests per second from 1 to ${MAX_REQUESTS_PER_SECOND}, or null for no cap.`,
      { param: 'max_requests_per_second' },
    );
  return value;
}

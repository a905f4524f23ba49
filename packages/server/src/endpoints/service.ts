import { and, eq, isNull } from 'drizzle-orm';
import { listPage, pageOf, type ListPage } from '../db/pagination.ts';
import { formatEventTimestamp } from '@payhooks/contract';
import type { Db, Queryable } from '../db/client.ts';
import { webhookEndpoints, type EndpointStatus, type WebhookEndpointRow } from '../db/schema.ts';
import { notFound } from '../errors.ts';
import { newId, newSigningSecret } from '../ids.ts';
import type { SecretBox } from '../security/encryption.ts';
import { validateEndpointUrl, type UrlPolicy } from '../security/url-policy.ts';
import type { Scope } from '../tenancy/scope.ts';
import type { Clock } from '../clock.ts';
import { validateEnabledEvents } from './enabled-events.ts';
import { parkEndpointDeliveries, resumeEndpointDeliveries } from '../delivery/parking.ts';

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
}

export interface CreateEndpointInput {
  url: string;
  enabled_events: string[];
  description?: string | null | undefined;
  metadata?: Record<string, string> | undefined;
}

export interface UpdateEndpointInput {
  url?: string | undefined;
  enabled_events?: string[] | undefined;
  description?: string | null | undefined;
  metadata?: Record<string, string> | undefined;
  status?: EndpointStatus | undefined;
}

export function toApiEndpoint(row: WebhookEndpointRow): WebhookEndpoint {
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
  };
}

/** Rows of this scope that are not deleted. Every read and write below starts here. */
const inScope = (scope: Scope) =>
  and(eq(webhookEndpoints.platformId, scope.platformId), eq(webhookEndpoints.environment, scope.environment), isNull(webhookEndpoints.deletedAt));

export class EndpointService {
  constructor(
    private readonly db: Db,
    private readonly secrets: SecretBox,
    private readonly urlPolicy: UrlPolicy,
    private readonly clock: Clock,
  ) {}

  /** Creates an endpoint; the returned `secret` is the only time it leaves the service. */
  async create(scope: Scope, input: CreateEndpointInput, db: Queryable = this.db): Promise<WebhookEndpoint & { secret: string }> {
    const url = validateEndpointUrl(input.url, scope.environment, this.urlPolicy);
    const enabledEvents = validateEnabledEvents(input.enabled_events, scope.environment);
    const id = newId('webhookEndpoint');
    const secret = newSigningSecret();
    const now = this.clock.now();
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
        status: 'enabled',
        secretCiphertext: this.secrets.encrypt(secret, id),
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    return { ...toApiEndpoint(row!), secret };
  }

  async get(scope: Scope, id: string): Promise<WebhookEndpoint> {
    return toApiEndpoint(await this.getRow(scope, id));
  }

  async getRow(scope: Scope, id: string, db: Queryable = this.db): Promise<WebhookEndpointRow> {
    const [row] = await db.select().from(webhookEndpoints).where(and(inScope(scope), eq(webhookEndpoints.id, id)));
    if (!row) throw notFound('webhook endpoint', id);
    return row;
  }

  /** Newest first; `startingAfter` is the id of the last endpoint of the previous page. */
  async list(scope: Scope, options: { limit: number; startingAfter?: string | undefined }): Promise<ListPage<WebhookEndpoint>> {
    const { rows, hasMore } = await pageOf<WebhookEndpointRow>(this.db, webhookEndpoints, inScope(scope), { ...options, what: 'webhook endpoint' });
    return listPage(rows.map(toApiEndpoint), hasMore);
  }

  async update(scope: Scope, id: string, input: UpdateEndpointInput): Promise<WebhookEndpoint> {
    return this.db.transaction(async (tx) => {
      const current = await this.getRow(scope, id, tx);
      const changes: Partial<typeof webhookEndpoints.$inferInsert> = { updatedAt: this.clock.now() };
      if (input.url !== undefined) changes.url = validateEndpointUrl(input.url, scope.environment, this.urlPolicy);
      if (input.enabled_events !== undefined) changes.enabledEvents = validateEnabledEvents(input.enabled_events, scope.environment);
      if (input.description !== undefined) changes.description = input.description;
      if (input.metadata !== undefined) changes.metadata = mergeMetadata(current.metadata, input.metadata);
      if (input.status !== undefined) changes.status = input.status;
      const [row] = await tx.update(webhookEndpoints).set(changes).where(and(inScope(scope), eq(webhookEndpoints.id, id))).returning();
      if (!row) throw notFound('webhook endpoint', id);
      if (current.status === 'enabled' && row.status === 'disabled') await parkEndpointDeliveries(tx, id);
      if (current.status === 'disabled' && row.status === 'enabled') await resumeEndpointDeliveries(tx, id, this.clock.now());
      return toApiEndpoint(row);
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
      await parkEndpointDeliveries(tx, id);
      return { id, object: 'webhook_endpoint' as const, deleted: true as const };
    });
  }

  /** The signing secret in clear, for the delivery sender only. */
  decryptSecret(row: Pick<WebhookEndpointRow, 'id' | 'secretCiphertext'>): string {
    return this.secrets.decrypt(row.secretCiphertext, row.id);
  }
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

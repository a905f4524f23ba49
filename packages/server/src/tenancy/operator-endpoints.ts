import { and, desc, eq, isNull, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { operatorEndpoints, webhookEndpoints, type Environment, type WebhookEndpointRow } from '../db/schema.ts';
import { AppError, notFound } from '../errors.ts';
import type { RequestOrigin, Scope } from '../scope.ts';
import type { Clock } from '../clock.ts';
import { platformExists } from './platforms.ts';
import { OPERATOR_PLATFORM_ID } from '../scope.ts';
import {
  toApiEndpoint,
  type EndpointService,
  type EndpointSettingsInput,
  type UpdateEndpointInput,
  type WebhookEndpoint,
} from '../endpoints/service.ts';

/** An operator endpoint as the internal API shows it: a webhook endpoint and the Platform it hears about. */
export type OperatorEndpoint = WebhookEndpoint & { platform_id: string | null };

export interface CreateOperatorEndpointInput extends EndpointSettingsInput {
  url: string;
  environment: Environment;
  /** The Platform whose endpoints it hears about; null or absent: every Platform's. */
  platform_id?: string | null | undefined;
  /** Absent: every operational event. */
  enabled_events?: string[] | undefined;
}

/** How many operator endpoints one environment may have: a handful is the use; a list is one page. */
export const MAX_OPERATOR_ENDPOINTS = 100;

const scopeOf = (environment: Environment, origin: RequestOrigin | undefined): Scope => ({
  platformId: OPERATOR_PLATFORM_ID,
  environment,
  actor: { type: 'internal', id: 'internal_token' },
  origin,
});

/**
 * Endpoints the payment service registers through the internal API to hear about endpoints'
 * health (webhook_endpoint.failing, .recovered, .disabled) of one Platform or of all, so it can
 * alert through its own mail, chat or pager, and turn payhooks' own mail off per Platform. They
 * are webhook endpoints of the reserved operator Platform (endpoints/operator-platform.ts), so they are
 * signed, retried, logged, throttled and auto-disabled by the same code as a merchant's, and no
 * merchant-facing read ever reaches them: every such read is filtered by the caller's Platform.
 * What they receive is sent by endpoints/endpoint-events.ts.
 */
export class OperatorEndpoints {
  private readonly db: Db;
  private readonly endpoints: EndpointService;
  private readonly clock: Clock;

  constructor(deps: { db: Db; endpoints: EndpointService; clock: Clock }) {
    this.db = deps.db;
    this.endpoints = deps.endpoints;
    this.clock = deps.clock;
  }

  async create(input: CreateOperatorEndpointInput, origin?: RequestOrigin): Promise<OperatorEndpoint & { secret: string }> {
    const platformId = input.platform_id ?? null;
    if (platformId !== null && !(await platformExists(this.db, platformId)))
      throw new AppError('not_found', 'resource_missing', `No such Platform: '${platformId}'.`, { param: 'platform_id' });
    return this.db.transaction(async (tx) => {
      const [{ n } = { n: 0 }] = await tx
        .select({ n: sql<number>`count(*)::int` })
        .from(webhookEndpoints)
        .where(
          and(
            eq(webhookEndpoints.platformId, OPERATOR_PLATFORM_ID),
            eq(webhookEndpoints.environment, input.environment),
            isNull(webhookEndpoints.deletedAt),
          ),
        );
      if (Number(n) >= MAX_OPERATOR_ENDPOINTS)
        throw new AppError(
          'unprocessable',
          'operator_endpoint_limit',
          `An environment has at most ${MAX_OPERATOR_ENDPOINTS} operator endpoints: delete one you no longer use.`,
        );
      const { environment, platform_id: _, enabled_events, ...settings } = input;
      const created = await this.endpoints.create(
        scopeOf(environment, origin),
        { ...settings, enabled_events: enabled_events ?? ['*'] },
        tx,
      );
      await tx.insert(operatorEndpoints).values({ endpointId: created.id, platformId });
      return { ...created, platform_id: platformId };
    });
  }

  /** Newest first, at most MAX_OPERATOR_ENDPOINTS (all of them), of one environment or both. */
  async list(environment: Environment | undefined): Promise<OperatorEndpoint[]> {
    const rows = await this.undeleted(environment ? eq(webhookEndpoints.environment, environment) : undefined)
      .orderBy(desc(webhookEndpoints.createdAt), desc(webhookEndpoints.id))
      .limit(2 * MAX_OPERATOR_ENDPOINTS);
    const now = this.clock.now();
    return rows.map(({ row, platformId }) => ({ ...toApiEndpoint(row, now), platform_id: platformId }));
  }

  async get(id: string): Promise<OperatorEndpoint> {
    const { row, platformId } = await this.find(id);
    return { ...toApiEndpoint(row, this.clock.now()), platform_id: platformId };
  }

  /** The scope an operator endpoint's own reads and writes run in (its environment's). */
  async scopeFor(id: string, origin?: RequestOrigin): Promise<Scope> {
    const { row } = await this.find(id);
    return scopeOf(row.environment, origin);
  }

  async update(id: string, input: UpdateEndpointInput, origin?: RequestOrigin): Promise<OperatorEndpoint> {
    const { row, platformId } = await this.find(id);
    const updated = await this.endpoints.update(scopeOf(row.environment, origin), id, input);
    return { ...updated, platform_id: platformId };
  }

  async rotateSecret(
    id: string,
    expirePreviousIn: number | undefined,
    origin?: RequestOrigin,
  ): Promise<OperatorEndpoint & { secret: string }> {
    const { row, platformId } = await this.find(id);
    const rotated = await this.endpoints.rotateSecret(scopeOf(row.environment, origin), id, expirePreviousIn);
    return { ...rotated, platform_id: platformId };
  }

  async delete(id: string, origin?: RequestOrigin): Promise<{ id: string; object: 'webhook_endpoint'; deleted: true }> {
    const { row } = await this.find(id);
    return this.endpoints.delete(scopeOf(row.environment, origin), id);
  }

  /** The operator Platform's undeleted endpoints with the Platform each hears about, narrowed by `where`. */
  private undeleted(where: SQL | undefined) {
    return this.db
      .select({ row: webhookEndpoints, platformId: operatorEndpoints.platformId })
      .from(webhookEndpoints)
      .innerJoin(operatorEndpoints, eq(operatorEndpoints.endpointId, webhookEndpoints.id))
      .where(and(eq(webhookEndpoints.platformId, OPERATOR_PLATFORM_ID), isNull(webhookEndpoints.deletedAt), where));
  }

  private async find(id: string): Promise<{ row: WebhookEndpointRow; platformId: string | null }> {
    const [found] = await this.undeleted(eq(webhookEndpoints.id, id));
    if (!found) throw notFound('operator endpoint', id);
    return found;
  }
}

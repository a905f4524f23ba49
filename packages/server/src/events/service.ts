import { and, eq, gte, lt, sql, type SQL } from 'drizzle-orm';
import type { WebhookEvent } from '@payhooks/contract';
import type { Db } from '../db/client.ts';
import { events, type EventRow } from '../db/schema.ts';
import { listPage, pageOf, type ListPage } from '../db/pagination.ts';
import { AppError, notFound } from '../errors.ts';
import type { Scope } from '../scope.ts';

/** Every state but `delivered`: the rows of webhook_deliveries_state_idx. */
const NOT_DELIVERED = ['pending', 'failed_retrying', 'exhausted', 'cancelled'] as const;

const inScope = (scope: Scope) => and(eq(events.platformId, scope.platformId), eq(events.environment, scope.environment));

/** Reading published events. Publishing is `publishEvent` (publish.ts), inside a transaction. */
export class EventService {
  private readonly db: Db;

  constructor(deps: { db: Db }) {
    this.db = deps.db;
  }

  /** The stored serialisation: exactly the bytes every delivery of this event sent. */
  async getBody(scope: Scope, id: string): Promise<string> {
    const [row] = await this.db
      .select({ body: events.body })
      .from(events)
      .where(and(inScope(scope), eq(events.id, id)));
    if (!row) throw notFound('event', id);
    return row.body;
  }

  /**
   * Events newest first, filtered by type, created range, the object they are about and whether
   * all their deliveries were delivered (`deliverySuccess`, Stripe's meaning: `false` = at least
   * one delivery is not delivered, `true` = none is left undelivered). Each filter reads an index:
   * see the plan test (events-plan.postgres.test.ts).
   */
  async list(
    scope: Scope,
    options: {
      limit: number;
      startingAfter?: string | undefined;
      type?: string | undefined;
      createdGte?: Date | undefined;
      createdLt?: Date | undefined;
      objectId?: string | undefined;
      deliverySuccess?: boolean | undefined;
    },
  ): Promise<ListPage<WebhookEvent>> {
    if (options.deliverySuccess === false && options.objectId === undefined) return this.listUndelivered(scope, options);
    const filters: (SQL | undefined)[] = [inScope(scope)];
    if (options.type) filters.push(eq(events.type, options.type));
    if (options.createdGte) filters.push(gte(events.createdAt, options.createdGte));
    if (options.createdLt) filters.push(lt(events.createdAt, options.createdLt));
    if (options.objectId) filters.push(eq(events.objectId, options.objectId));
    if (options.deliverySuccess !== undefined) {
      // Checked per event, newest first, until the page is full. OFFSET 0 keeps it a per-row
      // subplan: as a join, the planner would read every event of a created range to build a
      // hash anti-join before returning the first 20 (catch-up-plan.postgres.test.ts).
      const undelivered = sql`EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = ${events.id}
        AND d.created_at = ${events.createdAt} AND d.state <> 'delivered' OFFSET 0)`;
      filters.push(options.deliverySuccess ? sql`NOT ${undelivered}` : undelivered);
    }
    const { rows, hasMore } = await pageOf<EventRow>(this.db, events, and(...filters), { ...options, what: 'event' });
    return listPage(
      rows.map((r) => JSON.parse(r.body) as WebhookEvent),
      hasMore,
    );
  }

  /**
   * `delivery_success=false`, driven from the deliveries that are not delivered (the partial
   * index webhook_deliveries_state_idx, migration 0027) rather than from every event: after an
   * outage a merchant with millions of delivered events reads only the few that are not. A
   * delivery's `created_at` is its event's (both are written by one publish), so the deliveries'
   * order and cursor are the events'. The index leads with the state (the log's state filter and
   * the backlog metrics read one state's range), so each unfinished state is read in order, a
   * page at most, and the four are merged: no second index of the same rows to write at publish.
   */
  private async listUndelivered(
    scope: Scope,
    options: {
      limit: number;
      startingAfter?: string | undefined;
      type?: string | undefined;
      createdGte?: Date | undefined;
      createdLt?: Date | undefined;
    },
  ): Promise<ListPage<WebhookEvent>> {
    let cursor = sql``;
    if (options.startingAfter) {
      const [after] = await this.db
        .select({ createdAt: events.createdAt, id: events.id })
        .from(events)
        .where(and(inScope(scope), eq(events.id, options.startingAfter)));
      if (!after)
        throw new AppError('invalid_request', 'resource_missing', `starting_after: no such event '${options.startingAfter}'.`, {
          param: 'starting_after',
        });
      // The plain bound is implied; the index (…, created_at DESC, id DESC) takes it as its condition.
      const t = after.createdAt.toISOString();
      cursor = sql` AND d.created_at <= ${t}::timestamptz AND (d.created_at, d.event_id) < (${t}::timestamptz, ${after.id}::text)`;
    }
    const type = options.type ? sql` AND d.event_type = ${options.type}` : sql``;
    const gteBound = options.createdGte ? sql` AND d.created_at >= ${options.createdGte.toISOString()}::timestamptz` : sql``;
    const ltBound = options.createdLt ? sql` AND d.created_at < ${options.createdLt.toISOString()}::timestamptz` : sql``;
    const byState = sql.join(
      NOT_DELIVERED.map(
        (state) => sql`(SELECT DISTINCT d.created_at, d.event_id FROM webhook_deliveries d
        WHERE d.state = ${state} AND d.platform_id = ${scope.platformId} AND d.environment = ${scope.environment}
          ${type}${gteBound}${ltBound}${cursor}
        ORDER BY d.created_at DESC, d.event_id DESC
        LIMIT ${options.limit + 1})`,
      ),
      sql` UNION ALL `,
    );
    const result = await this.db.execute<{ body: string }>(sql`
      SELECT e.body FROM (
        SELECT DISTINCT s.created_at, s.event_id FROM (${byState}) s
        ORDER BY s.created_at DESC, s.event_id DESC
        LIMIT ${options.limit + 1}
      ) u JOIN events e ON e.id = u.event_id AND e.created_at = u.created_at
      ORDER BY u.created_at DESC, u.event_id DESC`);
    const rows = (result as unknown as { rows: { body: string }[] }).rows;
    return listPage(
      rows.slice(0, options.limit).map((r) => JSON.parse(r.body) as WebhookEvent),
      rows.length > options.limit,
    );
  }
}

import { and, eq, type SQL } from 'drizzle-orm';
import type { WebhookEvent } from '@payhooks/contract';
import type { Db } from '../db/client.ts';
import { events, type EventRow } from '../db/schema.ts';
import { listPage, pageOf, type ListPage } from '../db/pagination.ts';
import { notFound } from '../errors.ts';
import type { Scope } from '../tenancy/scope.ts';

const inScope = (scope: Scope) => and(eq(events.platformId, scope.platformId), eq(events.environment, scope.environment));

/** Reading published events. Publishing is `publishEvent` (publish.ts), inside a transaction. */
export class EventService {
  constructor(private readonly db: Db) {}

  /** The stored serialisation: exactly the bytes every delivery of this event sent. */
  async getBody(scope: Scope, id: string): Promise<string> {
    const [row] = await this.db
      .select({ body: events.body })
      .from(events)
      .where(and(inScope(scope), eq(events.id, id)));
    if (!row) throw notFound('event', id);
    return row.body;
  }

  async list(
    scope: Scope,
    options: { limit: number; startingAfter?: string | undefined; type?: string | undefined },
  ): Promise<ListPage<WebhookEvent>> {
    const filters: (SQL | undefined)[] = [inScope(scope)];
    if (options.type) filters.push(eq(events.type, options.type));
    const { rows, hasMore } = await pageOf<EventRow>(this.db, events, and(...filters), { ...options, what: 'event' });
    return listPage(
      rows.map((r) => JSON.parse(r.body) as WebhookEvent),
      hasMore,
    );
  }
}

import { randomBytes } from 'node:crypto';
import { and, asc, eq, inArray, type SQL } from 'drizzle-orm';
import { formatEventTimestamp } from '@payhooks/contract';
import type { Db } from '../db/client.ts';
import { deliveryAttempts, webhookDeliveries, type AttemptRow, type DeliveryRow, type DeliveryState } from '../db/schema.ts';
import { listPage, pageOf, type ListPage } from '../db/pagination.ts';
import { AppError, notFound } from '../errors.ts';
import type { Database } from '../db/client.ts';
import type { Clock } from '../clock.ts';
import type { SecretBox } from '../security/encryption.ts';
import type { Scope } from '../tenancy/scope.ts';
import { recordOutcomes } from './record.ts';
import { afterManualAttempt, REPLAYABLE_STATES, RESENDABLE_STATES } from './schedule.ts';
import { EndpointGate } from './endpoint-gate.ts';
import type { Sender } from './sender.ts';
import type { DeliveryMetrics } from './metrics.ts';

export interface ApiAttempt {
  id: string;
  object: 'delivery_attempt';
  attempt_number: number;
  trigger: 'automatic' | 'manual';
  succeeded: boolean;
  started_at: string;
  duration_ms: number;
  status_code: number | null;
  /** The receiver's body as text (at most 16 KiB). Never render it as HTML. */
  response_body: string | null;
  error_kind: string | null;
  error_message: string | null;
}

export interface ApiDelivery {
  id: string;
  object: 'webhook_delivery';
  event_id: string;
  endpoint_id: string;
  state: DeliveryState;
  attempt_count: number;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  created_at: string;
  attempts: ApiAttempt[];
}

const iso = (d: Date | null) => (d ? formatEventTimestamp(d) : null);

function toApiAttempt(a: AttemptRow): ApiAttempt {
  return {
    id: a.id,
    object: 'delivery_attempt',
    attempt_number: a.attemptNumber,
    trigger: a.trigger,
    succeeded: a.succeeded,
    started_at: formatEventTimestamp(a.startedAt),
    duration_ms: a.durationMs,
    status_code: a.statusCode,
    response_body: a.responseBody,
    error_kind: a.errorKind,
    error_message: a.errorMessage,
  };
}

function toApiDelivery(d: DeliveryRow, attempts: AttemptRow[]): ApiDelivery {
  return {
    id: d.id,
    object: 'webhook_delivery',
    event_id: d.eventId,
    endpoint_id: d.endpointId,
    state: d.state,
    attempt_count: d.attemptCount,
    next_attempt_at: iso(d.nextAttemptAt),
    last_attempt_at: iso(d.lastAttemptAt),
    created_at: formatEventTimestamp(d.createdAt),
    attempts: attempts.map(toApiAttempt),
  };
}

const inScope = (scope: Scope) => and(eq(webhookDeliveries.platformId, scope.platformId), eq(webhookDeliveries.environment, scope.environment));

/**
 * Replay takes the delivery's lease itself so it never races a worker on the same delivery.
 * It joins what sending needs, like the claim query. Conditions: in scope, replayable state,
 * and not leased by anyone (or the lease has run out).
 */
const LEASE_FOR_REPLAY_SQL = `
WITH leased AS (
  UPDATE webhook_deliveries d
  SET lease_token = $1, due_at = $2
  WHERE d.id = $3 AND d.platform_id = $4 AND d.environment = $5
    AND d.state = ANY($6::text[])
    AND (d.lease_token IS NULL OR d.due_at <= $7)
  RETURNING d.id, d.event_id, d.endpoint_id, d.state, d.next_attempt_at, d.created_at
)
SELECT l.*, e.body, w.url, w.secret_ciphertext, w.deleted_at AS endpoint_deleted_at
FROM leased l JOIN events e ON e.id = l.event_id AND e.created_at = l.created_at JOIN webhook_endpoints w ON w.id = l.endpoint_id`;

export class DeliveryService {
  private readonly db: Db;

  constructor(
    private readonly database: Database,
    private readonly clock: Clock,
    private readonly secrets: SecretBox,
    private readonly sender: Sender,
    private readonly leaseMs: number,
    private readonly metrics?: DeliveryMetrics,
    endpointConcurrency = 10,
  ) {
    this.db = database.db;
    this.manualGate = new EndpointGate(endpointConcurrency);
  }

  async list(scope: Scope, options: { limit: number; startingAfter?: string | undefined; endpointId?: string | undefined; eventId?: string | undefined; state?: DeliveryState | undefined }): Promise<ListPage<ApiDelivery>> {
    const filters: (SQL | undefined)[] = [inScope(scope)];
    if (options.endpointId) filters.push(eq(webhookDeliveries.endpointId, options.endpointId));
    if (options.eventId) filters.push(eq(webhookDeliveries.eventId, options.eventId));
    if (options.state) filters.push(eq(webhookDeliveries.state, options.state));
    const { rows, hasMore } = await pageOf<DeliveryRow>(this.db, webhookDeliveries, and(...filters), { ...options, what: 'webhook delivery' });
    const attempts = await this.attemptsOf(rows.map((r) => r.id));
    return listPage(rows.map((r) => toApiDelivery(r, attempts.get(r.id) ?? [])), hasMore);
  }

  async get(scope: Scope, id: string): Promise<ApiDelivery> {
    const [row] = await this.db.select().from(webhookDeliveries).where(and(inScope(scope), eq(webhookDeliveries.id, id)));
    if (!row) throw notFound('webhook delivery', id);
    return toApiDelivery(row, (await this.attemptsOf([id])).get(id) ?? []);
  }

  private async attemptsOf(ids: string[]): Promise<Map<string, AttemptRow[]>> {
    const out = new Map<string, AttemptRow[]>();
    if (ids.length === 0) return out;
    const rows = await this.db.select().from(deliveryAttempts).where(inArray(deliveryAttempts.deliveryId, ids)).orderBy(asc(deliveryAttempts.attemptNumber));
    for (const r of rows) out.set(r.deliveryId, [...(out.get(r.deliveryId) ?? []), r]);
    return out;
  }

  /**
   * Manual attempts in flight per endpoint in this process, capped at the worker's per-endpoint
   * cap (`endpointConcurrency`): a burst of Replay clicks or a bulk replay can't open more
   * connections to one merchant than a worker would.
   */
  readonly manualGate: EndpointGate;

  /**
   * Manual replay (spec 3.2, "Manual replay" in 8): one new attempt, now, logged with trigger
   * `manual`. Only `failed_retrying` and `exhausted` deliveries can be replayed. See
   * schedule.ts `afterManualAttempt` for the resulting state.
   */
  async replay(scope: Scope, id: string): Promise<ApiDelivery> {
    return this.manualAttempt(scope, id, REPLAYABLE_STATES, 'delivery_not_replayable', 'Only failed_retrying or exhausted deliveries can be replayed');
  }

  /**
   * Resend of a `delivered` delivery: one more manual attempt, for a merchant whose own
   * processing failed after acknowledging. The delivery stays `delivered` whatever the answer
   * (the event was delivered once; this attempt is logged like any other).
   */
  async resend(scope: Scope, id: string): Promise<ApiDelivery> {
    return this.manualAttempt(scope, id, RESENDABLE_STATES, 'delivery_not_resendable', 'Only delivered deliveries can be resent (use replay for failed ones)');
  }

  private async manualAttempt(scope: Scope, id: string, allowed: readonly DeliveryState[], refusedCode: string, refused: string): Promise<ApiDelivery> {
    // The endpoint first (404 outside the scope), so the per-endpoint gate is passed before the
    // lease is taken: a lease never runs down while its attempt waits for a slot.
    const [target] = await this.db.select({ endpointId: webhookDeliveries.endpointId }).from(webhookDeliveries).where(and(inScope(scope), eq(webhookDeliveries.id, id)));
    if (!target) throw notFound('webhook delivery', id);
    await this.manualGate.run(target.endpointId, () => this.leaseAndAttempt(scope, id, allowed, refusedCode, refused));
    return this.get(scope, id);
  }

  private async leaseAndAttempt(scope: Scope, id: string, allowed: readonly DeliveryState[], refusedCode: string, refused: string): Promise<void> {
    const now = this.clock.now();
    const token = `replay:${randomBytes(8).toString('hex')}`;
    const [row] = await this.database.query<{ id: string; event_id: string; endpoint_id: string; state: DeliveryState; next_attempt_at: Date | null; created_at: Date; body: string; url: string; secret_ciphertext: string; endpoint_deleted_at: Date | null }>(
      LEASE_FOR_REPLAY_SQL,
      [token, new Date(now.getTime() + this.leaseMs), id, scope.platformId, scope.environment, allowed, now],
    );
    if (!row) {
      const current = await this.get(scope, id); // 404 when not in scope
      if (!allowed.includes(current.state)) throw new AppError('conflict', refusedCode, `${refused}; this one is ${current.state}.`);
      throw new AppError('conflict', 'delivery_in_flight', 'An attempt of this delivery is in flight right now; retry in a few seconds.');
    }
    // Gives the lease back untouched: parked (no due time) for a deleted endpoint, else due as before.
    const release = (dueAt: Date | null) => this.database.query(`UPDATE webhook_deliveries SET lease_token = NULL, due_at = $3 WHERE id = $1 AND lease_token = $2`, [id, token, dueAt]);
    if (row.endpoint_deleted_at) {
      await release(null);
      throw new AppError('conflict', 'endpoint_deleted', 'The endpoint of this delivery was deleted; it can no longer be replayed.');
    }
    try {
      const result = await this.sender.send({ url: row.url, body: row.body, eventId: row.event_id, secret: this.secrets.decrypt(row.secret_ciphertext, row.endpoint_id) });
      this.metrics?.observe(result.succeeded, result.errorKind, result.durationMs);
      const next = afterManualAttempt({ succeeded: result.succeeded, state: row.state, nextAttemptAt: row.next_attempt_at ? new Date(row.next_attempt_at) : null });
      await recordOutcomes(this.database, [{ deliveryId: id, token, createdAt: new Date(row.created_at), trigger: 'manual', state: next.state, nextAttemptAt: next.nextAttemptAt, result }], this.clock.now());
    } catch (err) {
      await release(row.next_attempt_at).catch(() => {});
      throw err;
    }
  }

}

import { randomBytes } from 'node:crypto';
import { and, asc, eq, gte, inArray, lt, sql, type SQL } from 'drizzle-orm';
import {
  EVENT_ID_HEADER,
  SIGNATURE_HEADER,
  WEBHOOK_ID_HEADER,
  WEBHOOK_SIGNATURE_HEADER,
  WEBHOOK_TIMESTAMP_HEADER,
  formatEventTimestamp,
} from '@payhooks/contract';
import type { Db } from '../db/client.ts';
import {
  deliveryAttempts,
  events,
  webhookDeliveries,
  webhookEndpoints,
  type AttemptRow,
  type DeliveryRow,
  type DeliveryState,
} from '../db/schema.ts';
import { listPage, pageOf, type ListPage } from '../db/pagination.ts';
import { AppError, notFound } from '../errors.ts';
import type { Database } from '../db/client.ts';
import type { Clock } from '../clock.ts';
import type { SecretBox } from '../security/encryption.ts';
import type { Scope } from '../scope.ts';
import { recordOutcomes } from './record.ts';
import { AttemptStats } from './attempt-stats.ts';
import { cancelDelivery } from './cancel.ts';
import type { AttemptLogEntry } from './attempt-log.ts';
import { queueStateOf, type WaitingFor } from './ordering.ts';
import { interruptedAttemptsSql } from './interrupted.ts';
import { runAlone, statement } from '../db/statement.ts';
import { afterManualAttempt, REPLAYABLE_STATES, RESENDABLE_STATES } from './schedule.ts';
import { EndpointGate } from './endpoint-gate.ts';
import { SharedEndpointGate, type SlotStore } from './shared-gate.ts';
import type { Logger } from 'pino';
import type { Sender } from './sender.ts';
import { sendTraced } from './attempt-span.ts';
import { USER_AGENT } from './destinations/http.ts';
import { RequestBuilder, SENDABLE_COLUMNS, sendableJoins, type SendableRow } from './attempt-request.ts';
import type { DeliveryMetrics } from './metrics.ts';
import type { AuditTrail } from '../audit/trail.ts';

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
  /** `interrupted`: its worker stopped mid-attempt; the receiver may have received it. */
  error_kind: string | null;
  error_message: string | null;
  /** The worker that held the attempt, for `interrupted` attempts; else null. */
  worker_id: string | null;
  /** The request's headers as sent; null when no request was made (or it predates their logging). */
  request_headers: RequestHeaders | null;
  /** How long it waited for the endpoint's max_requests_per_second, ms; null when the endpoint had no cap. */
  rate_limited_ms: number | null;
}

/** An HTTP request's headers; a broker message's are the same without User-Agent. */
export interface RequestHeaders {
  'Content-Type': string;
  'User-Agent'?: string;
  'Service-Event-Id': string;
  'Service-Signature': string;
  /** Only when the attempt was traced (OpenTelemetry on). */
  traceparent?: string;
  /** The Standard Webhooks headers, when the endpoint asked for them. */
  'webhook-id'?: string;
  'webhook-timestamp'?: string;
  'webhook-signature'?: string;
  /** The endpoint's custom headers, by their names. */
  [custom: string]: string | undefined;
}

export interface ApiDelivery {
  id: string;
  object: 'webhook_delivery';
  event_id: string;
  endpoint_id: string;
  state: DeliveryState;
  /** Why a `cancelled` delivery ended (`endpoint_deleted`, `manual`), else null. */
  cancel_reason: string | null;
  attempt_count: number;
  /** Null when nothing is scheduled: finished (or parked by a release before issue 22, until requeued). */
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  created_at: string;
  /**
   * Per-object ordering (delivery/ordering.ts): the delivery this one waits for, the earliest of
   * its endpoint and object still unfinished; null when it is not held back.
   */
  waiting_for: WaitingFor | null;
  attempts: ApiAttempt[];
}

const iso = (d: Date | null) => (d ? formatEventTimestamp(d) : null);

function toApiAttempt(a: AttemptRow, eventId: string): ApiAttempt {
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
    worker_id: a.workerId,
    request_headers: requestHeaders(a, eventId),
    rate_limited_ms: a.rateLimitedMs ?? null,
  };
}

/** The headers an attempt was sent with, in the order the sender writes them; null when nothing was sent. */
function requestHeaders(a: AttemptRow, eventId: string): RequestHeaders | null {
  const signature = a.requestSignature;
  if (!signature) return null;
  const headers: RequestHeaders = a.broker
    ? { 'Content-Type': 'application/json', [EVENT_ID_HEADER]: eventId, [SIGNATURE_HEADER]: signature }
    : { 'Content-Type': 'application/json', 'User-Agent': USER_AGENT, [EVENT_ID_HEADER]: eventId, [SIGNATURE_HEADER]: signature };
  if (a.traceParent) headers.traceparent = a.traceParent;
  if (a.requestWebhookSignature) {
    headers[WEBHOOK_ID_HEADER] = eventId;
    // The same t as Service-Signature's (both are made from the attempt's start).
    const t = /^t=(\d+),/.exec(signature)?.[1];
    if (t !== undefined) headers[WEBHOOK_TIMESTAMP_HEADER] = t;
    headers[WEBHOOK_SIGNATURE_HEADER] = a.requestWebhookSignature;
  }
  if (a.requestCustomHeaders) {
    for (const [name, value] of Object.entries(JSON.parse(a.requestCustomHeaders) as Record<string, unknown>))
      if (typeof value === 'string') headers[name] = value;
  }
  return headers;
}

function toApiDelivery(d: DeliveryRow, attempts: AttemptRow[], queued: Set<string>, waiting: Map<string, WaitingFor>): ApiDelivery {
  return {
    id: d.id,
    object: 'webhook_delivery',
    event_id: d.eventId,
    endpoint_id: d.endpointId,
    state: d.state,
    cancel_reason: d.cancelReason,
    attempt_count: d.attemptCount,
    // Unfinished but out of the queue: parked by a release before issue 22 (delivery/parking.ts),
    // until it is requeued. No attempt is coming, so none is shown.
    next_attempt_at: isUnfinished(d.state) && !queued.has(d.id) ? null : iso(d.nextAttemptAt),
    last_attempt_at: iso(d.lastAttemptAt),
    created_at: formatEventTimestamp(d.createdAt),
    waiting_for: waiting.get(d.id) ?? null,
    attempts: attempts.map((a) => toApiAttempt(a, d.eventId)),
  };
}

const isUnfinished = (state: DeliveryState) => state === 'pending' || state === 'failed_retrying';

const inScope = (scope: Scope) =>
  and(eq(webhookDeliveries.platformId, scope.platformId), eq(webhookDeliveries.environment, scope.environment));

/** One endpoint's deliveries, if the endpoint is in scope: a one-time check, not a filter per row. */
const endpointInScope = (scope: Scope, endpointId: string) =>
  and(
    eq(webhookDeliveries.endpointId, endpointId),
    sql`EXISTS (SELECT 1 FROM ${webhookEndpoints} w WHERE w.id = ${endpointId} AND w.platform_id = ${scope.platformId}
      AND w.environment = ${scope.environment})`,
  );

/**
 * Replay takes the delivery's lease itself so it never races a worker on the same delivery.
 * It joins what sending needs, like the claim query. Conditions: in scope, replayable state,
 * and not leased by anyone (or the lease has run out). Taking over a lease that ran out logs
 * the old holder's attempt as interrupted, as a worker's claim does (interrupted.ts).
 */
const LEASE_FOR_REPLAY = statement<
  { now: Date; lease_until: Date; id: string; platform_id: string; environment: string; states: readonly DeliveryState[]; token: string },
  ReplayRow
>(
  'lease_for_replay',
  `
WITH d AS (
  SELECT d.id, d.created_at, d.event_id, d.endpoint_id, d.platform_id, d.state, d.next_attempt_at, d.attempt_count
  FROM webhook_deliveries d
  WHERE d.id = :id AND d.platform_id = :platform_id AND d.environment = :environment AND d.state = ANY(:states::text[])
), prev AS (
  SELECT q.delivery_id, q.lease_token, q.leased_at, q.due_at
  FROM delivery_queue q JOIN d ON q.delivery_id = d.id
  -- By key as well as through \`d\`: joined on \`d\` alone, the queue's statistics could make the
  -- queue the outer side of the join, a scan of the whole queue (see record.ts).
  WHERE q.delivery_id = :id
  FOR UPDATE OF q
), free AS (
  -- Not queued (finished, or parked), queued and not leased, or its lease has run out.
  SELECT d.*, prev.lease_token AS prev_token, prev.leased_at AS prev_leased_at, prev.delivery_id IS NOT NULL AS was_queued
  FROM d LEFT JOIN prev ON true
  WHERE prev.delivery_id IS NULL OR prev.lease_token IS NULL OR prev.due_at <= :now
), leased AS (
  INSERT INTO delivery_queue (delivery_id, delivery_created_at, event_id, endpoint_id, platform_id, due_at, lease_token, leased_at)
  SELECT f.id, f.created_at, f.event_id, f.endpoint_id, f.platform_id, :lease_until, :token, :now FROM free f
  ON CONFLICT (delivery_id) DO UPDATE SET due_at = excluded.due_at, lease_token = excluded.lease_token, leased_at = excluded.leased_at
    -- Re-checked on the row as it is now: a concurrent replay or claim that leased it meanwhile keeps it.
    WHERE delivery_queue.lease_token IS NULL OR delivery_queue.due_at <= :now
  RETURNING delivery_id
), bumped AS (
  -- An interrupted automatic attempt counts toward the 8 here too (claim.ts says why); the
  -- worker's claim exhausts a delivery whose budget is spent without sending again.
  UPDATE webhook_deliveries d
  SET attempt_count = d.attempt_count + 1,
      automatic_attempts = d.automatic_attempts + CASE WHEN f.prev_token LIKE 'replay:%' THEN 0 ELSE 1 END
  FROM free f
  WHERE f.prev_token IS NOT NULL AND d.id = f.id AND d.created_at = f.created_at
  RETURNING d.id, d.created_at, d.attempt_count, f.prev_token, f.prev_leased_at
), interrupted AS (
  ${interruptedAttemptsSql('bumped', ':now')}
)
SELECT f.id, f.event_id, f.endpoint_id, f.state, f.next_attempt_at, f.was_queued,
       coalesce((SELECT b.attempt_count FROM bumped b), f.attempt_count) AS attempt_count,
       w.deleted_at IS NOT NULL AS endpoint_deleted,
       ${SENDABLE_COLUMNS}
FROM free f JOIN leased l ON l.delivery_id = f.id
${sendableJoins('f')}`,
);

/** A manual attempt's lease given back: out of the queue, or due as before. */
const DROP_REPLAY_LEASE = statement<{ id: string; token: string }, never>(
  'drop_replay_lease',
  'DELETE FROM delivery_queue WHERE delivery_id = :id AND lease_token = :token',
);
const RETURN_REPLAY_LEASE = statement<{ id: string; token: string; due_at: Date }, never>(
  'return_replay_lease',
  'UPDATE delivery_queue SET lease_token = NULL, leased_at = NULL, due_at = :due_at WHERE delivery_id = :id AND lease_token = :token',
);

/** A delivery leased for a manual attempt: what sending reads, and what gives the lease back. */
interface ReplayRow extends SendableRow {
  state: DeliveryState;
  next_attempt_at: Date | null;
  /** It was in the queue (retrying) before: giving the lease back keeps it there. */
  was_queued: boolean;
  endpoint_deleted: boolean;
}

/** What DeliveryService works with: one object, as every service takes its dependencies. */
export interface DeliveryServiceDeps {
  database: Database;
  clock: Clock;
  secrets: SecretBox;
  sender: Sender;
  audit: AuditTrail;
  /** PAYHOOKS_LEASE: how long a manual attempt holds its delivery. */
  leaseMs: number;
  /** PAYHOOKS_ENDPOINT_CONCURRENCY: manual attempts at once per endpoint (in this process). */
  endpointConcurrency?: number | undefined;
  metrics?: DeliveryMetrics | undefined;
  /** Called for each manual attempt, like the worker's attempt log line (attempt-log.ts). */
  onAttempt?: ((entry: AttemptLogEntry) => void) | undefined;
}

export class DeliveryService {
  private readonly db: Db;
  private readonly database: Database;
  private readonly clock: Clock;
  /** Manual attempts' requests, built as the worker builds them (attempt-request.ts). */
  private readonly requests: RequestBuilder;
  private readonly sender: Sender;
  private readonly leaseMs: number;
  private readonly audit: AuditTrail;
  private readonly metrics: DeliveryMetrics | undefined;
  private readonly onAttempt: ((entry: AttemptLogEntry) => void) | undefined;

  constructor(deps: DeliveryServiceDeps) {
    ({
      database: this.database,
      clock: this.clock,
      sender: this.sender,
      leaseMs: this.leaseMs,
      audit: this.audit,
      metrics: this.metrics,
      onAttempt: this.onAttempt,
    } = deps);
    this.db = deps.database.db;
    this.requests = new RequestBuilder(deps.secrets);
    this.manualGate = new EndpointGate(deps.endpointConcurrency ?? 10);
  }

  async list(
    scope: Scope,
    options: {
      limit: number;
      startingAfter?: string | undefined;
      endpointId?: string | undefined;
      eventId?: string | undefined;
      state?: DeliveryState | undefined;
      /** The event's type (`webhook_deliveries.event_type`, migration 0013). */
      type?: string | undefined;
      createdGte?: Date | undefined;
      createdLt?: Date | undefined;
      /** Deliveries of the events about this object (`data.object.id`: a payment, a session). */
      objectId?: string | undefined;
    },
  ): Promise<ListPage<ApiDelivery>> {
    // An endpoint belongs to one Platform and environment, so its deliveries are checked against
    // the scope through the endpoint, once: with the Platform's columns beside endpoint_id,
    // PostgreSQL multiplied their selectivities (the endpoint's rows estimated 20 times too few)
    // and chose to read and sort the endpoint's whole history over the ordered index scan.
    const filters: (SQL | undefined)[] = [options.endpointId ? endpointInScope(scope, options.endpointId) : inScope(scope)];
    if (options.eventId) filters.push(eq(webhookDeliveries.eventId, options.eventId));
    if (options.state) filters.push(eq(webhookDeliveries.state, options.state));
    if (options.type) filters.push(eq(webhookDeliveries.eventType, options.type));
    if (options.createdGte) filters.push(gte(webhookDeliveries.createdAt, options.createdGte));
    if (options.createdLt) filters.push(lt(webhookDeliveries.createdAt, options.createdLt));
    if (options.objectId) {
      // The object's events by the events' object index, then their deliveries by event id. An
      // array, not IN (subquery): as a join, the planner may hash every delivery of the scope.
      filters.push(
        sql`${webhookDeliveries.eventId} = ANY (ARRAY(${this.db
          .select({ id: events.id })
          .from(events)
          .where(
            and(eq(events.platformId, scope.platformId), eq(events.environment, scope.environment), eq(events.objectId, options.objectId)),
          )}))`,
      );
    }
    const { rows, hasMore } = await pageOf<DeliveryRow>(this.db, webhookDeliveries, and(...filters), {
      ...options,
      what: 'webhook delivery',
    });
    const [attempts, { queued, waiting }] = await Promise.all([this.attemptsOf(rows.map((r) => r.id)), this.queueStateOf(rows)]);
    return listPage(
      rows.map((r) => toApiDelivery(r, attempts.get(r.id) ?? [], queued, waiting)),
      hasMore,
    );
  }

  async get(scope: Scope, id: string): Promise<ApiDelivery> {
    const [row] = await this.db
      .select()
      .from(webhookDeliveries)
      .where(and(inScope(scope), eq(webhookDeliveries.id, id)));
    if (!row) throw notFound('webhook delivery', id);
    const [attempts, { queued, waiting }] = await Promise.all([this.attemptsOf([id]), this.queueStateOf([row])]);
    return toApiDelivery(row, attempts.get(id) ?? [], queued, waiting);
  }

  /** Which unfinished ones have a queue row (the others are parked), and which ordering holds back. */
  private queueStateOf(rows: DeliveryRow[]) {
    return queueStateOf(
      this.database,
      rows.filter((r) => isUnfinished(r.state)).map((r) => r.id),
    );
  }

  private async attemptsOf(ids: string[]): Promise<Map<string, AttemptRow[]>> {
    const out = new Map<string, AttemptRow[]>();
    if (ids.length === 0) return out;
    const rows = await this.db
      .select()
      .from(deliveryAttempts)
      .where(inArray(deliveryAttempts.deliveryId, ids))
      .orderBy(asc(deliveryAttempts.attemptNumber));
    for (const r of rows) out.set(r.deliveryId, [...(out.get(r.deliveryId) ?? []), r]);
    return out;
  }

  /**
   * Manual attempts in flight per endpoint, capped at the worker's per-endpoint cap
   * (`endpointConcurrency`): a burst of Replay clicks or a bulk replay can't open more
   * connections to one merchant than a worker would. In this process only until
   * `shareManualGate` counts them across every process (PostgreSQL, or Redis when configured).
   */
  manualGate: EndpointGate | SharedEndpointGate;

  /** Counts manual attempts in flight across every process sharing `store` from now on. */
  shareManualGate(store: SlotStore, logger: Logger): void {
    this.manualGate = new SharedEndpointGate(this.manualGate.limit, store, this.leaseMs, logger);
  }

  /**
   * Manual replay (spec 3.2, "Manual replay" in 8): one new attempt, now, logged with trigger
   * `manual`. Only `failed_retrying` and `exhausted` deliveries can be replayed. See
   * schedule.ts `afterManualAttempt` for the resulting state.
   */
  async replay(scope: Scope, id: string, options: { audited?: boolean } = {}): Promise<ApiDelivery> {
    return this.manualAttempt(
      scope,
      id,
      options.audited === false ? null : 'replay',
      REPLAYABLE_STATES,
      'delivery_not_replayable',
      'Only failed_retrying or exhausted deliveries can be replayed',
    );
  }

  /**
   * Resend of a `delivered` delivery: one more manual attempt, for a merchant whose own
   * processing failed after acknowledging. The delivery stays `delivered` whatever the answer
   * (the event was delivered once; this attempt is logged like any other).
   */
  async resend(scope: Scope, id: string): Promise<ApiDelivery> {
    return this.manualAttempt(
      scope,
      id,
      'resend',
      RESENDABLE_STATES,
      'delivery_not_resendable',
      'Only delivered deliveries can be resent (use replay for failed ones)',
    );
  }

  /**
   * Cancels a delivery that has not finished (delivery/cancel.ts): no attempt after this one,
   * `cancelled` with reason `manual`. Refused for a finished delivery, and while an attempt is in
   * flight (its outcome is recorded first; cancel again after it).
   */
  async cancel(scope: Scope, id: string): Promise<ApiDelivery> {
    const cancelled = await cancelDelivery(this.database, scope, id, this.clock.now());
    if (cancelled) {
      const delivery = await this.get(scope, id);
      await this.audit.record(this.db, scope, {
        action: 'webhook_delivery.cancel',
        resourceType: 'webhook_delivery',
        resourceId: id,
        changes: { endpoint_id: delivery.endpoint_id, event_id: delivery.event_id, state: delivery.state },
      });
      return delivery;
    }
    const current = await this.get(scope, id); // 404 when not in scope
    if (current.state !== 'pending' && current.state !== 'failed_retrying')
      throw new AppError(
        'conflict',
        'delivery_not_cancellable',
        `Only pending or failed_retrying deliveries can be cancelled; this one is ${current.state}.`,
      );
    throw new AppError('conflict', 'delivery_in_flight', 'An attempt of this delivery is in flight right now; retry in a few seconds.');
  }

  private async manualAttempt(
    scope: Scope,
    id: string,
    /** The audit entry's verb; null: the caller records one entry for many (bulk replay). */
    verb: 'replay' | 'resend' | null,
    allowed: readonly DeliveryState[],
    refusedCode: string,
    refused: string,
  ): Promise<ApiDelivery> {
    // The endpoint first (404 outside the scope), so the per-endpoint gate is passed before the
    // lease is taken: a lease never runs down while its attempt waits for a slot.
    const [target] = await this.db
      .select({ endpointId: webhookDeliveries.endpointId })
      .from(webhookDeliveries)
      .where(and(inScope(scope), eq(webhookDeliveries.id, id)));
    if (!target) throw notFound('webhook delivery', id);
    await this.manualGate.run(target.endpointId, () => this.leaseAndAttempt(scope, id, allowed, refusedCode, refused));
    const delivery = await this.get(scope, id);
    if (verb === null) return delivery;
    // Recorded once the attempt is: the entry names its outcome. (The attempt's own row, with
    // trigger `manual`, is written by the record statement just before.)
    const attempt = delivery.attempts.at(-1);
    await this.audit.record(this.db, scope, {
      action: `webhook_delivery.${verb}`,
      resourceType: 'webhook_delivery',
      resourceId: id,
      changes: {
        endpoint_id: delivery.endpoint_id,
        event_id: delivery.event_id,
        state: delivery.state,
        attempt: attempt
          ? {
              attempt_number: attempt.attempt_number,
              succeeded: attempt.succeeded,
              status_code: attempt.status_code,
              error_kind: attempt.error_kind,
            }
          : null,
      },
    });
    return delivery;
  }

  private async leaseAndAttempt(
    scope: Scope,
    id: string,
    allowed: readonly DeliveryState[],
    refusedCode: string,
    refused: string,
  ): Promise<void> {
    const now = this.clock.now();
    const token = `replay:${randomBytes(8).toString('hex')}`;
    const [row] = await runAlone(this.database, LEASE_FOR_REPLAY, {
      now,
      lease_until: new Date(now.getTime() + this.leaseMs),
      id,
      platform_id: scope.platformId,
      environment: scope.environment,
      states: allowed,
      token,
    });
    if (!row) {
      const current = await this.get(scope, id); // 404 when not in scope
      if (!allowed.includes(current.state)) throw new AppError('conflict', refusedCode, `${refused}; this one is ${current.state}.`);
      throw new AppError('conflict', 'delivery_in_flight', 'An attempt of this delivery is in flight right now; retry in a few seconds.');
    }
    // Gives the lease back untouched: out of the queue for a deleted endpoint or a delivery that
    // was not queued (finished, or parked), else due as before.
    const release = (dueAt: Date | null) =>
      dueAt === null || !row.was_queued
        ? runAlone(this.database, DROP_REPLAY_LEASE, { id, token })
        : runAlone(this.database, RETURN_REPLAY_LEASE, { id, token, due_at: dueAt });
    if (row.endpoint_deleted) {
      await release(null);
      throw new AppError('conflict', 'endpoint_deleted', 'The endpoint of this delivery was deleted; it can no longer be replayed.');
    }
    try {
      const result = await sendTraced(this.sender, row, row.attempt_count + 1, this.requests.build(row), false);
      this.metrics?.observe(result.succeeded, result.errorKind, result.durationMs);
      const next = afterManualAttempt({
        succeeded: result.succeeded,
        state: row.state,
        nextAttemptAt: row.next_attempt_at,
      });
      this.onAttempt?.({
        eventType: row.event_type,
        eventId: row.event_id,
        deliveryId: id,
        endpointId: row.endpoint_id,
        url: row.url,
        attempt: row.attempt_count + 1,
        result,
        nextAttemptAt: next.nextAttemptAt,
        trigger: 'manual',
      });
      const stats = new AttemptStats();
      await recordOutcomes(
        this.database,
        [
          {
            deliveryId: id,
            endpointId: row.endpoint_id,
            token,
            trigger: 'manual',
            state: next.state,
            nextAttemptAt: next.nextAttemptAt,
            result,
          },
        ],
        this.clock.now(),
        stats,
      );
      // A manual attempt counts in the endpoint's stats at once. Should the database fail
      // between the two statements, only this attempt's count is lost: the log holds it.
      await stats.flush(this.database).catch(() => {});
    } catch (err) {
      await release(row.next_attempt_at).catch(() => {});
      throw err;
    }
  }
}

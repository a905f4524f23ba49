import { and, asc, eq, type SQL } from 'drizzle-orm';
import type { Clock } from '../clock.ts';
import type { Db, Queryable, Tx } from '../db/client.ts';
import { checkoutSessions, merchants, payments, type PaymentRow } from '../db/schema.ts';
import { listPage, pageOf, type ListPage } from '../db/pagination.ts';
import { AppError, notFound } from '../errors.ts';
import { publishEvent, type PublishResult } from '../events/publish.ts';
import { newId } from '../ids.ts';
import type { Scope } from '../scope.ts';
import { serialiseMetadata, toPayment, validateAmount, validateAssetCode, validateDescription, type Payment } from './objects.ts';
import { allowedNext, canTransition, paymentEventType, type PaymentStatus } from './state-machine.ts';

export interface CreatePaymentInput {
  amount: string;
  asset_code: string;
  metadata?: Record<string, string> | undefined;
  /** What the customer pays for (up to 500 characters). */
  description?: string | null | undefined;
  /** Sandbox only: deliver every event of this payment twice (spec 6.2 rule 5). */
  double_delivery?: boolean | undefined;
}

export interface TransitionOptions {
  /** Deliver this transition's event twice to each endpoint (sandbox double delivery). */
  doubleDelivery?: boolean | undefined;
  /**
   * A portal test payment: its event goes to this one endpoint only (null: recorded, delivered
   * to none) instead of the subscribed endpoints.
   */
  onlyEndpointId?: string | null | undefined;
  /** Set when the payment's checkout session drives the change (expiring with the session). */
  bySession?: boolean | undefined;
  /** Told the event the transition published (the portal's test payment answers with it). */
  onPublished?: ((result: PublishResult) => void) | undefined;
}

/**
 * Runs inside the transition's transaction, after the row changed and its event was published;
 * throwing rolls the whole transition back. Checkout sessions use it to follow their payment.
 */
export type TransitionListener = (tx: Tx, payment: PaymentRow, options: TransitionOptions) => Promise<void>;

/** Which payment a transition is for: within a key's scope, or (operator rails) any. */
export type PaymentTarget = { id: string; scope?: Scope | undefined };

const PAYMENT_ID = /^pay_[0-9A-Za-z]{1,64}$/;

/** Ids the service could not have made are answered like unknown ids: 404, no query. */
export function paymentId(id: string): string {
  if (!PAYMENT_ID.test(id)) throw notFound('payment', id);
  return id;
}

const inScope = (scope: Scope) => and(eq(payments.platformId, scope.platformId), eq(payments.environment, scope.environment));

export function sandboxOnly(scope: Scope, what: string): void {
  if (scope.environment !== 'sandbox') {
    throw new AppError(
      'forbidden',
      'sandbox_only',
      `${what} is available to sandbox keys only (sk_test_…); live payments move only through the payment rails.`,
    );
  }
}

/** The merchant of a Platform (today every Platform has exactly one: its first). */
export async function merchantOf(db: Queryable, platformId: string): Promise<string> {
  const [m] = await db
    .select({ id: merchants.id })
    .from(merchants)
    .where(eq(merchants.platformId, platformId))
    .orderBy(asc(merchants.createdAt), asc(merchants.id))
    .limit(1);
  if (!m) throw new AppError('invalid_state', 'merchant_missing', 'This Platform has no merchant; ask the operator to create one.');
  return m.id;
}

/**
 * Payments and their state machine. Every change publishes its event with `publishEvent` in
 * the caller's transaction, so the row and its event commit (or roll back) together.
 */
export class PaymentService {
  private readonly listeners: TransitionListener[] = [];

  private readonly db: Db;
  private readonly clock: Clock;

  constructor(deps: { db: Db; clock: Clock }) {
    this.db = deps.db;
    this.clock = deps.clock;
  }

  onTransition(listener: TransitionListener): void {
    this.listeners.push(listener);
  }

  /** Creates a payment in `created` and publishes `payment.created`. */
  async create(
    scope: Scope,
    input: CreatePaymentInput,
    tx: Tx,
    link: { id?: string; checkoutSessionId?: string; onlyEndpointId?: string | null } = {},
  ): Promise<PaymentRow> {
    const amount = validateAmount(input.amount);
    const assetCode = validateAssetCode(input.asset_code);
    const metadata = serialiseMetadata(input.metadata);
    const description = validateDescription(input.description);
    if (input.double_delivery) sandboxOnly(scope, 'double_delivery');
    const now = this.clock.now();
    const [row] = await tx
      .insert(payments)
      .values({
        id: link.id ?? newId('payment'),
        platformId: scope.platformId,
        environment: scope.environment,
        merchantId: await merchantOf(tx, scope.platformId),
        status: 'created',
        amount,
        assetCode,
        metadata,
        description,
        checkoutSessionId: link.checkoutSessionId ?? null,
        doubleDelivery: input.double_delivery === true,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    await this.publish(tx, row!, now, { onlyEndpointId: link.onlyEndpointId });
    return row!;
  }

  async get(scope: Scope, id: string): Promise<Payment> {
    const [row] = await this.db
      .select()
      .from(payments)
      .where(and(inScope(scope), eq(payments.id, paymentId(id))));
    if (!row) throw notFound('payment', id);
    return toPayment(row);
  }

  /** Newest first, optionally only one status; keyset pages like the other lists. */
  async list(
    scope: Scope,
    options: { limit: number; startingAfter?: string | undefined; status?: PaymentStatus | undefined },
  ): Promise<ListPage<Payment>> {
    const filters: (SQL | undefined)[] = [inScope(scope)];
    if (options.status) filters.push(eq(payments.status, options.status));
    const { rows, hasMore } = await pageOf<PaymentRow>(this.db, payments, and(...filters), { ...options, what: 'payment' });
    return listPage(rows.map(toPayment), hasMore);
  }

  /** Locks the payment row for the rest of `tx` (concurrent transitions queue behind it). */
  async lock(tx: Tx, target: PaymentTarget): Promise<PaymentRow> {
    const where = target.scope ? and(inScope(target.scope), eq(payments.id, paymentId(target.id))) : eq(payments.id, paymentId(target.id));
    const [row] = await tx.select().from(payments).where(where).for('update');
    if (!row) throw notFound('payment', target.id);
    return row;
  }

  /**
   * Moves a payment to `to` and publishes `payment.<to>`, in `tx`. The row is locked first
   * (SELECT … FOR UPDATE), so of two concurrent transitions the second sees the first's result
   * and, if the move is no longer allowed, gets a 409 listing what is.
   */
  async transition(tx: Tx, target: PaymentTarget, to: PaymentStatus, options: TransitionOptions = {}): Promise<PaymentRow> {
    // Lock order is always session, then payment (the hosted page and expiry lock the session
    // first), so a transition racing a checkout can't deadlock with it.
    const [linked] = await tx
      .select({ sessionId: payments.checkoutSessionId })
      .from(payments)
      .where(eq(payments.id, paymentId(target.id)));
    if (linked?.sessionId)
      await tx.select({ id: checkoutSessions.id }).from(checkoutSessions).where(eq(checkoutSessions.id, linked.sessionId)).for('update');
    return this.transitionLocked(tx, await this.lock(tx, target), to, options);
  }

  /** `transition` for a row the caller already locked in `tx`. */
  async transitionLocked(tx: Tx, current: PaymentRow, to: PaymentStatus, options: TransitionOptions = {}): Promise<PaymentRow> {
    if (!canTransition(current.status, to)) throw illegalTransition(current, to);
    const now = this.clock.now();
    const [row] = await tx.update(payments).set({ status: to, updatedAt: now }).where(eq(payments.id, current.id)).returning();
    await this.publish(tx, row!, now, options);
    for (const listener of this.listeners) await listener(tx, row!, options);
    return row!;
  }

  /** Publishes the event of the payment's current status, with the full Payment as data.object. */
  private async publish(tx: Tx, row: PaymentRow, now: Date, options: TransitionOptions): Promise<void> {
    const result = await publishEvent(
      tx,
      {
        type: paymentEventType(row.status),
        merchantId: row.merchantId,
        environment: row.environment,
        object: toPayment(row) as unknown as Record<string, unknown>,
        copies: options.doubleDelivery === true || row.doubleDelivery ? 2 : 1,
        onlyEndpointId: options.onlyEndpointId,
      },
      now,
    );
    options.onPublished?.(result);
  }
}

export function illegalTransition(current: Pick<PaymentRow, 'id' | 'status'>, to: string): AppError {
  const next = allowedNext(current.status);
  const allowed =
    next.length === 0 ? `'${current.status}' is final: no transition is allowed` : `allowed next statuses: ${next.join(', ')}`;
  return new AppError(
    'invalid_state',
    'payment_invalid_transition',
    `Payment ${current.id} is '${current.status}' and can't move to '${to}'; ${allowed}.`,
    { param: 'status' },
  );
}

import { and, asc, eq, lte, sql } from 'drizzle-orm';
import type { Clock } from '../clock.ts';
import type { Db, Tx } from '../db/client.ts';
import { checkoutSessions, merchants, payments, platforms, type CheckoutSessionRow, type PaymentRow } from '../db/schema.ts';
import { listPage, pageOf, type ListPage } from '../db/pagination.ts';
import { AppError, notFound } from '../errors.ts';
import { publishEvent } from '../events/publish.ts';
import { newId } from '../ids.ts';
import type { Scope } from '../scope.ts';
import { toCheckoutSession, type CheckoutSession } from './objects.ts';
import type { CreatePaymentInput, PaymentService } from './service.ts';
import { canTransition, isTerminal } from './state-machine.ts';

export interface CreateSessionInput extends CreatePaymentInput {
  success_url: string;
  cancel_url?: string | null | undefined;
  /** Seconds until the session expires: 60 to 86,400, default 3,600 (Stripe's bounds are 30 min to 24 h). */
  expires_in?: number | undefined;
}

export const EXPIRES_IN = { min: 60, max: 86_400, default: 3_600 } as const;

const SESSION_ID = /^cs_[0-9A-Za-z]{1,64}$/;

export function sessionId(id: string): string {
  if (!SESSION_ID.test(id)) throw notFound('checkout session', id);
  return id;
}

const inScope = (scope: Scope) =>
  and(eq(checkoutSessions.platformId, scope.platformId), eq(checkoutSessions.environment, scope.environment));

/** The longest return URL accepted (browsers and servers handle far longer; this keeps pages and headers small). */
export const RETURN_URL_MAX = 2048;

/** A host name of letters, digits, hyphens and dots (after IDNA), or an IP literal. */
const HOST = /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*\.?$|^\[[0-9a-f:.]+\]$/;

/**
 * Where the customer is sent back to: an absolute http(s) URL without credentials; https for
 * live sessions unless plain http is allowed (development). Strict, because it ends up in a
 * Location header and (its origin) in the page's Content-Security-Policy: no control characters
 * or spaces anywhere (the WHATWG parser would silently drop a newline), a real host name, at most
 * 2,048 characters. Stored and echoed as sent; headers and links are built from the parsed URL.
 */
export function validateReturnUrl(raw: string, param: string, options: { requireHttps: boolean }): string {
  const bad = (message: string) => new AppError('invalid_request', 'url_invalid', `Invalid '${param}': ${message}`, { param });
  if (raw.length > RETURN_URL_MAX) throw bad(`at most ${RETURN_URL_MAX} characters.`);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u0020\u007f-\u009f]/.test(raw)) throw bad('control characters and spaces are not allowed (percent-encode a space as %20).');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw bad('send an absolute URL such as https://shop.example/thanks.');
  }
  if (!HOST.test(url.hostname)) throw bad(`'${url.hostname.slice(0, 100)}' is not a host name: use letters, digits, hyphens and dots.`);
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new AppError('invalid_request', 'url_invalid', `Invalid '${param}': only http and https URLs are allowed.`, { param });
  if (options.requireHttps && url.protocol !== 'https:')
    throw new AppError('invalid_request', 'url_insecure', `Invalid '${param}': live sessions return customers to https URLs only.`, {
      param,
    });
  if (url.username || url.password)
    throw new AppError('invalid_request', 'url_invalid', `Invalid '${param}': URLs with credentials are not allowed.`, { param });
  return raw;
}

/** `success_url` + `checkout_session_id=cs_…`, with `&` when it already has a query. */
export function successRedirect(successUrl: string, id: string): string {
  const url = new URL(successUrl);
  url.searchParams.append('checkout_session_id', id);
  return url.toString();
}

/**
 * Checkout sessions: a hosted page that collects one Payment. The session and its Payment are
 * created together (`payment.created`); paying completes the session and succeeds the payment
 * in one transaction; an open session past `expires_at` expires with its payment.
 */
export class CheckoutService {
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly payments: PaymentService;
  private readonly options: { publicUrl: () => string; allowHttpLive: boolean };

  constructor(deps: { db: Db; clock: Clock; payments: PaymentService; publicUrl: () => string; allowHttpLive: boolean }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.payments = deps.payments;
    this.options = { publicUrl: deps.publicUrl, allowHttpLive: deps.allowHttpLive };
  }

  /**
   * A session follows its payment, whoever moves it (hosted page, sandbox, or the rails): the
   * payment succeeding completes the open session (`checkout_session.completed`), as Stripe's
   * session completes when its PaymentIntent succeeds. Cancelling or expiring the payment of an
   * open session on its own is refused, as Stripe does: expire the session instead.
   */
  async followPayment(tx: Tx, payment: PaymentRow, options: { bySession?: boolean | undefined }): Promise<void> {
    if (!payment.checkoutSessionId || options.bySession) return;
    if (payment.status !== 'succeeded' && payment.status !== 'cancelled' && payment.status !== 'expired') return;
    const [session] = await tx.select().from(checkoutSessions).where(eq(checkoutSessions.id, payment.checkoutSessionId)).for('update');
    if (session?.status !== 'open') return;
    if (payment.status === 'succeeded') {
      await this.finish(tx, session, 'complete');
      return;
    }
    throw new AppError(
      'invalid_state',
      'checkout_session_open',
      `Payment ${payment.id} belongs to the open checkout session ${session.id}; expire the session instead (POST /api/v1/checkout_sessions/${session.id}/expire), which expires its payment too.`,
    );
  }

  async create(scope: Scope, input: CreateSessionInput, tx: Tx): Promise<CheckoutSession> {
    const requireHttps = scope.environment === 'live' && !this.options.allowHttpLive;
    const successUrl = validateReturnUrl(input.success_url, 'success_url', { requireHttps });
    const cancelUrl = input.cancel_url == null ? null : validateReturnUrl(input.cancel_url, 'cancel_url', { requireHttps });
    const expiresIn = input.expires_in ?? EXPIRES_IN.default;
    if (!Number.isInteger(expiresIn) || expiresIn < EXPIRES_IN.min || expiresIn > EXPIRES_IN.max) {
      throw new AppError(
        'invalid_request',
        'parameter_invalid',
        `Invalid 'expires_in': a whole number of seconds from ${EXPIRES_IN.min} to ${EXPIRES_IN.max}.`,
        { param: 'expires_in' },
      );
    }
    const id = newId('checkoutSession');
    const payment = await this.payments.create(scope, input, tx, { checkoutSessionId: id });
    const now = this.clock.now();
    const [row] = await tx
      .insert(checkoutSessions)
      .values({
        id,
        platformId: scope.platformId,
        environment: scope.environment,
        merchantId: payment.merchantId,
        status: 'open',
        amount: payment.amount,
        assetCode: payment.assetCode,
        metadata: payment.metadata,
        description: payment.description,
        paymentId: payment.id,
        url: `${this.options.publicUrl().replace(/\/+$/, '')}/checkout/${id}`,
        successUrl,
        cancelUrl,
        doubleDelivery: payment.doubleDelivery,
        expiresAt: new Date(now.getTime() + expiresIn * 1000),
        completedAt: null,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    return toCheckoutSession(row!);
  }

  async get(scope: Scope, id: string): Promise<CheckoutSession> {
    const [row] = await this.db
      .select()
      .from(checkoutSessions)
      .where(and(inScope(scope), eq(checkoutSessions.id, sessionId(id))));
    if (!row) throw notFound('checkout session', id);
    return toCheckoutSession(row);
  }

  async list(scope: Scope, options: { limit: number; startingAfter?: string | undefined }): Promise<ListPage<CheckoutSession>> {
    const { rows, hasMore } = await pageOf<CheckoutSessionRow>(this.db, checkoutSessions, inScope(scope), {
      ...options,
      what: 'checkout session',
    });
    return listPage(rows.map(toCheckoutSession), hasMore);
  }

  /** The merchant's `POST /:id/expire`: only an open session can be expired (Stripe's rule). */
  async expire(scope: Scope, id: string, tx: Tx): Promise<CheckoutSession> {
    const [row] = await tx
      .select()
      .from(checkoutSessions)
      .where(and(inScope(scope), eq(checkoutSessions.id, sessionId(id))))
      .for('update');
    if (!row) throw notFound('checkout session', id);
    if (row.status !== 'open') throw notOpen(row);
    return toCheckoutSession(await this.expireLocked(tx, row));
  }

  /**
   * Expires a session the caller locked, and its payment while that can still expire
   * (`created` or `requires_action`: no money moved). A payment under review or processing
   * carries on; a failed one stays failed. Publishes `payment.expired` then `checkout_session.expired`.
   */
  async expireLocked(tx: Tx, session: CheckoutSessionRow): Promise<CheckoutSessionRow> {
    const payment = await this.payments.lock(tx, { id: session.paymentId });
    if (canTransition(payment.status, 'expired')) await this.payments.transitionLocked(tx, payment, 'expired', { bySession: true });
    return this.finish(tx, session, 'expired');
  }

  /** Open sessions past `expires_at`, locked for this transaction; rows another transaction holds are skipped. */
  async lockDue(tx: Tx, limit: number): Promise<CheckoutSessionRow[]> {
    return tx
      .select()
      .from(checkoutSessions)
      .where(and(eq(checkoutSessions.status, 'open'), lte(checkoutSessions.expiresAt, this.clock.now())))
      .orderBy(asc(checkoutSessions.expiresAt))
      .limit(limit)
      .for('update', { skipLocked: true });
  }

  // ---- the hosted page (no API key: the unguessable cs_ id in the URL is the customer's access) ----

  /** The session, its payment and the merchant's name, for rendering the page. */
  /** The session, its payment, and the shop's name for the page (its display name, else the Platform's name). */
  async forPage(id: string): Promise<{ session: CheckoutSessionRow; payment: PaymentRow; shopName: string } | null> {
    if (!SESSION_ID.test(id)) return null;
    const [row] = await this.db
      .select({
        session: checkoutSessions,
        payment: payments,
        shopName: sql<string>`coalesce(${merchants.displayName}, ${platforms.name})`,
      })
      .from(checkoutSessions)
      .innerJoin(payments, eq(payments.id, checkoutSessions.paymentId))
      .innerJoin(merchants, eq(merchants.id, checkoutSessions.merchantId))
      .innerJoin(platforms, eq(platforms.id, merchants.platformId))
      .where(eq(checkoutSessions.id, id));
    return row ?? null;
  }

  /**
   * The customer pays (sandbox): in one transaction the payment goes through `processing` to
   * `succeeded`, which completes the session (followPayment). Paying a complete session again
   * is a no-op.
   */
  async pay(id: string, tx: Tx): Promise<CheckoutSessionRow> {
    const session = await this.lockOpenForCustomer(id, tx);
    if (session.status === 'complete') return session;
    let payment = await this.payments.lock(tx, { id: session.paymentId });
    if (payment.status !== 'processing') payment = await this.payments.transitionLocked(tx, payment, 'processing');
    await this.payments.transitionLocked(tx, payment, 'succeeded');
    const [done] = await tx.select().from(checkoutSessions).where(eq(checkoutSessions.id, session.id));
    return done!;
  }

  /**
   * The customer's payment fails (sandbox): through `processing` to `failed`. The session stays
   * open until it expires (a failed payment is final, so it can't be paid again).
   */
  async fail(id: string, tx: Tx): Promise<CheckoutSessionRow> {
    const session = await this.lockOpenForCustomer(id, tx);
    if (session.status === 'complete') throw notOpen(session);
    let payment = await this.payments.lock(tx, { id: session.paymentId });
    if (isTerminal(payment.status)) return session;
    if (payment.status !== 'processing') payment = await this.payments.transitionLocked(tx, payment, 'processing');
    await this.payments.transitionLocked(tx, payment, 'failed');
    return session;
  }

  private async lockOpenForCustomer(id: string, tx: Tx): Promise<CheckoutSessionRow> {
    const [session] = SESSION_ID.test(id) ? await tx.select().from(checkoutSessions).where(eq(checkoutSessions.id, id)).for('update') : [];
    if (!session) throw notFound('checkout session', id);
    if (session.environment !== 'sandbox') {
      throw new AppError(
        'forbidden',
        'sandbox_only',
        'Live checkout sessions are paid through the payment rails; the Pay and Fail buttons are sandbox only.',
      );
    }
    // Past expires_at the session is over even if the worker has not expired it yet.
    if (session.status === 'expired' || (session.status === 'open' && session.expiresAt.getTime() <= this.clock.now().getTime()))
      throw notOpen({ ...session, status: 'expired' });
    return session;
  }

  private async finish(tx: Tx, session: CheckoutSessionRow, status: 'complete' | 'expired'): Promise<CheckoutSessionRow> {
    const now = this.clock.now();
    const [row] = await tx
      .update(checkoutSessions)
      .set({ status, updatedAt: now, ...(status === 'complete' ? { completedAt: now } : {}) })
      .where(and(eq(checkoutSessions.id, session.id), eq(checkoutSessions.status, 'open')))
      .returning();
    if (!row) throw notOpen(session);
    await publishEvent(
      tx,
      {
        type: status === 'complete' ? 'checkout_session.completed' : 'checkout_session.expired',
        merchantId: row.merchantId,
        environment: row.environment,
        object: toCheckoutSession(row) as unknown as Record<string, unknown>,
        copies: row.doubleDelivery ? 2 : 1,
      },
      now,
    );
    return row;
  }
}

function notOpen(session: Pick<CheckoutSessionRow, 'id' | 'status'>): AppError {
  return new AppError(
    'invalid_state',
    'checkout_session_not_open',
    `Checkout session ${session.id} is '${session.status}'; only an open session can be paid or expired.`,
  );
}

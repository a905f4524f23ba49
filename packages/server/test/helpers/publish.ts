import type { ServiceContext } from '../../src/context.ts';
import { publishEvent, type PublishResult } from '../../src/events/publish.ts';
import type { Environment } from '../../src/db/schema.ts';

let seq = 0;

/** A Payment resource as spec 2.2 shows it. */
export function payment(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  seq++;
  return {
    id: `pay_test${seq}`,
    object: 'payment',
    status: 'succeeded',
    amount: '10.00',
    asset_code: 'USDC.ETH',
    metadata: { account: `acct_${seq}`, order: `ord_${seq}` },
    ...overrides,
  };
}

/** A checkout session object as docs/payments.md documents it (status `complete` by default). */
export function checkoutSession(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  seq++;
  return {
    id: `cs_test${seq}`,
    object: 'checkout_session',
    status: 'complete',
    amount: '10.00',
    asset_code: 'USDC.ETH',
    metadata: { order: `ord_${seq}` },
    payment: `pay_test${seq}`,
    url: `http://127.0.0.1:8080/checkout/cs_test${seq}`,
    success_url: 'https://shop.example/success',
    cancel_url: null,
    expires_at: '2026-01-01T01:00:00Z',
    completed_at: '2026-01-01T00:10:00Z',
    merchant_id: 'mch_test',
    environment: 'sandbox',
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-01-01T00:10:00Z',
    ...overrides,
  };
}

/** Publishes in its own transaction, as the payment core does when a payment changes. */
export function publish(
  ctx: ServiceContext,
  merchantId: string,
  options: { type?: string; environment?: Environment; object?: Record<string, unknown>; idempotencyKey?: string } = {},
): Promise<PublishResult> {
  return ctx.database.db.transaction((tx) =>
    publishEvent(
      tx,
      {
        type: options.type ?? 'payment.succeeded',
        merchantId,
        environment: options.environment ?? 'sandbox',
        object: options.object ?? payment(),
        idempotencyKey: options.idempotencyKey,
      },
      ctx.clock.now(),
    ),
  );
}

import type { ServiceContext } from '../../src/context.ts';
import { publishEvent, type PublishResult } from '../../src/events/publish.ts';
import type { Environment } from '../../src/db/schema.ts';

let seq = 0;

/** A Payment resource as spec 2.2 shows it. */
export function payment(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  seq++;
  return { id: `pay_test${seq}`, object: 'payment', status: 'succeeded', amount: '10.00', asset_code: 'USDC.ETH', metadata: { account: `acct_${seq}`, order: `ord_${seq}` }, ...overrides };
}

/** Publishes in its own transaction, as the payment core does when a payment changes. */
export function publish(ctx: ServiceContext, merchantId: string, options: { type?: string; environment?: Environment; object?: Record<string, unknown>; idempotencyKey?: string } = {}): Promise<PublishResult> {
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

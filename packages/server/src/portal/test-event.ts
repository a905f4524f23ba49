import { asc, eq } from 'drizzle-orm';
import type { WebhookEvent } from '@payhooks/contract';
import type { ServiceContext } from '../context.ts';
import { merchants } from '../db/schema.ts';
import { AppError } from '../errors.ts';
import { publishEvent } from '../events/publish.ts';
import { randomBase62 } from '../ids.ts';
import type { Scope } from '../tenancy/scope.ts';

/**
 * "Send test event" (sandbox endpoints only): publishes a real `payment.succeeded` event,
 * through the outbox like any other, to that one endpoint. Its Payment is a sample: id
 * `pay_test_…` and `metadata: {"test": "true"}` so a receiver can tell it apart. It goes to
 * the endpoint even when it subscribes to other types (Stripe's test webhooks do the same); it is signed,
 * retried and logged exactly like a real one, which is the point of testing.
 */
export async function sendTestEvent(
  ctx: ServiceContext,
  scope: Scope,
  endpointId: string,
): Promise<{ event: WebhookEvent; delivery_id: string | null }> {
  const endpoint = await ctx.endpoints.getRow(scope, endpointId); // 404 outside the scope
  if (scope.environment !== 'sandbox') {
    throw new AppError(
      'invalid_request',
      'test_events_sandbox_only',
      'Test events can be sent to sandbox endpoints only; switch to sandbox.',
    );
  }
  if (endpoint.status !== 'enabled') {
    throw new AppError('conflict', 'endpoint_disabled', 'This endpoint is disabled; enable it to send a test event.');
  }
  const [merchant] = await ctx.database.db
    .select({ id: merchants.id })
    .from(merchants)
    .where(eq(merchants.platformId, scope.platformId))
    .orderBy(asc(merchants.createdAt))
    .limit(1);
  if (!merchant) throw new AppError('conflict', 'no_merchant', 'This Platform has no merchant to send a test event for.');
  const type = 'payment.succeeded';
  const object = {
    id: `pay_test_${randomBase62(16)}`,
    object: 'payment',
    status: 'succeeded',
    amount: '10.00',
    asset_code: 'USDC.ETH',
    metadata: { test: 'true' },
  };
  const published = await ctx.database.db.transaction((tx) =>
    publishEvent(tx, { type, merchantId: merchant.id, environment: 'sandbox', object, onlyEndpointId: endpointId }, ctx.clock.now()),
  );
  const deliveries = await ctx.deliveries.list(scope, { limit: 1, eventId: published.event.id });
  return { event: published.event, delivery_id: deliveries.data[0]?.id ?? null };
}

import type { WebhookEvent } from '@payhooks/contract';
import type { ServiceContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import { toPayment, type Payment } from '../../payments/objects.ts';
import { EXAMPLE_PATHS } from '../../payments/state-machine.ts';
import type { Scope } from '../../scope.ts';

/**
 * "Send test event" (sandbox endpoints only): a real sandbox payment of 10.00 USDC.ETH with
 * `metadata: {"test": "true"}`, created and moved to `succeeded` in one transaction, so a
 * receiver that confirms by a server-side `GET /api/v1/payments/:id` (spec 1) finds it. Its
 * `payment.succeeded` event goes, through the outbox like any other, to the one endpoint the test
 * was sent from, even when it subscribes to other types (Stripe's test webhooks do the same);
 * the payment's earlier events (`payment.created`, `payment.processing`) are recorded and
 * delivered to none, so a test sends one delivery. It is signed, retried and logged exactly like a
 * real one, which is the point of testing.
 */
/** Types "Send example" sends: the payment events, each from a sandbox payment moved to its status. */
export const SENDABLE_EXAMPLE_TYPES = Object.keys(EXAMPLE_PATHS);

export async function sendTestEvent(
  ctx: ServiceContext,
  scope: Scope,
  endpointId: string,
  type = 'payment.succeeded',
): Promise<{ event: WebhookEvent; delivery_id: string | null; payment: Payment }> {
  const path = EXAMPLE_PATHS[type];
  if (!path)
    throw new AppError(
      'invalid_request',
      'example_type_unsupported',
      `An example can be sent of the payment events (${SENDABLE_EXAMPLE_TYPES.join(', ')}); a ${type} event comes from its own change (see the event types page).`,
      { param: 'type' },
    );
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
  let event: WebhookEvent | undefined;
  const row = await ctx.database.db.transaction(async (tx) => {
    const created = await ctx.payments.create(scope, { amount: '10.00', asset_code: 'USDC.ETH', metadata: { test: 'true' } }, tx, {
      onlyEndpointId: path.length === 0 ? endpointId : null,
    });
    let succeeded = created;
    for (const [i, status] of path.entries()) {
      const last = i === path.length - 1;
      succeeded = await ctx.payments.transitionLocked(tx, succeeded, status, {
        onlyEndpointId: last ? endpointId : null,
        onPublished: last ? (published) => (event = published.event) : undefined,
      });
    }

    await ctx.audit.record(tx, scope, {
      action: 'webhook_endpoint.test_event',
      resourceType: 'webhook_endpoint',
      resourceId: endpointId,
      changes: { event_id: event?.id ?? null, payment_id: succeeded.id },
    });
    return succeeded;
  });
  // payment.created is published by create itself: found by the payment it is about.
  event ??= (await ctx.events.list(scope, { limit: 1, objectId: row.id, type: 'payment.created' })).data[0];
  const deliveries = await ctx.deliveries.list(scope, { limit: 1, eventId: event!.id });
  return { event: event!, delivery_id: deliveries.data[0]?.id ?? null, payment: toPayment(row) };
}

import { randomBytes } from 'node:crypto';
import { signPayload, type PaymentEvent, type WebhookEvent } from '@payhooks/contract';

export const SECRET = `whsec_test_${randomBytes(24).toString('hex')}`;
export const OTHER_SECRET = `whsec_other_${randomBytes(24).toString('hex')}`;

let seq = 0;
export function uniqueId(prefix: string): string {
  return `${prefix}${Date.now().toString(36)}${(seq++).toString(36)}${randomBytes(6).toString('hex')}`;
}

export function paymentEvent(overrides: Partial<WebhookEvent> = {}, payment: Record<string, unknown> = {}): PaymentEvent {
  return {
    id: uniqueId('evt_'),
    object: 'event',
    type: 'payment.succeeded',
    api_version: 'v1',
    environment: 'test',
    merchant_id: 'mch_test',
    created_at: '2025-01-01T00:00:00Z',
    data: {
      object: {
        id: uniqueId('pay_'),
        object: 'payment',
        status: 'succeeded',
        amount: '10.00',
        asset_code: 'USDC.ETH',
        metadata: { account: 'acct_1', note: 'café ✓' },
        ...payment,
      },
    },
    ...(overrides as object),
  } as PaymentEvent;
}

export const nowSeconds = () => Math.floor(Date.now() / 1000);

/** A delivery exactly as the sender makes it: the body serialised once, signed with contract's signPayload. */
export function delivery(
  event: WebhookEvent,
  options: { secret?: string; timestamp?: number; body?: string } = {},
): { body: string; headers: Record<string, string> } {
  const body = options.body ?? JSON.stringify(event);
  const t = options.timestamp ?? nowSeconds();
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'service-event-id': event.id,
      'service-signature': signPayload(options.secret ?? SECRET, t, body),
    },
  };
}

export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

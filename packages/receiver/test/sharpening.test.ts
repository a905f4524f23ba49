import { afterEach, describe, expect, it, vi } from 'vitest';
import { EVENT_TYPES, PAYMENT_STATUSES } from '@payhooks/contract';
import {
  createWebhookHandler,
  memoryStore,
  verifyWebhook,
  verifyWebhookAsync,
  type WebhookVerificationError,
  type Payment,
  type WebhookHandler,
} from '../src/index.ts';
import { OTHER_SECRET, SECRET, delivery, paymentEvent } from './helpers/events.ts';

/** Issue 12 item 4: catalog-typed `types`, typed Payment.status, onRejected, millisecond tolerance. */
const handlers: WebhookHandler[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(handlers.splice(0).map((h) => h.close()));
});

describe('types: only catalog types', () => {
  it('a misspelt type is a compile error and throws when the handler is created', () => {
    const create = () =>
      createWebhookHandler({
        secret: SECRET,
        store: memoryStore(),
        onEvent: () => {},
        // @ts-expect-error 'payment.succeded' is not a catalog type (this line fails typecheck if it were accepted)
        types: ['payment.succeded'],
      });
    expect(create).toThrow(TypeError);
    expect(create).toThrow(/unknown event type "payment.succeded" in `types`; known types: payment.created/);
  });

  it('every catalog type is accepted (the list is the catalog constant, not a copy)', () => {
    const handler = createWebhookHandler({ secret: SECRET, store: memoryStore(), onEvent: () => {}, types: EVENT_TYPES });
    handlers.push(handler);
    expect(handler).toBeDefined();
  });

  it('a non-array types is refused', () => {
    // @ts-expect-error a string is not a list of types
    expect(() => createWebhookHandler({ secret: SECRET, store: memoryStore(), onEvent: () => {}, types: 'payment.succeeded' })).toThrow(
      /must be an array/,
    );
  });
});

describe('Payment.status', () => {
  it('is the union of payment statuses', () => {
    const status: Payment['status'] = 'succeeded';
    // @ts-expect-error 'paid' is not a payment status
    const wrong: Payment['status'] = 'paid';
    expect(PAYMENT_STATUSES).toContain(status);
    expect(PAYMENT_STATUSES).not.toContain(wrong);
  });
});

describe('onRejected', () => {
  it('spec 5.1.7: a delivery signed with another secret is answered 400 and reported to onRejected with its reason', async () => {
    const rejected: WebhookVerificationError[] = [];
    const handler = createWebhookHandler({
      secret: SECRET,
      store: memoryStore(),
      onEvent: () => {},
      onRejected: (e) => void rejected.push(e),
    });
    handlers.push(handler);
    const response = await handler.handle(delivery(paymentEvent(), { secret: OTHER_SECRET }));
    expect(response.status).toBe(400);
    expect(rejected.map((e) => e.reason)).toEqual(['bad_signature']);
    // An accepted delivery is not reported.
    expect((await handler.handle(delivery(paymentEvent()))).status).toBe(200);
    expect(rejected).toHaveLength(1);
  });

  it('by default a rejection prints one warning that points at the secret', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const handler = createWebhookHandler({ secret: SECRET, store: memoryStore(), onEvent: () => {} });
    handlers.push(handler);
    await handler.handle(delivery(paymentEvent(), { secret: OTHER_SECRET }));
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]![0])).toMatch(/rejected a delivery with 400: bad_signature.*whsec_ signing secret/);
  });

  it('a throwing onRejected still answers 400', async () => {
    const handler = createWebhookHandler({
      secret: SECRET,
      store: memoryStore(),
      onEvent: () => {},
      onRejected: () => {
        throw new Error('boom');
      },
    });
    handlers.push(handler);
    expect((await handler.handle(delivery(paymentEvent(), { secret: OTHER_SECRET }))).status).toBe(400);
  });
});

describe.each([
  ['node:crypto', async (o: Parameters<typeof verifyWebhook>[0]) => verifyWebhook(o)],
  ['WebCrypto', (o: Parameters<typeof verifyWebhook>[0]) => verifyWebhookAsync(o)],
])('tolerance to the millisecond via %s', (_name, verify) => {
  const t = 1_750_000_000;
  it('spec 5.1.6: 300.9 s after t is outside a 300 s tolerance, 300.000 s is inside', async () => {
    const d = delivery(paymentEvent(), { timestamp: t });
    await expect(verify({ ...d, secret: SECRET, now: t * 1000 + 300_900 })).rejects.toMatchObject({ reason: 'timestamp_out_of_tolerance' });
    await expect(verify({ ...d, secret: SECRET, now: t * 1000 + 300_001 })).rejects.toMatchObject({ reason: 'timestamp_out_of_tolerance' });
    await expect(verify({ ...d, secret: SECRET, now: t * 1000 + 300_000 })).resolves.toMatchObject({ type: 'payment.succeeded' });
  });

  it('spec 5.1.6: 300.9 s before t (a clock ahead) is outside too', async () => {
    const d = delivery(paymentEvent(), { timestamp: t });
    await expect(verify({ ...d, secret: SECRET, now: t * 1000 - 300_900 })).rejects.toMatchObject({ reason: 'timestamp_out_of_tolerance' });
    await expect(verify({ ...d, secret: SECRET, now: t * 1000 - 300_000 })).resolves.toBeDefined();
  });
});

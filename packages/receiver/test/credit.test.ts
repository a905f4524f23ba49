import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CreditInProgressError, createWebhookHandler, isPaymentEvent, memoryStore, redisStore } from '../src/index.ts';
import { uniqueName } from './helpers/db.ts';
import { storeFixture } from './helpers/stores.ts';
import { SECRET, delivery, paymentEvent, uniqueId } from './helpers/events.ts';

const fx = storeFixture('credit', { creditWaitMs: 5_000 });
const { pool, redis, prefix, tables, handlers, newPgStore, newRedisStore } = fx;
const ledger = uniqueName('ledger');
tables.push(ledger);

beforeAll(async () => {
  // No unique constraint on purpose: only creditOnce stands between a payment and a second credit.
  await pool.query(
    `CREATE TABLE "${ledger}" (id serial PRIMARY KEY, payment_id text NOT NULL, amount numeric NOT NULL, source text NOT NULL)`,
  );
});

afterAll(() => fx.close());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ledgerRows = async (paymentId: string) =>
  (await pool.query(`SELECT source FROM "${ledger}" WHERE payment_id = $1`, [paymentId])).rows.map((r) => r.source as string);

describe('creditOnce on PostgreSQL: the marker and the ledger row commit together', () => {
  it('spec 6.2.3: a webhook, its replay (after its id left the dedup store) and a status poll racing credit once', async () => {
    const credits = newPgStore();
    const event = paymentEvent();
    const payment = event.data.object;
    const credit = (source: string) =>
      credits.creditOnce(payment.id, async (tx) => {
        await tx.query(`SELECT pg_sleep(0.05)`); // widen the race window
        await tx.query(`INSERT INTO "${ledger}" (payment_id, amount, source) VALUES ($1, $2, $3)`, [payment.id, payment.amount, source]);
      });
    // The webhook and its replay arrive at receivers that do not share a dedup record of this
    // event id (say the replay came after the id was purged), so only creditOnce protects the ledger.
    const receivers = [newPgStore(), memoryStore()].map((store, i) => {
      const handler = createWebhookHandler({
        secret: SECRET,
        store,
        onEvent: async (e) => {
          if (e.type === 'payment.succeeded' && isPaymentEvent(e)) await credit(i === 0 ? 'webhook' : 'replay');
        },
      });
      handlers.push(handler);
      return handler;
    });
    const [webhook, replay] = await Promise.all([
      receivers[0]!.handle(delivery(event)),
      receivers[1]!.handle(delivery(event)),
      credit('poll'),
      credit('poll'),
    ]);
    expect(webhook.status).toBe(200);
    expect(replay.status).toBe(200);
    await Promise.all(receivers.map((r) => r.drain()));
    expect(await ledgerRows(payment.id)).toHaveLength(1);
  });

  it('spec 6.2.3: 20 concurrent credits of one payment: one credited, nineteen not, one ledger row', async () => {
    const store = newPgStore();
    const paymentId = uniqueId('pay_');
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        store.creditOnce(paymentId, async (tx) => {
          await tx.query(`INSERT INTO "${ledger}" (payment_id, amount, source) VALUES ($1, '5.00', $2)`, [paymentId, `c${i}`]);
          return i;
        }),
      ),
    );
    expect(results.filter((r) => r.credited)).toHaveLength(1);
    expect(await ledgerRows(paymentId)).toHaveLength(1);
  });

  it('spec 6.2.3: when fn fails, its ledger write and the marker roll back together, and a later call credits', async () => {
    const store = newPgStore();
    const paymentId = uniqueId('pay_');
    await expect(
      store.creditOnce(paymentId, async (tx) => {
        await tx.query(`INSERT INTO "${ledger}" (payment_id, amount, source) VALUES ($1, '5.00', 'doomed')`, [paymentId]);
        throw new Error('crash after the ledger insert');
      }),
    ).rejects.toThrow('crash after the ledger insert');
    expect(await ledgerRows(paymentId)).toEqual([]);
    const { rowCount } = await pool.query(`SELECT 1 FROM "${store.creditsTable}" WHERE payment_id = $1`, [paymentId]);
    expect(rowCount).toBe(0);
    const ok = await store.creditOnce(paymentId, async (tx) => {
      await tx.query(`INSERT INTO "${ledger}" (payment_id, amount, source) VALUES ($1, '5.00', 'retry')`, [paymentId]);
      return 'credited';
    });
    expect(ok).toEqual({ credited: true, value: 'credited' });
    expect(await store.creditOnce(paymentId, () => 'never')).toEqual({ credited: false });
    expect(await ledgerRows(paymentId)).toEqual(['retry']);
  });
});

describe.each([
  ['memory', () => memoryStore()],
  ['Redis', newRedisStore],
] as const)('creditOnce on the %s store', (_name, makeStore) => {
  it('spec 6.2.3: a webhook, its replay and a status poll racing credit once', async () => {
    const store = makeStore();
    const paymentId = uniqueId('pay_');
    const ledgerEntries: string[] = [];
    const credit = (source: string) =>
      store.creditOnce(paymentId, async () => {
        await sleep(30);
        ledgerEntries.push(source);
        return source;
      });
    const results = await Promise.all([credit('webhook'), credit('replay'), credit('poll'), credit('poll')]);
    expect(results.filter((r) => r.credited)).toHaveLength(1);
    expect(ledgerEntries).toHaveLength(1);
    expect(await credit('late poll')).toEqual({ credited: false });
  });

  it('spec 6.2.3: when fn throws nothing is marked and a concurrent waiter, or a later call, credits instead', async () => {
    const store = makeStore();
    const paymentId = uniqueId('pay_');
    const ledgerEntries: string[] = [];
    const failing = store.creditOnce(paymentId, async () => {
      await sleep(30);
      throw new Error('ledger unavailable');
    });
    await sleep(5);
    const waiting = store.creditOnce(paymentId, async () => void ledgerEntries.push('second'));
    await expect(failing).rejects.toThrow('ledger unavailable');
    expect(await waiting).toEqual({ credited: true, value: undefined });
    expect(ledgerEntries).toEqual(['second']);
  });
});

describe('creditOnce on Redis when a crediting process died', () => {
  it('spec 6.2.3: a payment left pending is never credited a second time: CreditInProgressError instead', async () => {
    const store = redisStore({ client: redis, prefix: `${prefix}dead:`, creditWaitMs: 100 });
    const paymentId = uniqueId('pay_');
    await redis.set(store.creditKey(paymentId), 'pending:from-a-dead-process');
    let ran = false;
    await expect(
      store.creditOnce(paymentId, () => {
        ran = true;
      }),
    ).rejects.toBeInstanceOf(CreditInProgressError);
    expect(ran).toBe(false);
  });
});

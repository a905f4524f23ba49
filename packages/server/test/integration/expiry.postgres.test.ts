import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver } from '../helpers/receiver.ts';
import { spawnPayhooks, type Spawned } from '../helpers/spawn.ts';
import { sharedPostgres, type SharedPostgres } from '../helpers/shared-postgres.ts';
import type { Database } from '../../src/db/client.ts';
import type { ServiceContext } from '../../src/context.ts';
import { createPlatform } from '../../src/tenancy/platforms.ts';
import { until } from '../helpers/wait.ts';

/**
 * Checkout-session expiry with real `payhooks worker` processes on one PostgreSQL (this file
 * runs in the postgres project only: the embedded database is single-process by design).
 */
let pg: SharedPostgres;
let key: Buffer;
let dbUrl: string;
let database: Database;
let ctx: ServiceContext;
const spawned: Spawned[] = [];

beforeAll(async () => {
  pg = await sharedPostgres();
  ({ key, url: dbUrl, database, ctx } = pg);
});
afterAll(async () => {
  for (const s of spawned) s.child.kill('SIGKILL');
  await pg?.close();
});

function worker(): Spawned {
  const s = spawnPayhooks(['worker'], {
    DATABASE_URL: dbUrl,
    PAYHOOKS_ENCRYPTION_KEY: key.toString('hex'),
    PAYHOOKS_ALLOW_PRIVATE_URLS: 'true',
    PAYHOOKS_POLL_INTERVAL: '200ms',
    PAYHOOKS_EXPIRY_INTERVAL: '100ms',
    PAYHOOKS_LOG_LEVEL: 'info',
  });
  spawned.push(s);
  return s;
}

describe('checkout session expiry by the workers', () => {
  it('two worker processes expire each session past expires_at exactly once, with its payment, and deliver the events', async () => {
    const receiver = await startReceiver();
    try {
      const p = await createPlatform(database.db, 'expiry');
      const scope = { platformId: p.platform_id, environment: 'sandbox' as const, actor: { type: 'operator' as const, id: 'test' } };
      await ctx.endpoints.create(scope, { url: receiver.url, enabled_events: ['payment.expired', 'checkout_session.expired'] });
      const sessions = await database.db.transaction(async (tx) => {
        const out = [];
        for (let i = 0; i < 300; i++)
          out.push(
            await ctx.checkout.create(
              scope,
              {
                amount: '9.99',
                asset_code: 'USDC.ETH',
                metadata: { n: String(i) },
                success_url: 'https://shop.example/ok',
                expires_in: 60,
              },
              tx,
            ),
          );
        return out;
      });
      const ws = [worker(), worker()];
      await Promise.all(ws.map((w) => w.waitFor('payhooks workers started')));
      // Nothing is due yet: the workers leave the sessions open.
      await new Promise((r) => setTimeout(r, 300));
      const [open] = await database.query<{ n: string }>(`SELECT count(*) AS n FROM checkout_sessions WHERE status = 'open'`, []);
      expect(Number(open!.n)).toBe(300);
      // Their time runs out while both workers poll.
      await database.query(`UPDATE checkout_sessions SET expires_at = now() - interval '1 second'`, []);
      await until(
        async () =>
          Number(
            (await database.query<{ n: string }>(`SELECT count(*) AS n FROM checkout_sessions WHERE status = 'expired'`, []))[0]!.n,
          ) === 300,
        { timeout: 60_000, interval: 200, message: '300 sessions expired' },
      );
      await receiver.waitFor(600, 60_000);

      const events = await database.query<{ type: string; object_id: string; n: string }>(
        `SELECT type, body::jsonb -> 'data' -> 'object' ->> 'id' AS object_id, count(*) AS n FROM events WHERE type LIKE '%.expired' GROUP BY 1, 2`,
        [],
      );
      expect(events).toHaveLength(600);
      expect(events.every((e) => Number(e.n) === 1)).toBe(true);
      expect(new Set(events.filter((e) => e.type === 'checkout_session.expired').map((e) => e.object_id))).toEqual(
        new Set(sessions.map((s) => s.id)),
      );
      expect(new Set(events.filter((e) => e.type === 'payment.expired').map((e) => e.object_id))).toEqual(
        new Set(sessions.map((s) => s.payment)),
      );
      const [payments] = await database.query<{ n: string }>(`SELECT count(*) AS n FROM payments WHERE status = 'expired'`, []);
      expect(Number(payments!.n)).toBe(300);
      // Delivered once each to the real receiver.
      await new Promise((r) => setTimeout(r, 300));
      const ids = receiver.requests.map((r) => r.headers['service-event-id']);
      expect(ids).toHaveLength(600);
      expect(new Set(ids).size).toBe(600);
      for (const w of ws) w.child.kill('SIGTERM');
      expect(await Promise.all(ws.map((w) => w.exited))).toEqual([0, 0]);
    } finally {
      await receiver.close();
    }
  }, 120_000);
});

import pg from 'pg';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { startService, type TestService } from '../helpers/service.ts';
import { publish } from '../helpers/publish.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { Scope } from '../../src/scope.ts';
import { AppError } from '../../src/errors.ts';

/**
 * Cancel delivery against a worker recording the same delivery at the same moment: the record
 * locks the queue row, then updates the delivery. A cancel that locked the delivery first would
 * deadlock with it (PostgreSQL then aborts one of the two after a second). A second connection
 * plays the record's two steps around a cancel that arrives between them.
 */
let svc: TestService;
let p: CreatedPlatform;
const scope = (): Scope => ({ platformId: p.platform_id, environment: 'sandbox', actor: { type: 'operator' as const, id: 'test' } });

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true });
  p = await svc.platform();
  await svc.ctx.endpoints.create(scope(), { url: 'http://127.0.0.1:9/never-called', enabled_events: ['*'] });
});
afterAll(async () => svc?.close());

it('a cancel arriving while a record holds the queue row waits for it, then finds the delivery finished (no deadlock)', async () => {
  const { event } = await publish(svc.ctx, p.merchant_id);
  const [d] = (await svc.ctx.deliveries.list(scope(), { limit: 1, eventId: event.id })).data;
  const record = new pg.Client({ connectionString: svc.testDb.databaseUrl });
  await record.connect();
  try {
    await record.query('BEGIN');
    await record.query('SELECT 1 FROM delivery_queue WHERE delivery_id = $1 FOR UPDATE', [d!.id]);
    const cancelled = svc.ctx.deliveries.cancel(scope(), d!.id).then(
      () => 'cancelled',
      (err: unknown) => (err instanceof AppError ? err.code : `failed: ${String(err)}`),
    );
    // The cancel is waiting for a lock (read from a third connection: a transaction sees
    // pg_stat_activity as it was when it first looked).
    await vi.waitFor(
      async () => {
        const [r] = await svc.ctx.database.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%cancel_reason = ''manual''%'`,
          [],
        );
        expect(r!.n).toBe(1);
      },
      { timeout: 20_000, interval: 20 },
    );
    // The record's second step: the delivery row. It must not wait for the cancel.
    await record.query(`UPDATE webhook_deliveries SET state = 'delivered', next_attempt_at = NULL WHERE id = $1`, [d!.id]);
    await record.query('DELETE FROM delivery_queue WHERE delivery_id = $1', [d!.id]);
    await record.query('COMMIT');
    expect(await cancelled).toBe('delivery_not_cancellable');
    expect((await svc.ctx.deliveries.get(scope(), d!.id)).state).toBe('delivered');
  } finally {
    await record.end();
  }
});

import { afterAll, beforeAll, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.ts';
import { publish } from '../helpers/publish.ts';
import { claimDue } from '../../src/delivery/claim.ts';
import { recordOutcomes, type Outcome } from '../../src/delivery/record.ts';
import { AttemptStats } from '../../src/delivery/attempt-stats.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';

/**
 * The record statement takes its parameters as array literals it builds itself, times as
 * milliseconds since the epoch (delivery/record.ts, db/array-literal.ts): what the log and the
 * schedule keep must be exactly what the attempt was, to the millisecond and to the byte.
 */
let svc: TestService;
let p: CreatedPlatform;

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true });
  p = await svc.platform();
  const res = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
    url: 'http://127.0.0.1:9/nobody',
    enabled_events: ['*'],
  });
  expect(res.status).toBe(201);
  for (let i = 0; i < 3; i++) await publish(svc.ctx, p.merchant_id);
});
afterAll(async () => svc?.close());

it('spec 2.4: an attempt is logged with its start, duration, answer and headers exactly; the next attempt is due at the millisecond given', async () => {
  const now = new Date(Date.now() + 60_000);
  const rows = await claimDue(svc.ctx.database, {
    now,
    leaseUntil: new Date(now.getTime() + 30_000),
    limit: 10,
    perEndpoint: 10,
    perPlatform: 10,
    excludeEndpoints: [],
    excludePlatforms: [],
    token: 'tok-exact',
  });
  expect(rows).toHaveLength(3);
  // Odd milliseconds on both sides of a second, and a time before 2001 (ten digits of seconds is not assumed).
  const started = [new Date('2026-11-27T17:04:05.999Z'), new Date('2026-11-27T17:04:06.001Z'), new Date('1999-12-31T23:59:59.987Z')];
  const next = [new Date('2026-11-27T17:05:05.123Z'), null, new Date('2026-11-28T00:00:00.000Z')];
  const bodies = ['ok', 'a "quoted" \\ body\nwith a newline, {braces} and ✓', '\u0000nul'];
  const outcomes: Outcome[] = rows.map((row, i) => ({
    deliveryId: row.id,
    endpointId: row.endpoint_id,
    token: 'tok-exact',
    trigger: 'automatic',
    state: next[i] ? 'failed_retrying' : 'exhausted',
    nextAttemptAt: next[i]!,
    result: {
      succeeded: false,
      startedAt: started[i]!,
      durationMs: 1234 + i,
      statusCode: 500 + i,
      responseBody: bodies[i]!,
      errorKind: 'http_status',
      errorMessage: `The endpoint answered HTTP ${500 + i}`,
      requestSignature: `t=1790000000,v1=${String(i).repeat(64)}`,
    },
  }));
  expect(await recordOutcomes(svc.ctx.database, outcomes, now, new AttemptStats())).toHaveLength(3);

  const logged = await svc.ctx.database.query<{
    delivery_id: string;
    started_at: Date;
    duration_ms: number;
    status_code: number;
    response_body: string;
    request_signature: string;
    next_attempt_at: Date | null;
    state: string;
  }>(
    `SELECT a.delivery_id, a.started_at, a.duration_ms, a.status_code, a.response_body, a.request_signature, d.next_attempt_at, d.state
     FROM delivery_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
     WHERE a.delivery_id = ANY($1::text[])`,
    [rows.map((r) => r.id)],
  );
  for (const [i, row] of rows.entries()) {
    const a = logged.find((l) => l.delivery_id === row.id)!;
    expect(new Date(a.started_at).getTime()).toBe(started[i]!.getTime());
    expect(a.next_attempt_at === null ? null : new Date(a.next_attempt_at).getTime()).toBe(next[i]?.getTime() ?? null);
    expect(a.state).toBe(next[i] ? 'failed_retrying' : 'exhausted');
    expect(Number(a.duration_ms)).toBe(1234 + i);
    expect(Number(a.status_code)).toBe(500 + i);
    // PostgreSQL text can't hold NUL: it is kept as U+FFFD.
    expect(a.response_body).toBe(bodies[i]!.replace('\u0000', '\uFFFD'));
    expect(a.request_signature).toBe(`t=1790000000,v1=${String(i).repeat(64)}`);
  }
  // The queue row is due at that same millisecond.
  const queued = await svc.ctx.database.query<{ due_at: Date }>('SELECT due_at FROM delivery_queue WHERE delivery_id = $1', [rows[0]!.id]);
  expect(new Date(queued[0]!.due_at).getTime()).toBe(next[0]!.getTime());
});

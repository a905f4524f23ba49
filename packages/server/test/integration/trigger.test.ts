import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESOURCE_EVENT_TYPES } from '@payhooks/contract';
import { startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { runPayhooks } from '../helpers/cli.ts';
import { parsedEvents } from '../helpers/checkout.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';

let svc: TestService;
let p: CreatedPlatform;
let worker: DeliveryWorker;
let receiver: TestReceiver;

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true });
  p = await svc.platform('trigger');
  worker = svc.ctx.createWorker();
  receiver = await startReceiver();
  await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url: receiver.url, enabled_events: ['*'] });
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

const trigger = (args: string[]) => runPayhooks(['trigger', ...args, '--api-key', p.keys.sandbox, '--url', svc.url, '--json'], {}, 60_000);

describe('payhooks trigger (over HTTP, against a running server)', () => {
  it('emits each of the ten event types by real transitions; a receiver gets each with its object', async () => {
    const results = await Promise.all(RESOURCE_EVENT_TYPES.map((type) => trigger([type])));
    await worker.drain();
    const events = parsedEvents(receiver.requests);
    RESOURCE_EVENT_TYPES.forEach((type, i) => {
      const r = results[i]!;
      expect(r.code, `${type}: ${r.stderr}`).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.type).toBe(type);
      const emitted = out.events.find((e: { type: string }) => e.type === type);
      expect(emitted, type).toBeDefined();
      const got = events.filter((e) => e.id === emitted.id);
      expect(got, type).toHaveLength(1);
      expect(got[0]!.type).toBe(type);
      expect(got[0]!.data.object.id).toBe(type.startsWith('payment.') ? out.payment : out.checkout_session);
      expect(got[0]!.data.object.metadata).toEqual({ source: 'payhooks trigger', trigger_type: type });
    });
  }, 120_000);

  it('spec 6.2.5: --double-delivery delivers each emitted event twice, same evt_ id and bytes; plain output lists ids and events', async () => {
    receiver.requests.length = 0;
    const r = await runPayhooks(
      ['trigger', 'payment.succeeded', '--double-delivery', '--api-key', p.keys.sandbox, '--url', svc.url],
      {},
      60_000,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/created payment pay_\w+/);
    expect(r.stdout).toMatch(/event evt_\w+ payment\.succeeded/);
    await worker.drain();
    expect(receiver.requests).toHaveLength(6); // created, processing, succeeded: twice each
    const byId = new Map<string, Buffer[]>();
    for (const q of receiver.requests)
      byId.set(String(q.headers['service-event-id']), [...(byId.get(String(q.headers['service-event-id'])) ?? []), q.raw]);
    expect(byId.size).toBe(3);
    for (const bodies of byId.values()) {
      expect(bodies).toHaveLength(2);
      expect(bodies[0]!.equals(bodies[1]!)).toBe(true);
    }
  }, 60_000);

  it("--metadata key=value (repeatable) adds to the payment's metadata, which the receiver reads; a malformed pair or one the API refuses exits 1 saying why", async () => {
    receiver.requests.length = 0;
    const r = await trigger(['payment.succeeded', '--metadata', 'account=acct_42', '--metadata', 'order=o=1']);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    await worker.drain();
    const succeeded = parsedEvents(receiver.requests).find((e) => e.type === 'payment.succeeded' && e.data.object.id === out.payment);
    expect(succeeded!.data.object.metadata).toEqual({
      source: 'payhooks trigger',
      trigger_type: 'payment.succeeded',
      account: 'acct_42',
      order: 'o=1',
    });
    const malformed = await runPayhooks(
      ['trigger', 'payment.created', '--metadata', 'account', '--api-key', p.keys.sandbox, '--url', svc.url],
      {},
    );
    expect(malformed.code).toBe(1);
    expect(malformed.stderr).toContain('--metadata takes key=value');
    const tooLong = await runPayhooks(
      ['trigger', 'payment.created', '--metadata', `${'k'.repeat(41)}=v`, '--api-key', p.keys.sandbox, '--url', svc.url],
      {},
    );
    expect(tooLong.code).toBe(1);
    expect(tooLong.stderr).toMatch(/metadata/);
    expect(tooLong.stderr).not.toMatch(/\n\s+at /);
  }, 60_000);

  it('refuses live keys, unknown types and an unreachable server with a clear message and exit 1', async () => {
    const live = await runPayhooks(['trigger', 'payment.created', '--api-key', p.keys.live, '--url', svc.url], {});
    expect(live.code).toBe(1);
    expect(live.stderr).toContain('sandbox key (sk_test_');
    const unknown = await runPayhooks(['trigger', 'payment.refunded', '--api-key', p.keys.sandbox, '--url', svc.url], {});
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('payment.succeeded');
    const down = await runPayhooks(['trigger', 'payment.created', '--api-key', p.keys.sandbox, '--url', 'http://127.0.0.1:1'], {});
    expect(down.code).toBe(1);
    expect(down.stderr).toContain('cannot reach payhooks');
    const badKey = await runPayhooks(['trigger', 'payment.created', '--api-key', 'sk_test_nope', '--url', svc.url], {});
    expect(badKey.code).toBe(1);
    expect(badKey.stderr).toContain('invalid_api_key');
  }, 60_000);
});

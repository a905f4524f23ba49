import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { fanoutExchange, type FanoutExchange } from '../helpers/rabbit.ts';
import { Sender } from '../../src/delivery/sender.ts';
import type { Resolver } from '../../src/delivery/safe-lookup.ts';
import { AmqpDestination } from '../../src/delivery/destinations/amqp.ts';
import { NatsDestination } from '../../src/delivery/destinations/nats.ts';
import { parseBrokerUrl } from '../../src/endpoint-urls/broker-url.ts';

/**
 * Issue 25 item 3, the connections behind broker destinations, against the real RabbitMQ and
 * NATS of this machine: the SSRF rules at connect time (a name that resolves to a private
 * address is refused before any socket opens), one connection per broker and credentials,
 * reused and closed when idle, and the attempt's deadline when a broker never confirms.
 */
const SECRET = 'whsec_dGVzdHNlY3JldHRlc3RzZWNyZXR0ZXN0c2VjcmV0';
const message = { body: Buffer.from('{"id":"evt_1"}'), headers: { 'Service-Event-Id': 'evt_1' }, eventId: 'evt_1' };

/** Every name resolves to loopback, where this machine's brokers are. */
const toLoopback: Resolver = (_hostname, _options, callback) => callback(null, [{ address: '127.0.0.1', family: 4 }]);

let exchange: FanoutExchange;
let EXCHANGE: string;

beforeAll(async () => {
  exchange = await fanoutExchange('payhooks-conn');
  ({ name: EXCHANGE } = exchange);
});
afterAll(async () => {
  await exchange?.close();
});

describe('SSRF at connect time (the same rules as HTTP endpoints)', () => {
  const strict = new Sender({
    timeoutMs: 5_000,
    allowPrivate: false,
    connectionsPerOrigin: 4,
    now: () => new Date(),
    resolver: toLoopback,
  });
  afterAll(() => strict.close());

  it.each([
    `amqp://rabbit.example.com:5672/?exchange=${EXCHANGE}`,
    'nats://nats.example.com:4222?subject=payhooks.ssrf',
    'amqp://127.0.0.1:5672/?exchange=x',
    'nats://[::1]:4222?subject=a',
  ])('%s: refused as forbidden_address before a connection opens', async (url) => {
    const r = await strict.send({ url, body: '{}', eventId: 'evt_1', secrets: [SECRET] });
    expect(r).toMatchObject({ succeeded: false, errorKind: 'forbidden_address', statusCode: null });
    expect(r.errorMessage).toMatch(/Refused to connect to .*private, loopback/);
    expect(await strict.brokerConnections()).toEqual({ amqp: 0, nats: 0 });
  });
});

describe('one connection per broker and credentials, reused, closed when idle', () => {
  it('AMQP: twenty publishes to two exchanges share one connection; another user gets its own; idle ones close', async () => {
    const amqp = new AmqpDestination({ allowPrivate: true, connectTimeoutMs: 5_000, idleMs: 300 });
    try {
      const target = parseBrokerUrl(new URL(`amqp://127.0.0.1:5672/?exchange=${EXCHANGE}`));
      const other = parseBrokerUrl(new URL('amqp://127.0.0.1:5672/?exchange=amq.fanout'));
      const guest = { username: 'guest', password: 'guest' };
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => amqp.publish(i % 2 ? target : other, guest, message).catch((e: Error) => e.message)),
      );
      expect(results.filter((r) => /Confirmed by RabbitMQ/.test(r))).toHaveLength(10);
      expect(amqp.openConnections).toBe(1);
      // Other credentials (refused here) are another connection, dropped when it fails.
      await expect(amqp.publish(target, { username: 'guest', password: 'nope' }, message)).rejects.toThrow(/refused the credentials/);
      expect(amqp.openConnections).toBe(1);
      await vi.waitFor(() => expect(amqp.openConnections).toBe(0), { timeout: 10_000, interval: 50 });
      // After the idle close, the next publish dials again and succeeds.
      await expect(amqp.publish(target, guest, message)).resolves.toMatch(/Confirmed/);
      expect(amqp.openConnections).toBe(1);
    } finally {
      await amqp.close();
    }
    expect(amqp.openConnections).toBe(0);
  });

  it('NATS: publishes share one connection, closed when idle', async () => {
    const nats = new NatsDestination({ allowPrivate: true, connectTimeoutMs: 5_000, idleMs: 300 });
    const target = parseBrokerUrl(new URL('nats://127.0.0.1:4222?subject=payhooks.nostream.conn'));
    try {
      const results = await Promise.allSettled(Array.from({ length: 10 }, () => nats.publish(target, null, message)));
      // No stream captures this subject: every publish is refused, on the one shared connection.
      expect(results.every((r) => r.status === 'rejected' && /No JetStream stream/.test(String(r.reason)))).toBe(true);
      expect(nats.openConnections).toBe(1);
      await vi.waitFor(() => expect(nats.openConnections).toBe(0), { timeout: 10_000, interval: 50 });
    } finally {
      await nats.close();
    }
  });
});

describe('the attempt deadline', () => {
  let silent: Server;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    // Accepts connections and never says a word: a broker that never answers.
    silent = createServer((s) => sockets.push(s));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => silent.close(resolve));
  });

  it.each(['amqp', 'nats'])("%s: the client's own connect timeout is a timeout (ETIMEDOUT), not a broker's refusal", async (scheme) => {
    // The attempt's deadline and the client's connect timeout are the same length; whichever
    // fires first, the attempt must read `timeout`.
    const options = { allowPrivate: true, connectTimeoutMs: 300, idleMs: 1_000 };
    const destination = scheme === 'amqp' ? new AmqpDestination(options) : new NatsDestination(options);
    try {
      const port = (silent.address() as AddressInfo).port;
      const url = scheme === 'amqp' ? `amqp://127.0.0.1:${port}/?exchange=x` : `nats://127.0.0.1:${port}?subject=a`;
      const err = await destination.publish(parseBrokerUrl(new URL(url)), null, message).then(
        () => null,
        (e: unknown) => e as Error & { code?: string },
      );
      expect(err?.name).not.toBe('BrokerRefusal');
      expect(err?.code).toBe('ETIMEDOUT');
    } finally {
      await destination.close();
    }
  });

  it.each(['amqp', 'nats'])('%s: a broker that never confirms fails the attempt as a timeout at the deadline', async (scheme) => {
    const sender = new Sender({ timeoutMs: 400, allowPrivate: true, connectionsPerOrigin: 4, now: () => new Date() });
    try {
      const port = (silent.address() as AddressInfo).port;
      const url = scheme === 'amqp' ? `amqp://127.0.0.1:${port}/?exchange=x` : `nats://127.0.0.1:${port}?subject=a`;
      const r = await sender.send({ url, body: '{}', eventId: 'evt_1', secrets: [SECRET] });
      expect(r).toMatchObject({ succeeded: false, errorKind: 'timeout' });
      expect(r.errorMessage).toMatch(/did not confirm within 400 ms|Timed out/);
      expect(r.durationMs).toBeGreaterThanOrEqual(300);
    } finally {
      await sender.close();
    }
  });
});

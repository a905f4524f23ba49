import { execFileSync } from 'node:child_process';
import { connect as amqpConnect } from 'amqplib';
import { connect as natsConnect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import type { Arrivals } from './receivers.ts';
import { now } from './stats.ts';
import { cpuMsOfAll } from './machine.ts';

/**
 * The merchant's side of broker destinations for the bench, on this machine's RabbitMQ and
 * NATS: a topic exchange whose one queue this process consumes, and a JetStream stream whose
 * subjects it also subscribes to. Each message counts as an arrival like an HTTP request does
 * (event id + endpoint), so `backlog` measures the three destinations alike. The brokers' own
 * CPU is not in the worker's or PostgreSQL's figures.
 */
export interface BrokerSinks {
  url(kind: 'amqp' | 'nats', i: number): string;
  /** CPU ms the broker's server process has used so far (RabbitMQ's beam.smp, nats-server). */
  serverCpuMs(kind: 'amqp' | 'nats'): number;
  close(): Promise<void>;
}

export async function startBrokerSinks(arrivals: Arrivals): Promise<BrokerSinks> {
  const tag = `bench${process.pid}`;
  const rabbit = await amqpConnect('amqp://guest:guest@127.0.0.1:5672');
  const ch = await rabbit.createChannel();
  await ch.assertExchange(tag, 'topic', { durable: false, autoDelete: false });
  await ch.assertQueue(tag, { exclusive: true });
  await ch.bindQueue(tag, tag, '#');
  await ch.consume(
    tag,
    (m) => {
      if (m) arrivals.add(String(m.properties.messageId), `amqp:${m.fields.routingKey}`, now());
    },
    { noAck: true },
  );
  const nc = await natsConnect({ servers: '127.0.0.1:4222' });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: tag, subjects: [`${tag}.>`] });
  const sub = nc.subscribe(`${tag}.>`, {
    callback: (_err, m) => arrivals.add(m.headers?.get('Service-Event-Id'), `nats:${m.subject}`, now()),
  });
  const pids = (name: string) => {
    try {
      return execFileSync('pgrep', ['-x', name], { encoding: 'utf8' }).trim().split('\n').filter(Boolean).map(Number);
    } catch {
      return [];
    }
  };
  const servers = { amqp: pids('beam.smp'), nats: pids('nats-server') };
  return {
    serverCpuMs: (kind) => cpuMsOfAll(servers[kind]),
    url: (kind, i) =>
      kind === 'amqp' ? `amqp://127.0.0.1:5672/?exchange=${tag}&routing_key=e${i}` : `nats://127.0.0.1:4222?subject=${tag}.e${i}`,
    async close() {
      sub.unsubscribe();
      await jsm.streams.delete(tag).catch(() => {});
      await nc.close();
      await ch.deleteExchange(tag).catch(() => {});
      await rabbit.close();
    },
  };
}

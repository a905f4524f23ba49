import { randomUUID } from 'node:crypto';
import { connect, type Channel, type ChannelModel } from 'amqplib';

/** This machine's RabbitMQ (and CI's). */
export const RABBIT_URL = 'amqp://guest:guest@127.0.0.1:5672';

/**
 * A fanout exchange of the test's own on the real RabbitMQ, with an exclusive queue of the same
 * name bound to it: whatever payhooks publishes there can be read back with
 * `channel.get(exchange.name)`. `close` deletes the exchange (the queue goes with the connection).
 */
export interface FanoutExchange {
  name: string;
  channel: Channel;
  close(): Promise<void>;
}

export async function fanoutExchange(prefix: string): Promise<FanoutExchange> {
  const name = `${prefix}-${randomUUID().slice(0, 8)}`;
  const model: ChannelModel = await connect(RABBIT_URL);
  const channel = await model.createChannel();
  await channel.assertExchange(name, 'fanout', { durable: false });
  await channel.assertQueue(name, { exclusive: true });
  await channel.bindQueue(name, name, '');
  return {
    name,
    channel,
    async close() {
      await channel.deleteExchange(name).catch(() => {});
      await model.close();
    },
  };
}

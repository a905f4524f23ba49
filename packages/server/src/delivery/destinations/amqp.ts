import { connect, type ChannelModel, type ConfirmChannel, type Message } from 'amqplib';
import { PooledDestination } from './connections.ts';
import {
  BrokerRefusal,
  brokerTlsOptions,
  resolveBrokerHost,
  tlsKey,
  type BrokerMessage,
  type BrokerTls,
  type DialOptions,
} from './broker.ts';
import type { BrokerCredentials, BrokerTarget } from '../../endpoint-urls/broker-url.ts';

interface Connection {
  model: ChannelModel;
  /** One confirm channel per exchange: a channel error (a missing exchange) closes only its own. */
  channels: Map<string, Promise<ExchangeChannel>>;
  /** Why the broker closed the connection, for the attempts it broke. */
  closedBecause: string | null;
}

interface ExchangeChannel {
  channel: ConfirmChannel;
  /** Why the broker closed this channel (e.g. "NOT_FOUND - no exchange 'x' in vhost '/'"). */
  closedBecause: string | null;
  /** basic.return's reply text by message, until that message's confirm arrives. */
  returned: Map<string, string>;
}

/**
 * RabbitMQ (AMQP 0-9-1) with publisher confirms. A message is published `mandatory`, so one that
 * no queue would take comes back (basic.return, before its confirm) and the attempt fails
 * naming the exchange and routing key: an ack alone would report a message dropped on the floor
 * as delivered. Persistent (delivery mode 2), content type application/json, message id = event id.
 */
export class AmqpDestination extends PooledDestination<Connection> {
  constructor(options: DialOptions) {
    super(options, (c) => c.model.close().catch(() => {}));
  }

  publish(target: BrokerTarget, credentials: BrokerCredentials | null, message: BrokerMessage, tls: BrokerTls = {}): Promise<string> {
    const key = JSON.stringify([
      target.tls,
      target.host,
      target.port,
      target.vhost,
      credentials?.username,
      credentials?.password,
      ...(target.tls ? tlsKey(tls) : []),
    ]);
    return this.pool.use(
      key,
      () => this.open(target, credentials, tls),
      async (conn) => {
        const exchange = await this.channelFor(conn, target.exchange);
        return this.publishOn(exchange, target, message, conn);
      },
    );
  }

  private async open(target: BrokerTarget, credentials: BrokerCredentials | null, tls: BrokerTls): Promise<Connection> {
    const address = await resolveBrokerHost(target.host, this.options);
    const model = await connect(
      {
        protocol: target.tls ? 'amqps' : 'amqp',
        hostname: address,
        port: target.port,
        vhost: target.vhost,
        // RabbitMQ's own default when none are given (it lets guest in from loopback only).
        username: credentials?.username ?? 'guest',
        password: credentials?.password ?? 'guest',
        heartbeat: 30,
      },
      // The socket goes to the checked address; TLS checks the certificate against the name.
      { ...(target.tls ? brokerTlsOptions(target.host, tls) : {}), timeout: this.options.connectTimeoutMs, noDelay: true },
    ).catch((err: Error) => {
      throw describe(err, `Could not open an AMQP connection to ${target.host}:${target.port}`);
    });
    const conn: Connection = { model, channels: new Map(), closedBecause: null };
    model.on('error', (err: Error) => {
      conn.closedBecause = err.message;
    });
    model.on('close', () => this.pool.forgetConnection(conn));
    return conn;
  }

  private channelFor(conn: Connection, exchange: string): Promise<ExchangeChannel> {
    let ch = conn.channels.get(exchange);
    if (!ch) {
      ch = conn.model.createConfirmChannel().then((channel) => {
        const entry: ExchangeChannel = { channel, closedBecause: null, returned: new Map() };
        channel.on('error', (err: Error) => {
          entry.closedBecause = err.message;
        });
        channel.on('close', () => {
          if (conn.channels.get(exchange) === ch) conn.channels.delete(exchange);
        });
        channel.on('return', (msg: Message) => {
          entry.returned.set(
            returnKey(msg.properties.messageId, msg.fields.exchange, msg.fields.routingKey),
            (msg.fields as Message['fields'] & { replyText?: string }).replyText ?? 'NO_ROUTE',
          );
        });
        return entry;
      });
      conn.channels.set(exchange, ch);
      const opening = ch;
      opening.catch(() => {
        if (conn.channels.get(exchange) === opening) conn.channels.delete(exchange);
      });
    }
    return ch;
  }

  private publishOn(entry: ExchangeChannel, target: BrokerTarget, message: BrokerMessage, conn: Connection): Promise<string> {
    const where = `exchange "${target.exchange}" with routing key "${target.routingKey}"`;
    const returned = returnKey(message.eventId, target.exchange, target.routingKey);
    return new Promise((resolve, reject) => {
      try {
        entry.channel.publish(
          target.exchange,
          target.routingKey,
          message.body,
          {
            persistent: true,
            mandatory: true,
            contentType: 'application/json',
            messageId: message.eventId,
            headers: message.headers,
          },
          (err) => {
            const replyText = entry.returned.get(returned);
            entry.returned.delete(returned);
            if (err) {
              // The channel or connection closed under this publish: the broker said why there.
              const why = entry.closedBecause ?? conn.closedBecause ?? String(err.message ?? err);
              reject(new BrokerRefusal(`RabbitMQ did not take the message for ${where}: ${why}`));
            } else if (replyText !== undefined) {
              reject(new BrokerRefusal(`RabbitMQ returned the message: no queue is bound to ${where} (${replyText}).`));
            } else {
              resolve(`Confirmed by RabbitMQ: ${where}.`);
            }
          },
        );
      } catch (err) {
        // The channel was already closed (publish throws synchronously then).
        const why = entry.closedBecause ?? conn.closedBecause ?? (err as Error).message;
        reject(new BrokerRefusal(`RabbitMQ did not take the message for ${where}: ${why}`));
      }
    });
  }
}

const returnKey = (messageId: unknown, exchange: string, routingKey: string) => `${String(messageId)}\n${exchange}\n${routingKey}`;

/** A connect failure with the broker's words (refused credentials, unknown vhost) kept. */
function describe(err: Error, prefix: string): Error {
  const e = err as NodeJS.ErrnoException;
  if (e.code) return err; // a socket error: classified like HTTP's (refused, DNS, TLS, ...)
  // amqplib's own connect timeout carries no code: the same `timeout` as any attempt that ran out.
  if (/ETIMEDOUT/.test(err.message)) return Object.assign(err, { code: 'ETIMEDOUT' });
  if (/ACCESS_REFUSED|ACCESS-REFUSED|403|NOT_ALLOWED|530/.test(err.message))
    return new BrokerRefusal(`${prefix}: the broker refused the credentials or the virtual host (${err.message}).`);
  return new BrokerRefusal(`${prefix}: ${err.message}`);
}

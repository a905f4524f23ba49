import { isIP } from 'node:net';
import { connect, headers, type NatsConnection, type NodeConnectionOptions } from '@nats-io/transport-node';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
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
  nc: NatsConnection;
  js: JetStreamClient;
}

/**
 * NATS JetStream: a publish to the URL's subject, confirmed by the stream's ack (which says the
 * message is stored). A subject no stream captures has no responder: a failed attempt that says
 * so. The connection never follows the servers a cluster advertises (those addresses were not
 * checked against the SSRF rules) and never reconnects on its own: a broken one is dropped and
 * the next attempt dials the checked address again.
 */
export class NatsDestination extends PooledDestination<Connection> {
  constructor(options: DialOptions) {
    super(options, (c) => c.nc.close().catch(() => {}));
  }

  publish(target: BrokerTarget, credentials: BrokerCredentials | null, message: BrokerMessage, tls: BrokerTls = {}): Promise<string> {
    const key = JSON.stringify([
      target.tls,
      target.host,
      target.port,
      credentials?.username,
      credentials?.password,
      ...(target.tls ? tlsKey(tls) : []),
    ]);
    return this.pool.use(
      key,
      () => this.open(target, credentials, tls),
      async ({ js }) => {
        const h = headers();
        for (const [name, value] of Object.entries(message.headers)) h.set(name, value);
        h.set('Content-Type', 'application/json');
        try {
          const ack = await js.publish(target.subject, message.body, { headers: h, timeout: this.options.connectTimeoutMs });
          return `Stored by JetStream: stream "${ack.stream}", sequence ${ack.seq}.`;
        } catch (err) {
          const text = (err as Error).message;
          // Nobody answered the publish: the client reports that as "jetstream is not enabled".
          if (/no responders|503|not enabled/i.test(text))
            throw new BrokerRefusal(
              `No JetStream stream captures the subject "${target.subject}" (or JetStream is off on that server): ${text}.`,
            );
          throw new BrokerRefusal(`JetStream did not store the message for "${target.subject}": ${text}`);
        }
      },
    );
  }

  private async open(target: BrokerTarget, credentials: BrokerCredentials | null, tls: BrokerTls): Promise<Connection> {
    const address = await resolveBrokerHost(target.host, this.options);
    const server = isIP(address) === 6 ? `[${address}]:${target.port}` : `${address}:${target.port}`;
    let nc: NatsConnection;
    try {
      nc = await connect({
        servers: server,
        name: 'payhooks',
        ...(credentials ? { user: credentials.username, pass: credentials.password } : {}),
        // tls://: TLS is required, the certificate checked against the host's name, with the
        // endpoint's own authorities and client certificate. (The options are passed through to
        // tls.connect; the type doesn't list servername.)
        ...(target.tls ? { tls: brokerTlsOptions(target.host, tls) as NodeConnectionOptions['tls'] } : {}),
        timeout: this.options.connectTimeoutMs,
        reconnect: false,
        ignoreClusterUpdates: true,
        noRandomize: true,
      });
    } catch (err) {
      const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
      if (e.cause?.code) throw e.cause; // a socket error: classified like HTTP's
      // The client's own connect timeout: the same `timeout` as any attempt that ran out.
      if (e.name === 'TimeoutError')
        throw Object.assign(new Error(`no answer from NATS at ${target.host}:${target.port} (${e.message})`), { code: 'ETIMEDOUT' });
      if (/authoriz|authentic|permission/i.test(e.message))
        throw new BrokerRefusal(`NATS at ${target.host}:${target.port} refused the credentials (${e.message}).`);
      throw new BrokerRefusal(`Could not connect to NATS at ${target.host}:${target.port}: ${e.message}`);
    }
    const conn: Connection = { nc, js: jetstream(nc) };
    void nc.closed().then(() => this.pool.forgetConnection(conn));
    return conn;
  }
}

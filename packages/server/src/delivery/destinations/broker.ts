import type { LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { rootCertificates, type ConnectionOptions } from 'node:tls';
import type { ClientCertificate, ErrorKind } from './attempt.ts';
import { ForbiddenAddressError, safeLookup, type Resolver } from '../safe-lookup.ts';
import { isForbiddenAddress } from '../../security/ip-ranges.ts';
import type { BrokerCredentials, BrokerTarget } from '../../endpoint-urls/broker-url.ts';

/** What a broker receives: the event's exact bytes and the headers an HTTP receiver would get. */
export interface BrokerMessage {
  body: Buffer;
  /** Service-Event-Id, Service-Signature (and traceparent when tracing): message headers. */
  headers: Record<string, string>;
  eventId: string;
}

/** An endpoint's own TLS for a broker with TLS (amqps://, tls://): authorities it trusts beside the public ones, a client certificate. */
export interface BrokerTls {
  trustedCas?: string | undefined;
  clientCertificate?: ClientCertificate | undefined;
}

/** What names a connection's TLS in its pool key: a change of either is another connection. */
export const tlsKey = (tls: BrokerTls) => [tls.trustedCas ?? null, tls.clientCertificate?.id ?? null];

/**
 * The TLS options for a broker connection to `host`: the certificate checked against its name
 * (servername; an IP literal is checked against the certificate's IP entries), the endpoint's own
 * authorities beside the public ones, its client certificate.
 */
export function brokerTlsOptions(host: string, tls: BrokerTls): ConnectionOptions {
  const options: ConnectionOptions = isIP(host) ? {} : { servername: host };
  if (tls.trustedCas !== undefined) options.ca = [...rootCertificates, tls.trustedCas];
  if (tls.clientCertificate !== undefined) Object.assign(options, { cert: tls.clientCertificate.cert, key: tls.clientCertificate.key });
  return options;
}

/**
 * A publish the broker refused or did not confirm (a nack, an unroutable message, a missing
 * exchange or stream, refused credentials): a failed attempt with the broker's own words.
 */
export class BrokerRefusal extends Error {
  constructor(
    message: string,
    readonly kind: ErrorKind = 'broker',
  ) {
    super(message);
    this.name = 'BrokerRefusal';
  }
}

/**
 * One kind of broker. Kafka or a cloud queue would be one more implementation of this and one
 * more scheme in endpoint-urls/broker-url.ts's BROKER_PROTOCOLS; the worker, the log and the schedule stay as they are.
 */
export interface BrokerDestination {
  /**
   * Publishes and resolves with a line for the delivery log once the broker confirmed it;
   * rejects otherwise. The caller enforces the attempt's deadline.
   */
  publish(target: BrokerTarget, credentials: BrokerCredentials | null, message: BrokerMessage, tls?: BrokerTls): Promise<string>;
  /** Connections open now (one per broker address and credentials). */
  readonly openConnections: number;
  close(): Promise<void>;
}

export interface DialOptions {
  allowPrivate: boolean;
  resolver?: Resolver | undefined;
  /** Opening a connection may take this long (the attempt's deadline bounds it anyway). */
  connectTimeoutMs: number;
  /** A connection unused this long is closed. */
  idleMs: number;
}

/**
 * The SSRF guard for brokers, as for HTTP (safe-lookup.ts): the host is resolved once, every
 * forbidden address dropped, and the connection is made to the address that passed, so a DNS
 * answer that changes in between can't point it elsewhere. TLS still checks the certificate
 * against the host's name (servername).
 */
export function resolveBrokerHost(host: string, options: Pick<DialOptions, 'allowPrivate' | 'resolver'>): Promise<string> {
  if (isIP(host) !== 0) {
    if (!options.allowPrivate && isForbiddenAddress(host)) return Promise.reject(new ForbiddenAddressError(host, [host]));
    return Promise.resolve(host);
  }
  const lookup = safeLookup(options.resolver, options.allowPrivate);
  return new Promise((resolve, reject) => {
    lookup(host, { all: true }, (err: Error | null, addresses: LookupAddress[]) => {
      if (err) reject(err);
      else resolve(addresses[0]!.address);
    });
  });
}

import type { ConnectionOptions } from 'node:tls';
import { BROKER_PROTOCOLS } from '../endpoint-urls/broker-url.ts';
import { DeadlineQueue } from './deadlines.ts';
import type { AttemptResult, Destination, SendRequest } from './destinations/attempt.ts';
import { BrokerDestinations } from './destinations/brokers.ts';
import { HttpDestination } from './destinations/http.ts';
import type { Resolver } from './safe-lookup.ts';

export interface SenderOptions {
  timeoutMs: number;
  allowPrivate: boolean;
  /** Most connections per origin (host:port). */
  connectionsPerOrigin: number;
  now: () => Date;
  /** DNS resolver, injectable so tests can point a name at a chosen address. */
  resolver?: Resolver;
  /** A broker connection unused this long is closed. */
  brokerIdleMs?: number;
  /** The operator's forward proxy for HTTP deliveries (brokers connect directly). */
  egressProxy?: URL | undefined;
  /** TLS options for https endpoints (tests: their own certificate authority). */
  tls?: ConnectionOptions | undefined;
}

/**
 * Makes one delivery attempt (spec 4.2, 5.1) at whichever destination the endpoint's URL names:
 * an HTTP endpoint, or a message broker. Every attempt shares one deadline queue, so one timer
 * serves them all. Every failure resolves as an AttemptResult; it never throws.
 */
export class Sender {
  private readonly http: HttpDestination;
  private readonly brokers: BrokerDestinations;

  constructor(private readonly options: SenderOptions) {
    const deadlines = new DeadlineQueue(options.timeoutMs);
    const common = { timeoutMs: options.timeoutMs, allowPrivate: options.allowPrivate, resolver: options.resolver, deadlines };
    this.http = new HttpDestination({
      ...common,
      connectionsPerOrigin: options.connectionsPerOrigin,
      proxy: options.egressProxy,
      tls: options.tls,
      now: () => options.now().getTime(),
    });
    this.brokers = new BrokerDestinations({ ...common, idleMs: options.brokerIdleMs });
  }

  send(req: SendRequest): Promise<AttemptResult> {
    return this.destinationOf(req.url).send(req, this.options.now(), performance.now());
  }

  /** Broker connections open now, by kind (for tests and the idle check). */
  brokerConnections(): Promise<Record<string, number>> {
    return this.brokers.openConnections();
  }

  async close(): Promise<void> {
    await Promise.all([this.http.close(), this.brokers.close()]);
  }

  /**
   * By the URL's scheme, read without parsing the URL (the hot path: one call per attempt, and
   * stored http(s) URLs are lower-case `http`: no allocation for them). Anything not a broker
   * scheme goes to HTTP, which refuses what isn't http(s) as an invalid URL.
   */
  private destinationOf(url: string): Destination {
    if (url.startsWith('http')) return this.http;
    const colon = url.indexOf(':');
    return colon > 0 && Object.hasOwn(BROKER_PROTOCOLS, url.slice(0, colon + 1).toLowerCase()) ? this.brokers : this.http;
  }
}

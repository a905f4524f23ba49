/**
 * Endpoint URLs that name a message broker instead of an HTTP receiver:
 *
 * - `amqp://host[:5672]/[vhost]?exchange=…&routing_key=…` and `amqps://` (RabbitMQ, AMQP 0-9-1):
 *   a publish to an exchange the merchant declared; payhooks never declares or changes it.
 * - `nats://host[:4222]?subject=…` and `tls://` (NATS JetStream): a publish to a subject a stream
 *   of the merchant's captures.
 *
 * The credentials (`user:password@`) are split off at registration: the stored URL never
 * carries them, they are sealed like signing secrets (`url_credentials_ciphertext`) and never
 * shown again. Kafka and cloud queues would be one more entry in BROKER_PROTOCOLS and one more
 * `BrokerDestination` (delivery/destinations/broker.ts).
 */

export type BrokerKind = 'amqp' | 'nats';

/** Scheme -> broker and whether the scheme is the TLS one (live endpoints need it). */
export const BROKER_PROTOCOLS: Readonly<Record<string, { kind: BrokerKind; tls: boolean; defaultPort: number }>> = {
  'amqp:': { kind: 'amqp', tls: false, defaultPort: 5672 },
  'amqps:': { kind: 'amqp', tls: true, defaultPort: 5671 },
  'nats:': { kind: 'nats', tls: false, defaultPort: 4222 },
  'tls:': { kind: 'nats', tls: true, defaultPort: 4222 },
};

export function isBrokerProtocol(protocol: string): boolean {
  return Object.hasOwn(BROKER_PROTOCOLS, protocol);
}

export interface BrokerTarget {
  kind: BrokerKind;
  tls: boolean;
  /** As in the URL (brackets of an IPv6 literal removed). */
  host: string;
  port: number;
  /** AMQP virtual host ('/' when the path is empty). */
  vhost: string;
  /** AMQP: the exchange ('' is RabbitMQ's default exchange, which routes by queue name). */
  exchange: string;
  /** AMQP: the routing key. */
  routingKey: string;
  /** NATS: the subject. */
  subject: string;
}

/** What is wrong with a broker URL, in words for the merchant (the caller adds the field). */
export class BrokerUrlError extends Error {}

const NATS_SUBJECT = /^[^\s*>.]+(\.[^\s*>.]+)*$/;
/** AMQP 0-9-1 short strings: at most 255 bytes. */
const SHORTSTR_MAX = 255;

/**
 * The target of a broker URL (credentials excluded), or a BrokerUrlError. The same parse runs
 * at registration (a friendly 400) and before every attempt (a stored row is never trusted).
 */
export function parseBrokerUrl(url: URL): BrokerTarget {
  const protocol = BROKER_PROTOCOLS[url.protocol];
  if (!protocol) throw new BrokerUrlError(`${url.protocol} is not a broker scheme (amqp, amqps, nats, tls).`);
  if (!url.hostname) throw new BrokerUrlError('url must name the broker host.');
  if (url.hash) throw new BrokerUrlError('url must not contain a #fragment.');
  const port = url.port ? Number(url.port) : protocol.defaultPort;
  const params = url.searchParams;
  const known = protocol.kind === 'amqp' ? ['exchange', 'routing_key'] : ['subject'];
  for (const name of new Set(params.keys())) {
    if (!known.includes(name))
      throw new BrokerUrlError(`url has an unknown query parameter "${name}"; a ${url.protocol}// url takes ${known.join(' and ')}.`);
    if (params.getAll(name).length > 1) throw new BrokerUrlError(`url gives "${name}" more than once.`);
  }
  const host = brokerHostname(url).replace(/^\[|\]$/g, '');
  if (protocol.kind === 'amqp') {
    const exchange = params.get('exchange');
    const routingKey = params.get('routing_key') ?? '';
    if (exchange === null)
      throw new BrokerUrlError('an amqp(s):// url needs ?exchange=… (an exchange you declared; payhooks never declares one).');
    if (Buffer.byteLength(exchange) > SHORTSTR_MAX || Buffer.byteLength(routingKey) > SHORTSTR_MAX)
      throw new BrokerUrlError('exchange and routing_key must be at most 255 bytes each.');
    const path = url.pathname.replace(/^\//, '');
    if (path.includes('/')) throw new BrokerUrlError('the url path is the virtual host: one segment; write a "/" in it as %2F.');
    let vhost: string;
    try {
      vhost = path === '' ? '/' : decodeURIComponent(path);
    } catch {
      throw new BrokerUrlError('the virtual host in the url path is not valid percent-encoding.');
    }
    return { kind: 'amqp', tls: protocol.tls, host, port, vhost, exchange, routingKey, subject: '' };
  }
  const subject = params.get('subject');
  if (!subject) throw new BrokerUrlError('a nats:// or tls:// url needs ?subject=… (a subject one of your JetStream streams captures).');
  if (!NATS_SUBJECT.test(subject) || subject.length > 255)
    throw new BrokerUrlError('subject must be a NATS subject without wildcards: tokens separated by dots, no spaces, * or >.');
  if (url.pathname !== '' && url.pathname !== '/')
    throw new BrokerUrlError('a nats:// or tls:// url has no path; give the subject as ?subject=….');
  return { kind: 'nats', tls: protocol.tls, host, port, vhost: '', exchange: '', routingKey: '', subject };
}

/**
 * A broker URL's host read the way an http(s) URL's host is. The URL standard parses hosts only
 * for its special schemes: an `amqp://` or `nats://` host comes through as written, so
 * `0x7f.1`, `%31%30.0.0.1` or full-width digits would name an internal address that no check
 * on the text recognises. Parsed as an http host it gets the same percent-decoding, IDNA
 * mapping and IPv4 number forms, so one address policy sees one spelling per address.
 */
export function brokerHostname(url: URL): string {
  try {
    return new URL(`http://${url.hostname}/`).hostname;
  } catch {
    throw new BrokerUrlError('url must name the broker by a valid host name or IP address.');
  }
}

/**
 * Splits `user:password@` off a broker URL: the URL to store and show (its host written as
 * `brokerHostname` reads it), and the credentials to seal (null when there are none).
 * Percent-encoding is undone for the credentials only.
 */
export function splitCredentials(url: URL): { url: string; credentials: { username: string; password: string } | null } {
  // Stored with the host the address policy checked, so the broker reached is the one allowed.
  const host = brokerHostname(url);
  if (host !== url.hostname) {
    url = new URL(url.href);
    url.hostname = host;
  }
  if (!url.username && !url.password) return { url: url.href, credentials: null };
  let credentials: { username: string; password: string };
  try {
    credentials = { username: decodeURIComponent(url.username), password: decodeURIComponent(url.password) };
  } catch {
    throw new BrokerUrlError('the credentials in the url are not valid percent-encoding.');
  }
  const bare = new URL(url.href);
  bare.username = '';
  bare.password = '';
  return { url: bare.href, credentials };
}

export interface BrokerCredentials {
  username: string;
  password: string;
}

/** The sealed form's plaintext: JSON, so any character survives. */
export const encodeCredentials = (c: BrokerCredentials): string => JSON.stringify([c.username, c.password]);

export function decodeCredentials(plaintext: string): BrokerCredentials {
  const [username, password] = JSON.parse(plaintext) as [string, string];
  return { username, password };
}

/** The associated data of a sealed credential: not the signing secret's, so the two never swap. */
export const credentialsAad = (endpointId: string): string => `${endpointId}:url_credentials`;

/**
 * The broker a URL connects to (scheme, host, port, virtual host), which its credentials belong
 * to; null for a URL that is not a broker's. Exchange, routing key and subject are not part of it.
 */
export function brokerIdentity(raw: string): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return null;
  }
  if (!isBrokerProtocol(url.protocol)) return null;
  try {
    const t = parseBrokerUrl(url);
    return JSON.stringify([url.protocol, t.host.toLowerCase(), t.port, t.vhost]);
  } catch {
    return null;
  }
}

import { isIP } from 'node:net';
import { AppError } from '../errors.ts';
import { isForbiddenAddress } from './ip-ranges.ts';
import type { Environment } from '../db/schema.ts';
import { BrokerUrlError, BROKER_PROTOCOLS, isBrokerProtocol, parseBrokerUrl, splitCredentials } from '../endpoint-urls/broker-url.ts';

export const MAX_URL_LENGTH = 2048;

export interface UrlPolicy {
  /** Live endpoints may use plain http (dev mode or PAYHOOKS_ALLOW_HTTP_URLS). */
  allowHttp: boolean;
  /** Private, loopback and metadata targets allowed (dev mode or PAYHOOKS_ALLOW_PRIVATE_URLS). */
  allowPrivate: boolean;
}

export interface ValidatedUrl {
  /** The URL to store and show: a broker URL's credentials are split off. */
  url: string;
  /** A broker URL's `user:password@`, to seal (never stored or shown in clear). */
  credentials: { username: string; password: string } | null;
}

/**
 * Checks an endpoint URL when it is registered: http(s), or a message broker's (amqp, amqps,
 * nats, tls; endpoint-urls/broker-url.ts). This is the early, friendly check; the one that
 * counts against SSRF runs again on the resolved address at connect time, because DNS can
 * change after registration.
 */
export function validateEndpointUrl(raw: string, environment: Environment, policy: UrlPolicy): ValidatedUrl {
  const bad = (code: string, message: string, kind: 'invalid_request' | 'unprocessable' = 'invalid_request') =>
    new AppError(kind, code, message, { param: 'url' });
  if (raw.length > MAX_URL_LENGTH) throw bad('url_invalid', `url must be at most ${MAX_URL_LENGTH} characters.`);
  // The URL parser would silently strip or percent-encode these, so the stored URL would not be
  // the one checked (and NUL can't be stored at all): refuse them and ask for an encoded URL.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (/[\u0000-\u0020\u007f]/.test(raw))
    throw bad('url_invalid', 'url must not contain spaces or control characters; percent-encode them.');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw bad('url_invalid', 'url must be an absolute http:// or https:// URL (or amqps://, tls:// for a message broker).');
  }
  const broker = isBrokerProtocol(url.protocol);
  if (url.protocol !== 'https:' && url.protocol !== 'http:' && !broker)
    throw bad('url_invalid', 'url must use http or https (or amqp, amqps, nats, tls for a message broker).');
  let credentials: ValidatedUrl['credentials'] = null;
  // The host as an http(s) URL's is read, whatever the scheme, so one policy sees one spelling.
  let hostname = url.hostname;
  if (broker) {
    try {
      hostname = parseBrokerUrl(url).host;
      ({ url: raw, credentials } = splitCredentials(url));
    } catch (err) {
      if (err instanceof BrokerUrlError) throw bad('url_invalid', err.message);
      throw err;
    }
  } else if (url.username || url.password)
    throw bad('url_invalid', 'url must not contain credentials (user:password@); authenticate with the signature instead.');
  if (!url.hostname) throw bad('url_invalid', 'url must name a host.');
  if (url.hash) throw bad('url_invalid', 'url must not contain a #fragment.');
  if (environment === 'live' && url.protocol === 'http:' && !policy.allowHttp) {
    throw bad('url_insecure', 'Live endpoints must use https. Use a sandbox key for plain-http testing.', 'unprocessable');
  }
  if (environment === 'live' && broker && !BROKER_PROTOCOLS[url.protocol]!.tls && !policy.allowHttp) {
    throw bad(
      'url_insecure',
      'Live broker endpoints must use TLS: amqps:// for RabbitMQ, tls:// for NATS. Use a sandbox key for plain-text testing.',
      'unprocessable',
    );
  }
  if (!policy.allowPrivate) {
    // `localhost.` is `localhost`: a fully-qualified name's trailing dot must not slip past.
    const host = hostname
      .replace(/^\[|\]$/g, '')
      .replace(/\.+$/, '')
      .toLowerCase();
    const literal = isIP(host) !== 0;
    if ((literal && isForbiddenAddress(host)) || host === 'localhost' || host.endsWith('.localhost') || host.endsWith('.internal')) {
      throw bad(
        'url_not_allowed',
        `url points at a private or local address (${host}); webhooks are delivered over the public internet.`,
        'unprocessable',
      );
    }
  }
  return { url: raw, credentials };
}

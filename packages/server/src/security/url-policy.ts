import { isIP } from 'node:net';
import { AppError } from '../errors.ts';
import { isForbiddenAddress } from './ip-ranges.ts';
import type { Environment } from '../db/schema.ts';

export const MAX_URL_LENGTH = 2048;

export interface UrlPolicy {
  /** Live endpoints may use plain http (dev mode or PAYHOOKS_ALLOW_HTTP_URLS). */
  allowHttp: boolean;
  /** Private, loopback and metadata targets allowed (dev mode or PAYHOOKS_ALLOW_PRIVATE_URLS). */
  allowPrivate: boolean;
}

/**
 * Checks an endpoint URL when it is registered. This is the early, friendly check; the one
 * that counts against SSRF runs again on the resolved address at connect time, because DNS
 * can change after registration.
 */
export function validateEndpointUrl(raw: string, environment: Environment, policy: UrlPolicy): string {
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
    throw bad('url_invalid', 'url must be an absolute http:// or https:// URL.');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw bad('url_invalid', 'url must use http or https.');
  if (url.username || url.password)
    throw bad('url_invalid', 'url must not contain credentials (user:password@); authenticate with the signature instead.');
  if (!url.hostname) throw bad('url_invalid', 'url must name a host.');
  if (url.hash) throw bad('url_invalid', 'url must not contain a #fragment.');
  if (environment === 'live' && url.protocol === 'http:' && !policy.allowHttp) {
    throw bad('url_insecure', 'Live endpoints must use https. Use a sandbox key for plain-http testing.', 'unprocessable');
  }
  if (!policy.allowPrivate) {
    // `localhost.` is `localhost`: a fully-qualified name's trailing dot must not slip past.
    const host = url.hostname
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
  return raw;
}

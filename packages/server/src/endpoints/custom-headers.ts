import { AppError } from '../errors.ts';

/**
 * An endpoint's own request headers: `"headers": {"X-Name": "value"}`, set by
 * the merchant, sent with every attempt beside the contract's headers, never signed
 * (docs/decisions/custom-request-headers.md).
 */

/** Most headers an endpoint may have. */
export const MAX_CUSTOM_HEADERS = 20;
/** Most bytes of names and values together (all ASCII: characters are bytes). */
export const MAX_CUSTOM_HEADER_BYTES = 8 * 1024;

/** An RFC 9110 token (section 5.6.2): what a field name may be. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/**
 * Printable ASCII, with spaces and tabs inside but not at either end: HTTP drops a value's
 * outer whitespace, so the receiver would see something other than what the log shows. No CR,
 * LF, NUL or other control character (they would end or corrupt the header), and nothing past
 * ASCII (no one agrees how to encode it on the wire).
 */
const VALUE = /^(?:[\x21-\x7e](?:[\x20-\x7e\t]*[\x21-\x7e])?)?$/;

/**
 * Names a merchant can't set, lower case: what payhooks sends itself (the contract's headers, the
 * Standard Webhooks headers, Content-Type, User-Agent, the trace context), the hop-by-hop headers
 * (RFC 9110 section 7.6.1), and headers that describe the connection or the body rather than the
 * message (Host, Content-Length, Content-Encoding, Expect).
 */
const RESERVED = new Set([
  'content-type',
  'user-agent',
  'traceparent',
  'tracestate',
  'connection',
  'keep-alive',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
  'content-encoding',
  'expect',
]);
/**
 * Whole families: `Service-` is the contract's (Service-Event-Id, Service-Signature, and any it
 * adds), `Webhook-` the Standard Webhooks specification's (webhook-id, webhook-timestamp,
 * webhook-signature), `Proxy-` hop-by-hop. Refused whether or not the endpoint has
 * `standard_webhooks` on, so turning it on later never collides with a stored header.
 */
const RESERVED_PREFIXES = ['service-', 'webhook-', 'proxy-'];

/** Why a header name is refused, or null when it may be set. */
export function reservedHeader(name: string): string | null {
  const lower = name.toLowerCase();
  if (RESERVED.has(lower)) return `'${name}' is set by payhooks or by HTTP itself`;
  const prefix = RESERVED_PREFIXES.find((p) => lower.startsWith(p));
  if (prefix === 'proxy-') return `'${name}' is a hop-by-hop header`;
  if (prefix === 'service-') return `'${name}': Service-* headers belong to the webhook contract`;
  if (prefix === 'webhook-') return `'${name}': webhook-* headers belong to the Standard Webhooks specification`;
  return null;
}

const refuse = (code: string, message: string, param: string) => new AppError('invalid_request', code, message, { param });

/**
 * The headers to store for what a request gave: null (none) for null or `{}`; otherwise the
 * names and values as given, checked. Refusals are 400s with a code a client can act on.
 */
export function validateCustomHeaders(input: Record<string, string> | null): Record<string, string> | null {
  if (input === null) return null;
  const entries = Object.entries(input);
  if (entries.length === 0) return null;
  if (entries.length > MAX_CUSTOM_HEADERS)
    throw refuse('too_many_custom_headers', `An endpoint takes at most ${MAX_CUSTOM_HEADERS} headers (got ${entries.length}).`, 'headers');
  const seen = new Map<string, string>();
  let bytes = 0;
  for (const [name, value] of entries) {
    const param = `headers[${name}]`;
    if (!TOKEN.test(name))
      throw refuse(
        'header_name_invalid',
        `Invalid header name ${JSON.stringify(name)}: a name is letters, digits and ! # $ % & ' * + - . ^ _ \` | ~ only.`,
        param,
      );
    const reserved = reservedHeader(name);
    if (reserved !== null) throw refuse('header_reserved', `Header ${reserved}: it can't be set on an endpoint.`, param);
    const lower = name.toLowerCase();
    const earlier = seen.get(lower);
    if (earlier !== undefined)
      throw refuse('header_duplicate', `Headers '${earlier}' and '${name}' are the same header (names are case-insensitive).`, param);
    seen.set(lower, name);
    if (typeof value !== 'string' || !VALUE.test(value))
      throw refuse(
        'header_value_invalid',
        `Invalid value for header '${name}': printable ASCII only (spaces and tabs inside), with no CR, LF, NUL or other control character and no space at either end.`,
        param,
      );
    bytes += name.length + value.length;
  }
  if (bytes > MAX_CUSTOM_HEADER_BYTES)
    throw refuse(
      'custom_headers_too_large',
      `An endpoint's headers take at most ${MAX_CUSTOM_HEADER_BYTES} bytes of names and values together (got ${bytes}).`,
      'headers',
    );
  return Object.fromEntries(entries);
}

/**
 * Custom headers as the audit trail, operational events and roles that can't edit the endpoint
 * see them: the names, each value redacted (a merchant's header often carries a credential for
 * their receiver, e.g. Authorization).
 */
export function redactHeaderValues(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.keys(headers).map((name) => [name, REDACTED]));
}

export const REDACTED = '[redacted]';

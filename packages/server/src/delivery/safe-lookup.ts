import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions, type LookupOneOptions } from 'node:dns';
import { isIP } from 'node:net';
import { isForbiddenAddress } from '../security/ip-ranges.ts';

/** Raised when every address a host resolves to is in a forbidden range (SSRF guard). */
export class ForbiddenAddressError extends Error {
  readonly code = 'PAYHOOKS_FORBIDDEN_ADDRESS';
  constructor(host: string, addresses: string[]) {
    super(
      `Refused to connect to ${host}: it resolves to ${addresses.join(', ')}, a private, loopback, link-local or metadata address. Set PAYHOOKS_ALLOW_PRIVATE_URLS=true to allow it.`,
    );
    this.name = 'ForbiddenAddressError';
  }
}

type Resolver = (
  hostname: string,
  options: LookupAllOptions,
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

const systemResolver: Resolver = (hostname, options, callback) => dnsLookup(hostname, options, callback);

/**
 * A `lookup` for net/tls.connect that drops forbidden addresses. Because the socket connects to
 * exactly the address this returns, the check and the connection use the same resolution:
 * there is no window for DNS rebinding between them. IP-literal hosts never reach `lookup`, so
 * the sender checks those itself (`checkLiteralHost`).
 */
export function safeLookup(resolver: Resolver = systemResolver, allowPrivate = false) {
  // biome-ignore lint/suspicious/noExplicitAny: the callback's shape depends on options.all, as in net's LookupFunction
  return (hostname: string, options: LookupOneOptions | LookupAllOptions, callback: (...args: any[]) => void): void => {
    resolver(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err);
      const allowed = allowPrivate ? addresses : addresses.filter((a) => !isForbiddenAddress(a.address));
      if (allowed.length === 0)
        return callback(
          new ForbiddenAddressError(
            hostname,
            addresses.map((a) => a.address),
          ),
        );
      if ((options as LookupAllOptions).all) return callback(null, allowed);
      return callback(null, allowed[0]!.address, allowed[0]!.family);
    });
  };
}

/** The check for URLs whose host is an IP literal (no DNS lookup happens for those). */
export function checkLiteralHost(hostname: string): void {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) !== 0 && isForbiddenAddress(host)) throw new ForbiddenAddressError(host, [host]);
}

export type { Resolver };

import { connect as netConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { checkLiteralHost, safeLookup, type Resolver } from './safe-lookup.ts';

/**
 * Deliveries through the operator's forward proxy (PAYHOOKS_EGRESS_PROXY), so they leave from
 * the proxy's fixed addresses. The SSRF rules are ours to keep, not the proxy's: the target's
 * name is resolved and checked here (safe-lookup.ts), and the proxy is asked for the checked
 * address, never the name, so it can't be rebound to an internal address between our check and
 * its connection. https goes through a CONNECT tunnel to `address:port` with TLS (SNI and
 * certificate name) for the hostname; plain http (development) is sent in absolute form to
 * `http://address:port/path` with `Host` the hostname.
 */

/** The proxy answered a CONNECT with something other than 200: the attempt's connection failed. */
export class ProxyRefusal extends Error {
  readonly code = 'PAYHOOKS_PROXY_REFUSED';
}

/** Resolves a target host to the one address we allow a connection to (literal hosts as they are). */
export function targetResolver(resolver: Resolver | undefined, allowPrivate: boolean): (hostname: string) => Promise<string> {
  const lookup = safeLookup(resolver, allowPrivate);
  return (hostname) => {
    const host = hostname.replace(/^\[|\]$/g, '');
    if (isIP(host) !== 0) {
      if (!allowPrivate) checkLiteralHost(host);
      return Promise.resolve(host);
    }
    return new Promise((resolve, reject) => {
      lookup(host, {}, (err: Error | null, address: string) => (err ? reject(err) : resolve(address)));
    });
  };
}

/** `host:port` as a request target or Host header: an IPv6 address in brackets. */
export const authority = (host: string, port: number | string): string => `${isIP(host) === 6 ? `[${host}]` : host}:${port}`;

/** The proxy's own address as the operator configured it: no SSRF check applies to it. */
export function describeProxy(proxy: URL): string {
  return `the egress proxy ${proxy.host}`;
}

/** The largest CONNECT answer head we read. */
const HEAD_LIMIT = 16 * 1024;

interface ConnectOptions {
  hostname: string;
  protocol: string;
  port: string;
  servername?: string | null;
}
type Callback = (err: Error | null, socket: Socket | null) => void;

/**
 * An undici `connect` function: resolve and check the target, open a CONNECT tunnel to its
 * address through the proxy, and (https) start TLS for the hostname inside it.
 */
export function tunnelConnector(options: {
  proxy: URL;
  resolve: (hostname: string) => Promise<string>;
  timeoutMs: number;
  tls?: ConnectionOptions | undefined;
}) {
  const { proxy, resolve, timeoutMs } = options;
  const proxyPort = Number(proxy.port || 80);
  const proxyAuth = proxyAuthorization(proxy);
  return (opts: ConnectOptions, callback: Callback): void => {
    let done = false;
    const finish = (err: Error | null, socket: Socket | null) => {
      if (done) return;
      done = true;
      callback(err, socket);
    };
    const host = opts.hostname.replace(/^\[|\]$/g, '');
    const port = opts.port || (opts.protocol === 'https:' ? '443' : '80');
    resolve(host).then(
      (address) => {
        const socket = netConnect({ host: proxy.hostname.replace(/^\[|\]$/g, ''), port: proxyPort, noDelay: true });
        // Both stay attached once the socket is handed over, doing nothing then: the raw socket is
        // never without an error listener while undici (or TLS) takes it over.
        socket.setTimeout(timeoutMs, () => {
          if (!done) socket.destroy(Object.assign(new Error(`${describeProxy(proxy)} did not answer in time`), { code: 'ETIMEDOUT' }));
        });
        const fail = (err: NodeJS.ErrnoException) => {
          if (done) return;
          socket.destroy();
          const e = Object.assign(new Error(`${describeProxy(proxy)}: ${err.message}`), { code: err.code });
          finish(err instanceof ProxyRefusal ? err : e, null);
        };
        socket.on('error', fail);
        socket.once('connect', () => {
          const target = authority(address, port);
          socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${proxyAuth ? `Proxy-Authorization: ${proxyAuth}\r\n` : ''}\r\n`);
        });
        let head = Buffer.alloc(0);
        const onData = (chunk: Buffer) => {
          head = Buffer.concat([head, chunk]);
          const end = head.indexOf('\r\n\r\n');
          if (end < 0) {
            if (head.length > HEAD_LIMIT) fail(new ProxyRefusal(`${describeProxy(proxy)} sent an oversized answer to CONNECT`));
            return;
          }
          socket.off('data', onData);
          const statusLine = head.subarray(0, head.indexOf('\r\n')).toString('latin1');
          const status = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(statusLine);
          if (status?.[1] !== '200') {
            const answer = status ? `${status[1]}${status[2] ? ` ${status[2]}` : ''}` : JSON.stringify(statusLine.slice(0, 100));
            fail(new ProxyRefusal(`${describeProxy(proxy)} refused to connect to ${authority(address, port)} (${host}): ${answer}`));
            return;
          }
          const rest = head.subarray(end + 4);
          if (rest.length > 0) socket.unshift(rest);
          socket.setTimeout(0);
          if (opts.protocol !== 'https:') {
            finish(null, socket);
            return;
          }
          const servername = opts.servername || (isIP(host) === 0 ? host : undefined);
          const secure = tlsConnect({
            ...options.tls,
            socket,
            // The certificate is checked against `host` (Node takes "localhost" when it is
            // missing, which would refuse an IP-literal URL's own certificate).
            host,
            ...(servername ? { servername } : {}),
            ALPNProtocols: ['http/1.1'],
          });
          const tlsFailed = (err: Error) => {
            secure.destroy();
            finish(err, null);
          };
          secure.once('error', tlsFailed);
          secure.once('secureConnect', () => {
            secure.off('error', tlsFailed);
            finish(null, secure);
          });
        };
        socket.on('data', onData);
      },
      (err: Error) => finish(err, null),
    );
  };
}

/** `Proxy-Authorization` for a proxy URL with `user:password@`, or null. */
export function proxyAuthorization(proxy: URL): string | null {
  if (!proxy.username && !proxy.password) return null;
  const credentials = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
  return `Basic ${Buffer.from(credentials).toString('base64')}`;
}

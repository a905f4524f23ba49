import { rootCertificates, type ConnectionOptions } from 'node:tls';
import { Agent, Pool, type Dispatcher, type buildConnector } from 'undici';
import { EVENT_ID_HEADER, SIGNATURE_HEADER } from '@payhooks/contract';
import { checkLiteralHost, ForbiddenAddressError, safeLookup, type Resolver } from '../safe-lookup.ts';
import { authority, describeProxy, targetResolver, tunnelConnector } from '../egress-proxy.ts';
import { DeadlineQueue, type Deadline } from '../deadlines.ts';
import { PAUSING_STATUSES } from '../retry-after.ts';
import { AccessTokens, TokenEndpointError, type OAuthClient } from './access-tokens.ts';
import {
  addEndpointHeaders,
  classify,
  failed,
  noteEndpointHeaders,
  signAttempt,
  signStandardAttempt,
  type AttemptResult,
  type ClientCertificate,
  type Destination,
  type SendRequest,
} from './attempt.ts';

/** Bytes of a response body kept for the delivery log. */
export const RESPONSE_BODY_LIMIT = 16 * 1024;
/** After the status arrives, how long the log may wait for body bytes (never past the deadline). */
const BODY_GRACE_MS = 1000;

export const USER_AGENT = 'payhooks/0.1 (+webhooks)';

/** Endpoints with TLS of their own (authorities, a client certificate) whose connections one process keeps (agentFor). */
const TLS_AGENTS_MAX = 200;
/** How long a receiver that took only the replaced client certificate gets it first (sendWithEither). */
export const CERTIFICATE_PREFERENCE_MS = 60_000;

export interface HttpOptions {
  timeoutMs: number;
  allowPrivate: boolean;
  /** Most connections per origin (host:port). */
  connectionsPerOrigin: number;
  resolver?: Resolver | undefined;
  /** The attempt deadline, one timer for all attempts (they all last at most `timeoutMs`). */
  deadlines: DeadlineQueue;
  /** The operator's forward proxy (PAYHOOKS_EGRESS_PROXY): every request goes through it (egress-proxy.ts). */
  proxy?: URL | undefined;
  /** TLS options for https targets (tests trust their own certificate authority with `ca`). */
  tls?: ConnectionOptions | undefined;
  /** The clock's time in ms: when an OAuth 2.0 access token is due for renewal. */
  now?: (() => number) | undefined;
}

/**
 * HTTP endpoints (spec 4.2, 5.1): a POST of the stored bytes with `Service-Event-Id` and a
 * `Service-Signature` made now (and, when the endpoint asks, the Standard Webhooks headers and its
 * own headers). Success is any 2xx status within the deadline; redirects are not followed (a 3xx
 * is a failure).
 */
export class HttpDestination implements Destination {
  private readonly agent: Agent;
  /** The response-body grace after the status arrives, one timer likewise. */
  private readonly bodyGraces = new DeadlineQueue(BODY_GRACE_MS);
  /** Endpoint URLs already parsed and checked (literal address, scheme): one parse per URL, not per attempt. */
  private readonly targets = new Map<string, HttpTarget>();
  /** With a proxy: plain-http requests in absolute form to the proxy, and how their targets are checked. */
  private readonly viaProxy: { pool: Pool; origin: string; resolve: (hostname: string) => Promise<string>; note: string } | null;
  /** How a target's name is resolved and checked behind the egress proxy (one for every agent). */
  private readonly resolveTarget: (hostname: string) => Promise<string>;
  /** Agents of endpoints with TLS of their own (authorities, a client certificate), by both (agentFor). */
  private readonly tlsAgents = new Map<string, Agent>();
  /** Endpoints in a certificate overlap whose receiver took only the previous certificate: until when it goes first. */
  private readonly previousPreferred = new Map<string, number>();
  /** Receivers' OAuth 2.0 access tokens, shared by this process's attempts. */
  private readonly tokens: AccessTokens;

  constructor(private readonly options: HttpOptions) {
    this.tokens = new AccessTokens(options.now ?? Date.now);
    const { proxy } = options;
    const timeouts = {
      keepAliveTimeout: 4_000,
      keepAliveMaxTimeout: 30_000,
      connectTimeout: options.timeoutMs,
      headersTimeout: 0,
      bodyTimeout: 0,
    };
    const resolve = targetResolver(options.resolver, options.allowPrivate);
    this.resolveTarget = resolve;
    this.viaProxy = proxy
      ? {
          pool: new Pool(proxy.origin, { connections: options.connectionsPerOrigin, ...timeouts }),
          origin: proxy.origin,
          resolve,
          note: `Through ${describeProxy(proxy)}: `,
        }
      : null;
    this.agent = this.makeAgent(options.tls);
  }

  /** Connections with these TLS options (the SSRF guard, or the egress proxy's tunnel, either way). */
  private makeAgent(tls: ConnectionOptions | undefined): Agent {
    const { options } = this;
    const { proxy } = options;
    return new Agent({
      connections: options.connectionsPerOrigin,
      keepAliveTimeout: 4_000,
      keepAliveMaxTimeout: 30_000,
      connectTimeout: options.timeoutMs,
      // The attempt's deadline (`deadlines`, one timer for all attempts) covers headers and
      // body; undici's own two timers would be set and cleared again on every request.
      headersTimeout: 0,
      bodyTimeout: 0,
      connect: proxy
        ? (tunnelConnector({
            proxy,
            resolve: this.resolveTarget,
            timeoutMs: options.timeoutMs,
            tls,
          }) as buildConnector.connector)
        : { lookup: safeLookup(options.resolver, options.allowPrivate), ...tls },
    });
  }

  /**
   * The connections for an endpoint with TLS of its own: certificate authorities it trusts (a
   * private PKI) beside the public ones, hostname checked as always, and a client certificate
   * (mutual TLS). One agent per such pair, so its connections (and their handshakes) are kept
   * alive and reused like everyone else's. The least recently made goes when there are too many
   * (closing lets its requests finish).
   */
  private agentFor(req: SendRequest): Agent {
    const pem = req.trustedCas;
    const client = req.clientCertificate;
    if (pem === undefined && client === undefined) return this.agent;
    const key = `${pem ?? ''}\n${client?.id ?? ''}`;
    let agent = this.tlsAgents.get(key);
    if (agent === undefined) {
      const tls: ConnectionOptions = { ...this.options.tls };
      if (pem !== undefined) {
        const base = this.options.tls?.ca;
        tls.ca = [...(base === undefined ? rootCertificates : [base].flat()), pem] as string[];
      }
      if (client !== undefined) Object.assign(tls, { cert: client.cert, key: client.key });
      agent = this.makeAgent(tls);
      if (this.tlsAgents.size >= TLS_AGENTS_MAX) {
        const [oldest, old] = this.tlsAgents.entries().next().value as [string, Agent];
        this.tlsAgents.delete(oldest);
        void old.close().catch(() => {});
      }
      this.tlsAgents.set(key, agent);
    }
    return agent;
  }

  /**
   * Not an async function, and one promise per attempt: the worker makes thousands a second.
   */
  send(req: SendRequest, startedAt: Date, t0: number): Promise<AttemptResult> {
    if (req.oauth2 !== undefined) return this.sendWithToken(req, req.oauth2, startedAt, t0);
    if (req.previousClientCertificate !== undefined && req.clientCertificate !== undefined)
      return this.sendWithEither(req, req.clientCertificate, req.previousClientCertificate, startedAt, t0);
    return this.attempt(req, startedAt, t0, null);
  }

  /**
   * An attempt while a replaced client certificate's overlap lasts: the new certificate, and if
   * the receiver refuses the handshake (a `tls` failure or a reset before any answer), the
   * previous one, within the same attempt. Once the previous one got through, it goes first for
   * CERTIFICATE_PREFERENCE_MS, so a gateway that doesn't trust the new certificate yet costs one
   * refused handshake a minute, not one per attempt.
   */
  private async sendWithEither(
    req: SendRequest,
    current: ClientCertificate,
    previous: ClientCertificate,
    startedAt: Date,
    t0: number,
  ): Promise<AttemptResult> {
    const now = this.options.now ?? Date.now;
    const previousFirst = (this.previousPreferred.get(current.id) ?? 0) > now();
    const [first, second] = previousFirst ? [previous, current] : [current, previous];
    const tried = await this.attempt({ ...req, clientCertificate: first }, startedAt, t0, null);
    if (tried.statusCode !== null || (tried.errorKind !== 'tls' && tried.errorKind !== 'connection_reset')) return tried;
    const result = await this.attempt({ ...req, clientCertificate: second }, startedAt, t0, null);
    if (result.statusCode !== null) {
      if (second === previous) {
        if (this.previousPreferred.size >= TLS_AGENTS_MAX) this.previousPreferred.clear();
        this.previousPreferred.set(current.id, now() + CERTIFICATE_PREFERENCE_MS);
      } else this.previousPreferred.delete(current.id);
    }
    return result;
  }

  /**
   * An attempt to a receiver behind an OAuth 2.0 gateway: with the client's access token (held,
   * or asked for now through the same connections as the receiver's: the SSRF guard, the egress
   * proxy, the endpoint's own authorities). A 401 means the gateway no longer takes the token
   * (revoked, or its clock ahead of ours): a new one is asked for and the request sent once more,
   * within the same attempt. No token, no request: the attempt fails as `authentication_failed`.
   */
  private async sendWithToken(req: SendRequest, client: OAuthClient, startedAt: Date, t0: number): Promise<AttemptResult> {
    const transport = (url: string, headers: Record<string, string>, body: string) =>
      this.request(url, headers, body, AbortSignal.timeout(this.options.timeoutMs), this.agentFor(req));
    let token: string;
    try {
      token = await this.tokens.get(client, transport);
      const first = await this.attempt(req, startedAt, t0, token);
      if (first.statusCode !== 401) return first;
      this.tokens.refused(client, token);
      token = await this.tokens.get(client, transport);
    } catch (err) {
      // Only the token request fails here: `attempt` never rejects for the receiver's sake.
      if (!(err instanceof TokenEndpointError)) throw err;
      return failed(startedAt, Math.round(performance.now() - t0), 'authentication_failed', err.message);
    }
    return this.attempt(req, startedAt, t0, token);
  }

  /** The attempt's POST, with `Authorization: Bearer <token>` when `bearer` is given. */
  private attempt(req: SendRequest, startedAt: Date, t0: number, bearer: string | null): Promise<AttemptResult> {
    let url: HttpTarget;
    try {
      url = this.target(req.url);
    } catch (err) {
      const elapsed = Math.round(performance.now() - t0);
      if (err instanceof ForbiddenAddressError) return Promise.resolve(failed(startedAt, elapsed, 'forbidden_address', err.message));
      return Promise.resolve(failed(startedAt, elapsed, 'invalid_url', `The endpoint URL is not a valid http(s) URL: ${req.url}`));
    }
    let bytes: Buffer;
    let signature: string;
    let webhookSignature: string | null;
    try {
      bytes = Buffer.from(req.body, 'utf8');
      signature = signAttempt(req, startedAt, bytes);
      webhookSignature = signStandardAttempt(req, startedAt, bytes);
    } catch (err) {
      // No secret to sign with is a fault of ours, not the endpoint's: not an attempt outcome.
      return Promise.reject(err);
    }
    const target = url;
    return new Promise<AttemptResult>((resolve) => {
      const handler = new AttemptHandler(startedAt, t0, this.options.timeoutMs, this.bodyGraces, signature, req, webhookSignature, resolve);
      handler.deadline = this.options.deadlines.add(() => handler.timeUp());
      const dispatch = (dispatcher: Dispatcher, origin: string, path: string, host?: string) => {
        const headers: Record<string, string> = req.traceparent
          ? {
              'content-type': 'application/json',
              'user-agent': USER_AGENT,
              [EVENT_ID_HEADER]: req.eventId,
              [SIGNATURE_HEADER]: signature,
              traceparent: req.traceparent,
            }
          : {
              'content-type': 'application/json',
              'user-agent': USER_AGENT,
              [EVENT_ID_HEADER]: req.eventId,
              [SIGNATURE_HEADER]: signature,
            };
        // Most endpoints ask for neither: one check each, no more.
        if (webhookSignature !== null || req.headers) addEndpointHeaders(headers, req, startedAt, webhookSignature);
        if (bearer !== null) headers.authorization = `Bearer ${bearer}`;
        if (host) headers.host = host;
        dispatcher.dispatch({ origin, path, method: 'POST', headers, body: bytes }, handler);
      };
      const proxy = this.viaProxy;
      if (!proxy || !target.plain) {
        dispatch(this.agentFor(req), target.origin, target.path);
        return;
      }
      // Plain http through the proxy: absolute form to the address checked here, Host the name.
      proxy.resolve(target.hostname).then(
        (address) => {
          // From here a connection error is the proxy's (ours, such as DNS, carry no note).
          handler.note = proxy.note;
          dispatch(proxy.pool, proxy.origin, `http://${authority(address, target.port)}${target.path}`, target.host);
        },
        (err: Error) => handler.onError(err),
      );
    });
  }

  /**
   * A POST with the caller's own headers, through the same transport as attempts (the SSRF
   * guard, the egress proxy, the TLS options): for an OAuth 2.0 token request, and for
   * `payhooks check-receiver`, whose deliveries are wrong on purpose in ways `send` never is.
   */
  async request(
    url: string,
    headers: Record<string, string>,
    body: string,
    signal: AbortSignal,
    agent: Agent = this.agent,
  ): Promise<Dispatcher.ResponseData> {
    const target = this.target(url);
    const proxy = this.viaProxy;
    if (!proxy || !target.plain) return agent.request({ origin: target.origin, path: target.path, method: 'POST', headers, body, signal });
    const address = await proxy.resolve(target.hostname);
    return proxy.pool.request({
      path: `http://${authority(address, target.port)}${target.path}`,
      method: 'POST',
      headers: { ...headers, host: target.host },
      body,
      signal,
    });
  }

  async close(): Promise<void> {
    await Promise.all([this.agent.close(), this.viaProxy?.pool.close(), ...[...this.tlsAgents.values()].map((a) => a.close())]);
  }

  /** The URL parsed and checked (literal address, scheme), remembered: one parse per URL, not per attempt. */
  private target(raw: string): HttpTarget {
    let url = this.targets.get(raw);
    if (url) return url;
    const parsed = new URL(raw);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('not http(s)');
    // Checked before it is remembered: a forbidden literal is refused on every attempt.
    if (!this.options.allowPrivate) checkLiteralHost(parsed.hostname);
    url = {
      origin: parsed.origin,
      path: parsed.search ? `${parsed.pathname}${parsed.search}` : parsed.pathname,
      plain: parsed.protocol === 'http:',
      hostname: parsed.hostname,
      port: parsed.port || '80',
      host: parsed.host,
    };
    if (this.targets.size >= TARGET_CACHE_SIZE) this.targets.clear();
    this.targets.set(raw, url);
    return url;
  }
}

/** An http(s) endpoint URL as undici's dispatch takes it. */
interface HttpTarget {
  origin: string;
  path: string;
  /** http: (not https:): sent in absolute form through a proxy. */
  plain: boolean;
  hostname: string;
  port: string;
  /** `hostname[:port]` as the Host header. */
  host: string;
}

/** Parsed endpoint URLs a destination keeps (about 200 bytes each); all are dropped when full. */
const TARGET_CACHE_SIZE = 10_000;

/**
 * One attempt as undici's low-level dispatch handler: the status, then up to
 * RESPONSE_BODY_LIMIT bytes of the body for the log, straight from the connection. This spares
 * `request()`'s per-response Readable stream, async iterator, AbortController and timers (its
 * cost showed in profiles of a busy worker). The attempt ends, once:
 *
 * - at the deadline (shared timer): with no status yet, a `timeout`; after the status, with the
 *   body bytes read so far (the deadline covers the whole attempt, body included);
 * - BODY_GRACE_MS after the status, with the bytes read so far (shared timer);
 * - at the body's end, or once RESPONSE_BODY_LIMIT bytes are in (the rest is not read);
 * - on a connection error: classified (refused, reset, DNS, TLS, forbidden address...).
 *
 * Ending before the body's end aborts the request, which closes that connection.
 */
class AttemptHandler {
  deadline: Deadline | null = null;
  /** Put before a connection error's message: which hop failed (the egress proxy). */
  note = '';
  private grace: Deadline | null = null;
  private abortRequest: ((err?: Error) => void) | null = null;
  private done = false;
  private statusCode: number | null = null;
  /** A 429's or 503's Retry-After, as sent (the worker reads it: retry-after.ts). */
  private retryAfter: string | null = null;
  private durationMs = 0;
  private readonly chunks: Buffer[] = [];
  private size = 0;

  constructor(
    private readonly startedAt: Date,
    private readonly t0: number,
    private readonly timeoutMs: number,
    private readonly graces: DeadlineQueue,
    /** Kept in the log with the result, to show the request as it was sent (with the next two). */
    private readonly signature: string,
    private readonly req: SendRequest,
    private readonly webhookSignature: string | null,
    private readonly resolve: (result: AttemptResult) => void,
  ) {}

  onConnect(abort: (err?: Error) => void): void {
    // The deadline may have passed while the request waited for its connection.
    if (this.done) abort();
    else this.abortRequest = abort;
  }

  onHeaders(statusCode: number, headers: unknown, _resume: () => void): boolean {
    // 1xx (e.g. 100 Continue) is not an answer: wait for the final status within the deadline.
    if (this.done || statusCode < 200) return true;
    this.statusCode = statusCode;
    // Only these answers' headers are read: every other response costs nothing more.
    if (PAUSING_STATUSES.has(statusCode)) this.retryAfter = headerValue(headers, 'retry-after');
    this.durationMs = Math.round(performance.now() - this.t0);
    this.grace = this.graces.add(() => this.end(true));
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.done) return true;
    const room = RESPONSE_BODY_LIMIT - this.size;
    this.chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
    this.size += Math.min(chunk.length, room);
    if (this.size >= RESPONSE_BODY_LIMIT) this.end(true);
    return true;
  }

  onComplete(): void {
    this.end(false);
  }

  onError(err: Error): void {
    if (this.done) return;
    // An error after the status (the body broke off): the answer stands, with what was read.
    if (this.statusCode !== null) {
      this.end(false);
      return;
    }
    this.finish(
      classify(err, (kind, message) =>
        failed(this.startedAt, Math.round(performance.now() - this.t0), kind, kind === 'forbidden_address' ? message : this.note + message),
      ),
    );
  }

  timeUp(): void {
    if (this.done) return;
    if (this.statusCode !== null) {
      this.end(true);
      return;
    }
    this.finish(
      failed(
        this.startedAt,
        Math.round(performance.now() - this.t0),
        'timeout',
        `No answer within ${this.timeoutMs} ms (spec 8: acknowledge within 10 s).`,
      ),
    );
    this.abortRequest?.();
  }

  /** Ends with the status and the body read so far; `abort` drops the rest of the response. */
  private end(abort: boolean): void {
    if (this.done) return;
    const statusCode = this.statusCode!;
    const ok = statusCode >= 200 && statusCode < 300;
    this.finish({
      succeeded: ok,
      startedAt: this.startedAt,
      durationMs: this.durationMs,
      statusCode,
      responseBody: (this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks)).toString('utf8'),
      errorKind: ok ? null : 'http_status',
      errorMessage: ok ? null : `The endpoint answered HTTP ${statusCode}; only a 2xx acknowledges a delivery.`,
      ...(this.retryAfter !== null ? { retryAfter: this.retryAfter } : {}),
    });
    if (abort) this.abortRequest?.();
  }

  private finish(result: AttemptResult): void {
    this.done = true;
    this.deadline?.cancel();
    this.grace?.cancel();
    this.chunks.length = 0;
    result.requestSignature = this.signature;
    const { req } = this;
    if (req.traceparent) result.traceparent = req.traceparent;
    if (this.webhookSignature !== null || req.headers) noteEndpointHeaders(result, req, this.webhookSignature);
    this.resolve(result);
  }
}

/** The first value of a header among undici's raw headers (name, value, name, value...), or null. */
function headerValue(raw: unknown, name: string): string | null {
  if (!Array.isArray(raw)) return null;
  for (let i = 0; i + 1 < raw.length; i += 2) if (String(raw[i]).toLowerCase() === name) return String(raw[i + 1]).slice(0, 100);
  return null;
}

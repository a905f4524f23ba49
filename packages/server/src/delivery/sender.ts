import { Agent } from 'undici';
import { EVENT_ID_HEADER, SIGNATURE_HEADER, signPayloadWithSecrets } from '@payhooks/contract';
import { checkLiteralHost, ForbiddenAddressError, safeLookup, type Resolver } from './safe-lookup.ts';
import { DeadlineQueue, type Deadline } from './deadlines.ts';
import { BROKER_PROTOCOLS, BrokerUrlError, parseBrokerUrl, type BrokerCredentials, type BrokerKind } from '../endpoint-urls/broker-url.ts';
import type { BrokerDestinations } from './destinations/index.ts';

/** Bytes of a response body kept for the delivery log. */
export const RESPONSE_BODY_LIMIT = 16 * 1024;
/** After the status arrives, how long the log may wait for body bytes (never past the deadline). */
const BODY_GRACE_MS = 1000;

export const USER_AGENT = 'payhooks/0.1 (+webhooks)';

export type ErrorKind =
  | 'http_status'
  | 'timeout'
  | 'connection_refused'
  | 'connection_reset'
  | 'dns'
  | 'tls'
  | 'forbidden_address'
  | 'invalid_url'
  | 'network'
  /** A message broker refused or did not confirm the message (nack, unroutable, no stream, credentials). */
  | 'broker'
  /** No request was sent: the endpoint is disabled (the attempt still counts toward the 8). */
  | 'endpoint_disabled';

export interface AttemptResult {
  succeeded: boolean;
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  responseBody: string | null;
  errorKind: ErrorKind | null;
  errorMessage: string | null;
  /** The Service-Signature header the request carried (absent when no request was made). */
  requestSignature?: string | null;
  /** Set when the attempt went to a message broker instead of an HTTP endpoint. */
  broker?: BrokerKind;
  /** The traceparent header the request carried (only while tracing, and only when a request was made). */
  traceparent?: string | null;
}

export interface SendRequest {
  url: string;
  /** The event's stored serialisation: sent byte for byte. */
  body: string;
  eventId: string;
  /** The live signing secrets, new first: one `v1=` each (two only during a rotation's overlap). */
  secrets: readonly string[];
  /** A broker URL's credentials, decrypted (null or absent for HTTP). */
  credentials?: BrokerCredentials | null;
  /** The attempt span's W3C traceparent (only while tracing): a header, or a message header. */
  traceparent?: string | undefined;
}

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
}

/**
 * Makes one delivery attempt (spec 4.2, 5.1): POST of the stored bytes with `Service-Event-Id`
 * and a `Service-Signature` made now, so `t` is fresh on every attempt. Success is any 2xx
 * status within the deadline; redirects are not followed (a 3xx is a failure). Never throws.
 */
export class Sender {
  private readonly agent: Agent;
  /** The attempt deadline, one timer for all attempts (they all last at most `timeoutMs`). */
  private readonly deadlines: DeadlineQueue;
  /** The response-body grace after the status arrives, one timer likewise. */
  private readonly bodyGraces = new DeadlineQueue(BODY_GRACE_MS);
  /** Endpoint URLs already parsed and checked (literal address, scheme): one parse per URL, not per attempt. */
  private readonly targets = new Map<string, HttpTarget>();
  /** Loaded on the first broker URL: an HTTP-only deployment never loads a broker client. */
  private brokers: Promise<BrokerDestinations> | null = null;

  constructor(private readonly options: SenderOptions) {
    this.agent = new Agent({
      connections: options.connectionsPerOrigin,
      keepAliveTimeout: 4_000,
      keepAliveMaxTimeout: 30_000,
      connectTimeout: options.timeoutMs,
      // The attempt's deadline (`deadlines`, one timer for all attempts) covers headers and
      // body; undici's own two timers would be set and cleared again on every request.
      headersTimeout: 0,
      bodyTimeout: 0,
      connect: { lookup: safeLookup(options.resolver, options.allowPrivate) },
    });
    this.deadlines = new DeadlineQueue(options.timeoutMs);
  }

  /**
   * Not an async function, and one promise per HTTP attempt: the worker makes thousands a
   * second. Every failure of the attempt resolves as an AttemptResult; it never throws.
   */
  send(req: SendRequest): Promise<AttemptResult> {
    const startedAt = this.options.now();
    const t0 = performance.now();
    let url = this.targets.get(req.url);
    let bytes: Buffer;
    let signature: string;
    try {
      if (!url) {
        const parsed = new URL(req.url);
        if (Object.hasOwn(BROKER_PROTOCOLS, parsed.protocol)) return this.publish(parsed, req, startedAt, t0);
        if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('not http(s)');
        // Checked before it is remembered: a forbidden literal is refused on every attempt.
        if (!this.options.allowPrivate) checkLiteralHost(parsed.hostname);
        url = { origin: parsed.origin, path: parsed.search ? `${parsed.pathname}${parsed.search}` : parsed.pathname };
        if (this.targets.size >= TARGET_CACHE_SIZE) this.targets.clear();
        this.targets.set(req.url, url);
      }
    } catch (err) {
      const elapsed = Math.round(performance.now() - t0);
      if (err instanceof ForbiddenAddressError) return Promise.resolve(failed(startedAt, elapsed, 'forbidden_address', err.message));
      return Promise.resolve(failed(startedAt, elapsed, 'invalid_url', `The endpoint URL is not a valid http(s) URL: ${req.url}`));
    }
    try {
      bytes = Buffer.from(req.body, 'utf8');
      signature = signPayloadWithSecrets(req.secrets, Math.floor(startedAt.getTime() / 1000), bytes);
    } catch (err) {
      return Promise.reject(err);
    }
    const target = url;
    return new Promise<AttemptResult>((resolve) => {
      const handler = new AttemptHandler(startedAt, t0, this.options.timeoutMs, this.bodyGraces, signature, req.traceparent, resolve);
      handler.deadline = this.deadlines.add(() => handler.timeUp());
      this.agent.dispatch(
        {
          origin: target.origin,
          path: target.path,
          method: 'POST',
          headers: req.traceparent
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
              },
          body: bytes,
        },
        handler,
      );
    });
  }

  /** Broker connections open now, by kind (for tests and the idle check). */
  async brokerConnections(): Promise<Record<string, number>> {
    if (!this.brokers) return {};
    const brokers = await this.brokers;
    return Object.fromEntries(Object.entries(brokers).map(([kind, b]) => [kind, b.openConnections]));
  }

  async close(): Promise<void> {
    await this.agent.close();
    if (this.brokers) await Promise.all(Object.values(await this.brokers).map((b) => b.close()));
  }

  /**
   * One attempt to a message broker (delivery/destinations): the same bytes and signature as an
   * HTTP POST, the two headers as message headers. Success is the broker's confirmation within
   * the attempt's deadline; anything else fails the attempt, with the broker's words in the log.
   */
  private async publish(url: URL, req: SendRequest, startedAt: Date, t0: number): Promise<AttemptResult> {
    const elapsed = () => Math.round(performance.now() - t0);
    let target: ReturnType<typeof parseBrokerUrl>;
    try {
      target = parseBrokerUrl(url);
    } catch (err) {
      if (err instanceof BrokerUrlError)
        return failed(startedAt, elapsed(), 'invalid_url', `The endpoint URL is not valid: ${err.message}`);
      throw err;
    }
    const bytes = Buffer.from(req.body, 'utf8');
    const signature = signPayloadWithSecrets(req.secrets, Math.floor(this.options.now().getTime() / 1000), bytes);
    const headers: Record<string, string> = { [EVENT_ID_HEADER]: req.eventId, [SIGNATURE_HEADER]: signature };
    if (req.traceparent) headers.traceparent = req.traceparent;
    this.brokers ??= loadBrokers({
      allowPrivate: this.options.allowPrivate,
      resolver: this.options.resolver,
      connectTimeoutMs: this.options.timeoutMs,
      idleMs: this.options.brokerIdleMs ?? BROKER_IDLE_MS,
    });
    let broker: BrokerDestinations[keyof BrokerDestinations];
    try {
      broker = (await this.brokers)[target.kind];
    } catch (err) {
      this.brokers = null;
      return failed(startedAt, elapsed(), 'network', `The ${target.kind} client could not be loaded: ${(err as Error).message}`);
    }
    // The same deadline queue as HTTP attempts (one timer for all of them, not one per attempt).
    let timeUp: Deadline | undefined;
    const deadline = new Promise<AttemptResult>((resolve) => {
      timeUp = this.deadlines.add(() =>
        resolve(
          failed(startedAt, elapsed(), 'timeout', `The broker did not confirm within ${this.options.timeoutMs} ms (spec 8: within 10 s).`),
        ),
      );
    });
    const attempt = broker.publish(target, req.credentials ?? null, { body: bytes, headers, eventId: req.eventId }).then(
      (detail): AttemptResult => ({
        succeeded: true,
        startedAt,
        durationMs: elapsed(),
        statusCode: null,
        responseBody: detail,
        errorKind: null,
        errorMessage: null,
      }),
      (err: unknown) =>
        err instanceof Error && err.name === 'BrokerRefusal'
          ? failed(startedAt, elapsed(), (err as Error & { kind: ErrorKind }).kind, err.message)
          : classify(err, (kind, message) => failed(startedAt, elapsed(), kind, message)),
    );
    const result = await Promise.race([attempt, deadline]);
    timeUp?.cancel();
    result.requestSignature = signature;
    result.broker = target.kind;
    if (req.traceparent) result.traceparent = req.traceparent;
    return result;
  }
}

/** Broker connections idle this long are closed (the next attempt dials again). */
export const BROKER_IDLE_MS = 60_000;

async function loadBrokers(options: import('./destinations/index.ts').DialOptions): Promise<BrokerDestinations> {
  const [{ AmqpDestination }, { NatsDestination }] = await Promise.all([
    import('./destinations/amqp.ts'),
    import('./destinations/nats.ts'),
  ]);
  return { amqp: new AmqpDestination(options), nats: new NatsDestination(options) };
}

/** An http(s) endpoint URL as undici's dispatch takes it. */
interface HttpTarget {
  origin: string;
  path: string;
}

/** Parsed endpoint URLs a sender keeps (about 200 bytes each); all are dropped when full. */
const TARGET_CACHE_SIZE = 10_000;

function failed(startedAt: Date, durationMs: number, errorKind: ErrorKind, errorMessage: string): AttemptResult {
  return { succeeded: false, startedAt, durationMs, statusCode: null, responseBody: null, errorKind, errorMessage };
}

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
  private grace: Deadline | null = null;
  private abortRequest: ((err?: Error) => void) | null = null;
  private done = false;
  private statusCode: number | null = null;
  private durationMs = 0;
  private readonly chunks: Buffer[] = [];
  private size = 0;

  constructor(
    private readonly startedAt: Date,
    private readonly t0: number,
    private readonly timeoutMs: number,
    private readonly graces: DeadlineQueue,
    /** Kept in the log with the result, to show the request as it was sent. */
    private readonly signature: string,
    private readonly traceparent: string | undefined,
    private readonly resolve: (result: AttemptResult) => void,
  ) {}

  onConnect(abort: (err?: Error) => void): void {
    // The deadline may have passed while the request waited for its connection.
    if (this.done) abort();
    else this.abortRequest = abort;
  }

  onHeaders(statusCode: number, _headers: unknown, _resume: () => void): boolean {
    // 1xx (e.g. 100 Continue) is not an answer: wait for the final status within the deadline.
    if (this.done || statusCode < 200) return true;
    this.statusCode = statusCode;
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
    this.finish(classify(err, (kind, message) => failed(this.startedAt, Math.round(performance.now() - this.t0), kind, message)));
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
    });
    if (abort) this.abortRequest?.();
  }

  private finish(result: AttemptResult): void {
    this.done = true;
    this.deadline?.cancel();
    this.grace?.cancel();
    this.chunks.length = 0;
    result.requestSignature = this.signature;
    if (this.traceparent) result.traceparent = this.traceparent;
    this.resolve(result);
  }
}

function classify(err: unknown, fail: (kind: ErrorKind, message: string) => AttemptResult): AttemptResult {
  const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
  const root = e.cause && typeof e.cause === 'object' ? e.cause : e;
  if (root instanceof ForbiddenAddressError || e instanceof ForbiddenAddressError)
    return fail('forbidden_address', (root as Error).message);
  const code = root.code ?? e.code ?? '';
  const msg = `${root.message || e.message}${code ? ` (${code})` : ''}`;
  if (code === 'ECONNREFUSED') return fail('connection_refused', `Connection refused: ${msg}`);
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'UND_ERR_SOCKET' || code === 'UND_ERR_CLOSED')
    return fail('connection_reset', `Connection reset: ${msg}`);
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NODATA' || code === 'EAI_NONAME')
    return fail('dns', `DNS lookup failed: ${msg}`);
  if (code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL') || /CERT|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code))
    return fail('tls', `TLS failure: ${msg}`);
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'ETIMEDOUT')
    return fail('timeout', `Timed out: ${msg}`);
  return fail('network', `Network error: ${msg}`);
}

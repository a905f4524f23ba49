import { Agent, request } from 'undici';
import { EVENT_ID_HEADER, SIGNATURE_HEADER, signPayloadWithSecrets } from '@payhooks/contract';
import { checkLiteralHost, ForbiddenAddressError, safeLookup, type Resolver } from './safe-lookup.ts';

/** Bytes of a response body kept for the delivery log. */
export const RESPONSE_BODY_LIMIT = 16 * 1024;
/** After the status arrives, how long the log may wait for body bytes (never past the deadline). */
const BODY_GRACE_MS = 1000;

export const USER_AGENT = 'payhooks/0.1 (+webhooks)';

export type ErrorKind = 'http_status' | 'timeout' | 'connection_refused' | 'connection_reset' | 'dns' | 'tls' | 'forbidden_address' | 'invalid_url' | 'network';

export interface AttemptResult {
  succeeded: boolean;
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  responseBody: string | null;
  errorKind: ErrorKind | null;
  errorMessage: string | null;
}

export interface SendRequest {
  url: string;
  /** The event's stored serialisation: sent byte for byte. */
  body: string;
  eventId: string;
  /** The live signing secrets, new first: one `v1=` each (two only during a rotation's overlap). */
  secrets: readonly string[];
}

export interface SenderOptions {
  timeoutMs: number;
  allowPrivate: boolean;
  /** Most connections per origin (host:port). */
  connectionsPerOrigin: number;
  now: () => Date;
  /** DNS resolver, injectable so tests can point a name at a chosen address. */
  resolver?: Resolver;
}

/**
 * Makes one delivery attempt (spec 4.2, 5.1): POST of the stored bytes with `Service-Event-Id`
 * and a `Service-Signature` made now, so `t` is fresh on every attempt. Success is any 2xx
 * status within the deadline; redirects are not followed (a 3xx is a failure). Never throws.
 */
export class Sender {
  private readonly agent: Agent;

  constructor(private readonly options: SenderOptions) {
    this.agent = new Agent({
      connections: options.connectionsPerOrigin,
      keepAliveTimeout: 4_000,
      keepAliveMaxTimeout: 30_000,
      connectTimeout: options.timeoutMs,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      connect: { lookup: safeLookup(options.resolver, options.allowPrivate) },
    });
  }

  async send(req: SendRequest): Promise<AttemptResult> {
    const startedAt = this.options.now();
    const t0 = performance.now();
    const elapsed = () => Math.round(performance.now() - t0);
    const fail = (errorKind: ErrorKind, errorMessage: string, statusCode: number | null = null, responseBody: string | null = null): AttemptResult => ({
      succeeded: false, startedAt, durationMs: elapsed(), statusCode, responseBody, errorKind, errorMessage,
    });

    let url: URL;
    try {
      url = new URL(req.url);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http(s)');
      if (!this.options.allowPrivate) checkLiteralHost(url.hostname);
    } catch (err) {
      if (err instanceof ForbiddenAddressError) return fail('forbidden_address', err.message);
      return fail('invalid_url', `The endpoint URL is not a valid http(s) URL: ${req.url}`);
    }

    const bytes = Buffer.from(req.body, 'utf8');
    const timestamp = Math.floor(this.options.now().getTime() / 1000);
    const controller = new AbortController();
    const deadline = setTimeout(() => controller.abort(), this.options.timeoutMs);
    try {
      const res = await request(url, {
        method: 'POST',
        dispatcher: this.agent,
        signal: controller.signal,
        headers: {
          'content-type': 'application/json',
          'user-agent': USER_AGENT,
          [EVENT_ID_HEADER]: req.eventId,
          [SIGNATURE_HEADER]: signPayloadWithSecrets(req.secrets, timestamp, bytes),
        },
        body: bytes,
      });
      const durationMs = elapsed();
      const remaining = this.options.timeoutMs - durationMs;
      const responseBody = await readCapped(res.body, Math.max(0, Math.min(BODY_GRACE_MS, remaining)));
      const ok = res.statusCode >= 200 && res.statusCode < 300;
      return {
        succeeded: ok,
        startedAt,
        durationMs,
        statusCode: res.statusCode,
        responseBody,
        errorKind: ok ? null : 'http_status',
        errorMessage: ok ? null : `The endpoint answered HTTP ${res.statusCode}; only a 2xx acknowledges a delivery.`,
      };
    } catch (err) {
      if (controller.signal.aborted) return fail('timeout', `No answer within ${this.options.timeoutMs} ms (spec 8: acknowledge within 10 s).`);
      return classify(err, fail);
    } finally {
      clearTimeout(deadline);
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

/** Reads up to RESPONSE_BODY_LIMIT bytes for the log, for at most `ms`, then drops the rest. */
async function readCapped(body: AsyncIterable<Buffer> & { destroy(): void }, ms: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  let timer: NodeJS.Timeout | undefined;
  const timeUp = new Promise<'time'>((resolve) => (timer = setTimeout(() => resolve('time'), ms)));
  const read = (async () => {
    for await (const chunk of body) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= RESPONSE_BODY_LIMIT) break;
    }
    return 'done' as const;
  })().catch(() => 'done' as const);
  await Promise.race([read, timeUp]);
  clearTimeout(timer);
  body.destroy();
  return Buffer.concat(chunks).subarray(0, RESPONSE_BODY_LIMIT).toString('utf8');
}

function classify(err: unknown, fail: (kind: ErrorKind, message: string) => AttemptResult): AttemptResult {
  const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
  const root = e.cause && typeof e.cause === 'object' ? e.cause : e;
  if (root instanceof ForbiddenAddressError || e instanceof ForbiddenAddressError) return fail('forbidden_address', (root as Error).message);
  const code = root.code ?? e.code ?? '';
  const msg = `${root.message || e.message}${code ? ` (${code})` : ''}`;
  if (code === 'ECONNREFUSED') return fail('connection_refused', `Connection refused: ${msg}`);
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'UND_ERR_SOCKET' || code === 'UND_ERR_CLOSED') return fail('connection_reset', `Connection reset: ${msg}`);
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NODATA' || code === 'EAI_NONAME') return fail('dns', `DNS lookup failed: ${msg}`);
  if (code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL') || /CERT|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code)) return fail('tls', `TLS failure: ${msg}`);
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'ETIMEDOUT') return fail('timeout', `Timed out: ${msg}`);
  return fail('network', `Network error: ${msg}`);
}

import { signPayloadWithSecrets } from '@payhooks/contract';
import type { BrokerCredentials, BrokerKind } from '../../endpoint-urls/broker-url.ts';
import { ForbiddenAddressError } from '../safe-lookup.ts';

/**
 * What one delivery attempt is and how it can end, whatever receives it: an HTTP endpoint or a
 * message broker. The worker, the delivery log, the schedule and tracing see only these types.
 */

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

/**
 * Where attempts go: one implementation per kind of receiver (http.ts, brokers.ts). `send`
 * signs the stored bytes at the moment of the attempt, so `t` is fresh on every attempt, and
 * resolves with the attempt's outcome within the attempt's deadline. It never rejects.
 */
export interface Destination {
  send(req: SendRequest, startedAt: Date, t0: number): Promise<AttemptResult>;
  close(): Promise<void>;
}

/** The `Service-Signature` value for the stored bytes, made at the attempt's start. */
export function signAttempt(req: SendRequest, startedAt: Date, bytes: Buffer): string {
  return signPayloadWithSecrets(req.secrets, Math.floor(startedAt.getTime() / 1000), bytes);
}

export function failed(startedAt: Date, durationMs: number, errorKind: ErrorKind, errorMessage: string): AttemptResult {
  return { succeeded: false, startedAt, durationMs, statusCode: null, responseBody: null, errorKind, errorMessage };
}

/** A connection-level error (socket, DNS, TLS, SSRF guard) as the log's error kind and words. */
export function classify(err: unknown, fail: (kind: ErrorKind, message: string) => AttemptResult): AttemptResult {
  const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
  const root = e.cause && typeof e.cause === 'object' ? e.cause : e;
  if (root instanceof ForbiddenAddressError || e instanceof ForbiddenAddressError)
    return fail('forbidden_address', (root as Error).message);
  const code = root.code ?? e.code ?? '';
  const msg = `${root.message || e.message}${code ? ` (${code})` : ''}`;
  if (code === 'ECONNREFUSED') return fail('connection_refused', `Connection refused: ${msg}`);
  // The egress proxy would not open the tunnel: for the endpoint, a connection that was refused.
  if (code === 'PAYHOOKS_PROXY_REFUSED') return fail('connection_refused', root.message);
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

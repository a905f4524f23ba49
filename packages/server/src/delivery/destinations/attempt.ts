import type { KeyObject } from 'node:crypto';
import {
  signPayloadWithSecrets,
  signStandardWebhooks,
  WEBHOOK_ID_HEADER,
  WEBHOOK_SIGNATURE_HEADER,
  WEBHOOK_TIMESTAMP_HEADER,
} from '@payhooks/contract';
import type { BrokerCredentials, BrokerKind } from '../../endpoint-urls/broker-url.ts';
import type { OAuthClient } from './access-tokens.ts';
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
  | 'endpoint_disabled'
  /** No request was sent: the endpoint's OAuth 2.0 token endpoint gave no access token. */
  | 'authentication_failed';

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
  /** A 429's or 503's Retry-After header as the receiver sent it (delivery/retry-after.ts reads it). */
  retryAfter?: string;
  /** Milliseconds the attempt waited for the endpoint's max_requests_per_second; absent when uncapped. */
  rateLimitedMs?: number;
  /** The webhook-signature header the request carried (Standard Webhooks endpoints only). */
  webhookSignature?: string | null;
  /** The endpoint's custom headers the request carried, as the JSON text stored with the endpoint. */
  customHeaders?: string | null;
}

/** An endpoint's custom headers (endpoints/custom-headers.ts) as an attempt sends them. */
export interface CustomHeaders {
  /** As stored (`webhook_endpoints.headers::text`): the cache key, and what the attempt log keeps. */
  readonly json: string;
  /** Name, value, name, value…: added to the request's headers in this order. */
  readonly flat: readonly string[];
}

export interface SendRequest {
  url: string;
  /** The event's stored serialisation: sent byte for byte. */
  body: string;
  eventId: string;
  /** The live signing secrets, new first: one `v1=` each (two only during a rotation's overlap). */
  secrets: readonly string[];
  /** The live ed25519 private keys, new first: one `v1a=` each (absent: the endpoint signs with HMAC alone). */
  privateKeys?: readonly KeyObject[] | undefined;
  /** A broker URL's credentials, decrypted (null or absent for HTTP). */
  credentials?: BrokerCredentials | null;
  /** The attempt span's W3C traceparent (only while tracing): a header, or a message header. */
  traceparent?: string | undefined;
  /**
   * The Standard Webhooks keys of the live secrets (new first; a secret that has none is left
   * out): when the endpoint asks for those headers. Null, absent or empty: no webhook-* headers.
   */
  webhookKeys?: readonly KeyObject[] | null;
  /** The endpoint's custom headers; null or absent when it has none. */
  headers?: CustomHeaders | null;
  /** Certificate authorities (PEM) the endpoint trusts beside the public ones; absent: the public ones only. */
  trustedCas?: string | undefined;
  /** The client certificate the endpoint's receiver requires (mutual TLS); absent: none. */
  clientCertificate?: ClientCertificate | undefined;
  /** The replaced client certificate while its overlap lasts: presented when the receiver refuses `clientCertificate`. */
  previousClientCertificate?: ClientCertificate | undefined;
  /** The OAuth 2.0 client whose access token goes in `Authorization: Bearer` (HTTP only); absent: none. */
  oauth2?: OAuthClient | undefined;
}

/** A client certificate chain and key (PEM), opened; `id` names the connections made with it. */
export interface ClientCertificate {
  id: string;
  cert: string;
  key: string;
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
  return signPayloadWithSecrets(req.secrets, Math.floor(startedAt.getTime() / 1000), bytes, req.privateKeys);
}

/**
 * The `webhook-signature` value for the stored bytes (the same `t` as `signAttempt`'s, the event
 * id as webhook-id), or null when the request carries no Standard Webhooks headers.
 */
export function signStandardAttempt(req: SendRequest, startedAt: Date, bytes: Buffer): string | null {
  const keys = req.webhookKeys;
  if (!keys || keys.length === 0) return null;
  return signStandardWebhooks({ v1: keys, v1a: req.privateKeys }, req.eventId, Math.floor(startedAt.getTime() / 1000), bytes);
}

/**
 * Adds what an endpoint asked for beyond the contract's headers, in the order the delivery log
 * shows them: the Standard Webhooks headers (with `webhookSignature` from signStandardAttempt),
 * then the merchant's own, which the endpoint service refused to let override any header set
 * here or by the destination.
 */
export function addEndpointHeaders(
  headers: Record<string, string>,
  req: SendRequest,
  startedAt: Date,
  webhookSignature: string | null,
): Record<string, string> {
  if (webhookSignature !== null) {
    headers[WEBHOOK_ID_HEADER] = req.eventId;
    headers[WEBHOOK_TIMESTAMP_HEADER] = String(Math.floor(startedAt.getTime() / 1000));
    headers[WEBHOOK_SIGNATURE_HEADER] = webhookSignature;
  }
  const flat = req.headers?.flat;
  if (flat) for (let i = 0; i < flat.length; i += 2) headers[flat[i]!] = flat[i + 1]!;
  return headers;
}

/** What the log keeps of the endpoint's own headers on a result: the signature and the custom headers' text. */
export function noteEndpointHeaders(result: AttemptResult, req: SendRequest, webhookSignature: string | null): void {
  if (webhookSignature !== null) result.webhookSignature = webhookSignature;
  if (req.headers) result.customHeaders = req.headers.json;
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

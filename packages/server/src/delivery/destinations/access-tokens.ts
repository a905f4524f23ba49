import type { Dispatcher } from 'undici';
import type { ClientAuthMethod } from '../../security/receiver-credentials.ts';
import { classify, failed } from './attempt.ts';

/**
 * Access tokens for receivers behind an OAuth 2.0 gateway (client credentials, RFC 6749 section
 * 4.4), one cache per process: a token is asked for once and shared by every attempt to the
 * endpoints of that client until shortly before it expires (by the injected clock); attempts that
 * need one while it is being fetched wait for the same request. A token endpoint that fails is
 * not asked again for FAILURE_HOLD_MS, so a backlog doesn't hammer it: the attempts in between
 * fail with the same error.
 */

/** An endpoint's OAuth 2.0 client, opened; `id` (its sealed text, new with every change) keys its token. */
export interface OAuthClient {
  id: string;
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  scope: string | null;
  audience: string | null;
  method: ClientAuthMethod;
}

/** A token request that failed, with words that are safe to log (never the client secret). */
export class TokenEndpointError extends Error {}

/** How long a failed token request is remembered: the attempts in between fail without asking. */
export const FAILURE_HOLD_MS = 5_000;
/** Lifetime assumed when the token endpoint gives no `expires_in` (RFC 6749 section 5.1 makes it optional). */
export const DEFAULT_TOKEN_LIFETIME_S = 300;
/** A token is used until this share of its lifetime, and never within REFRESH_MARGIN_MAX_S of its end. */
const USE_SHARE = 0.9;
const REFRESH_MARGIN_MAX_S = 60;
/** Bytes of a token endpoint's answer read at most. */
const TOKEN_RESPONSE_LIMIT = 64 * 1024;
/** Clients whose tokens one process keeps; all are dropped when full. */
const MAX_CLIENTS = 10_000;

type Held = { token: string; until: number } | { error: TokenEndpointError; until: number };

/** Sends a token request (form-encoded body, headers) to `url` and gives back the answer. */
export type TokenTransport = (url: string, headers: Record<string, string>, body: string) => Promise<Dispatcher.ResponseData>;

/** The point at which a token that lives `lifetimeS` seconds, got at `now`, is asked for again. */
export function refreshAt(now: number, lifetimeS: number): number {
  const margin = Math.min(lifetimeS * (1 - USE_SHARE), REFRESH_MARGIN_MAX_S);
  return now + Math.max(0, lifetimeS - margin) * 1000;
}

export class AccessTokens {
  private readonly held = new Map<string, Held>();
  private readonly asking = new Map<string, Promise<string>>();

  constructor(private readonly now: () => number) {}

  /** A token for `client`: the held one while it is good, else one asked for with `transport`. Rejects with TokenEndpointError. */
  get(client: OAuthClient, transport: TokenTransport): Promise<string> {
    const held = this.held.get(client.id);
    if (held !== undefined && this.now() < held.until) return 'token' in held ? Promise.resolve(held.token) : Promise.reject(held.error);
    let asking = this.asking.get(client.id);
    if (asking === undefined) {
      asking = this.ask(client, transport).finally(() => this.asking.delete(client.id));
      this.asking.set(client.id, asking);
    }
    return asking;
  }

  /** The receiver refused `token` (401): the next `get` asks for a new one, unless another attempt already did. */
  refused(client: OAuthClient, token: string): void {
    const held = this.held.get(client.id);
    if (held !== undefined && 'token' in held && held.token === token) this.held.delete(client.id);
  }

  private async ask(client: OAuthClient, transport: TokenTransport): Promise<string> {
    try {
      const { token, lifetimeS } = await requestToken(client, transport);
      this.hold(client.id, { token, until: refreshAt(this.now(), lifetimeS) });
      return token;
    } catch (err) {
      // requestToken rejects with TokenEndpointError only; the secret never reaches its words.
      const safe = new TokenEndpointError(redact((err as Error).message, client.clientSecret));
      this.hold(client.id, { error: safe, until: this.now() + FAILURE_HOLD_MS });
      throw safe;
    }
  }

  private hold(id: string, held: Held): void {
    if (this.held.size >= MAX_CLIENTS && !this.held.has(id)) this.held.clear();
    this.held.set(id, held);
  }
}

/** The token request (RFC 6749 sections 4.4.2 and 2.3.1) and its answer, checked. */
async function requestToken(client: OAuthClient, transport: TokenTransport): Promise<{ token: string; lifetimeS: number }> {
  const form = new URLSearchParams({ grant_type: 'client_credentials' });
  if (client.scope !== null) form.set('scope', client.scope);
  if (client.audience !== null) form.set('audience', client.audience);
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
  if (client.method === 'client_secret_post') {
    form.set('client_id', client.clientId);
    form.set('client_secret', client.clientSecret);
  } else {
    // Section 2.3.1: each part form-encoded before the Basic encoding.
    const user = `${formEncode(client.clientId)}:${formEncode(client.clientSecret)}`;
    headers.authorization = `Basic ${Buffer.from(user, 'utf8').toString('base64')}`;
  }
  const where = `The token endpoint ${client.tokenUrl}`;
  let answer: Dispatcher.ResponseData;
  let text: string;
  try {
    answer = await transport(client.tokenUrl, headers, form.toString());
    text = await readLimited(answer.body);
  } catch (err) {
    // In the words of a receiver's connection error (refused, DNS, TLS, forbidden address, timeout).
    const reason = classify(err, (kind, message) => failed(new Date(0), 0, kind, message)).errorMessage;
    throw new TokenEndpointError(`${where} could not be reached: ${reason}`);
  }
  let json: Record<string, unknown> | null = null;
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) json = parsed as Record<string, unknown>;
  } catch {
    // Not JSON: said below.
  }
  if (answer.statusCode !== 200) {
    const code = typeof json?.error === 'string' ? ` (${printable(json.error)}${describe(json)})` : '';
    throw new TokenEndpointError(
      `${where} answered HTTP ${answer.statusCode}${code}; no access token, so nothing was sent to the receiver.`,
    );
  }
  const token = json?.access_token;
  if (typeof token !== 'string' || token === '' || /[^\x21-\x7e]/.test(token))
    throw new TokenEndpointError(`${where} answered 200 without a usable access_token (a JSON object with a printable string expected).`);
  const type = json?.token_type;
  if (typeof type !== 'string' || type.toLowerCase() !== 'bearer')
    throw new TokenEndpointError(`${where} issued a token of type ${printable(String(type))}; only Bearer tokens can be sent.`);
  const expiresIn = json?.expires_in;
  const lifetimeS = typeof expiresIn === 'number' && Number.isFinite(expiresIn) && expiresIn > 0 ? expiresIn : DEFAULT_TOKEN_LIFETIME_S;
  return { token, lifetimeS };
}

function describe(json: Record<string, unknown>): string {
  return typeof json.error_description === 'string' ? `: ${printable(json.error_description)}` : '';
}

/** What an authorization server said, fit for a log line: printable, at most 200 characters. */
function printable(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, '?').slice(0, 200);
}

function formEncode(value: string): string {
  return new URLSearchParams({ v: value }).toString().slice(2);
}

/** A token endpoint may echo what it was sent: the secret never reaches the log, even then. */
function redact(message: string, secret: string): string {
  let out = message;
  for (const form of new Set([secret, formEncode(secret), encodeURIComponent(secret)]))
    if (form !== '') out = out.split(form).join('[redacted]');
  return out;
}

async function readLimited(body: Dispatcher.ResponseData['body']): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buf = chunk as Buffer;
    chunks.push(buf);
    size += buf.length;
    if (size >= TOKEN_RESPONSE_LIMIT) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).subarray(0, TOKEN_RESPONSE_LIMIT).toString('utf8');
}

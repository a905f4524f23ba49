import { randomUUID } from 'node:crypto';
import { RESOURCE_EVENT_TYPES, isEventType, type EventType } from '@payhooks/contract';

const triggerable: ReadonlySet<string> = new Set(RESOURCE_EVENT_TYPES);
import { ConfigError } from '../errors.ts';
import { EXAMPLE_PATHS } from '../payments/state-machine.ts';

/**
 * `payhooks trigger <event-type>`: makes a running payhooks emit an event type for real, over
 * its public HTTP API only (so it works against any deployment): it creates sandbox objects and
 * moves them through the transitions that emit the type (and what comes with it), then prints
 * the ids and the events emitted. Sandbox keys only.
 */
export interface TriggerOptions {
  apiKey: string;
  url: string;
  doubleDelivery: boolean;
  /** More metadata on the payment (or session), from `--metadata key=value`; the user's values win. */
  metadata?: Record<string, string>;
}

/**
 * `--metadata key=value`, repeatable: what a receiver reads from `data.object.metadata` (an
 * order or account id). Split at the first `=`, so values may hold `=`; the server checks the
 * limits (50 keys, keys up to 40 characters, values up to 500) and its 400 says which one.
 */
export function parseMetadataFlags(pairs: string[]): Record<string, string> {
  const metadata: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new ConfigError(`--metadata takes key=value (for example --metadata account=acct_1); got '${pair.slice(0, 100)}'.`);
    metadata[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return metadata;
}

export interface TriggeredEvent {
  id: string;
  type: string;
  object_id: string;
}

export interface TriggerResult {
  type: EventType;
  payment: string;
  checkout_session: string | null;
  events: TriggeredEvent[];
}

class HttpError extends Error {}

/** Answers are JSON; each call names the fields it reads (the server's API tests pin them). */
interface Client {
  post<T = { id: string }>(path: string, body?: unknown): Promise<T>;
  get<T>(path: string): Promise<T>;
}

interface ApiErrorBody {
  error?: { code?: string; message?: string };
}

function client(options: TriggerOptions): Client {
  const base = options.url.replace(/\/+$/, '');
  const call = async (method: string, path: string, body?: unknown): Promise<unknown> => {
    const headers: Record<string, string> = { authorization: `Bearer ${options.apiKey}` };
    // A fresh key per request: if this CLI is ever re-run after a network error, the server
    // answers a repeated request instead of acting twice.
    if (method === 'POST') headers['idempotency-key'] = `trigger-${randomUUID()}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    } catch (err) {
      throw new HttpError(
        `cannot reach payhooks at ${base}: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}. Is it running (payhooks serve)? Pass its address with --url.`,
      );
    }
    const text = await res.text();
    let json: ApiErrorBody | null;
    try {
      json = JSON.parse(text);
    } catch {
      throw new HttpError(`${method} ${path}: HTTP ${res.status}, not a payhooks answer (is --url right?)`);
    }
    if (!res.ok) throw new HttpError(`${method} ${path}: HTTP ${res.status} ${json?.error?.code ?? ''}: ${json?.error?.message ?? text}`);
    return json;
  };
  return {
    post: <T>(path: string, body?: unknown) => call('POST', path, body) as Promise<T>,
    get: <T>(path: string) => call('GET', path) as Promise<T>,
  };
}

/**
 * Pays (or fails) a checkout session the way a customer's browser does: GET the hosted page,
 * read the form's CSRF token, POST the form. The redirect to success_url is not followed.
 */
async function submitHostedForm(sessionUrl: string, action: 'pay' | 'fail'): Promise<void> {
  const page = await fetch(sessionUrl);
  const html = await page.text();
  const token = /name="csrf_token" value="([^"]+)"/.exec(html)?.[1];
  if (!page.ok || !token)
    throw new HttpError(`the hosted page ${sessionUrl} has no ${action} form (HTTP ${page.status}); is PAYHOOKS_PUBLIC_URL right?`);
  const res = await fetch(`${sessionUrl}/${action}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf_token: token }).toString(),
    redirect: 'manual',
  });
  if (res.status !== 303) throw new HttpError(`POST ${sessionUrl}/${action}: HTTP ${res.status}`);
}

const NEW_PAYMENT = { amount: '25.00', asset_code: 'USDC.ETH' };
const SESSION = { ...NEW_PAYMENT, success_url: 'https://example.com/checkout/success', cancel_url: 'https://example.com/checkout/cancel' };

export async function runTrigger(type: string, options: TriggerOptions, log: (line: string) => void): Promise<TriggerResult> {
  if (!isEventType(type)) throw new ConfigError(`'${type}' is not an event type. Types: ${RESOURCE_EVENT_TYPES.join(', ')}.`);
  // Operational types (webhook_endpoint.*) come from the service's own decisions, not from a payment.
  if (!triggerable.has(type))
    throw new ConfigError(
      `'${type}' is emitted by the service itself (auto-disable), not by a payment; payhooks trigger emits: ${RESOURCE_EVENT_TYPES.join(', ')}.`,
    );
  if (!options.apiKey.startsWith('sk_test_'))
    throw new ConfigError('payhooks trigger drives the sandbox: pass a sandbox key (sk_test_…) with --api-key.');
  const api = client(options);
  const double = options.doubleDelivery ? { double_delivery: true } : {};
  const metadata = { source: 'payhooks trigger', trigger_type: type, ...options.metadata };
  let paymentId: string;
  let sessionId: string | null = null;
  try {
    if (type.startsWith('checkout_session.')) {
      const session = await api.post<{ id: string; payment: string; url: string }>('/api/v1/checkout_sessions', {
        ...SESSION,
        metadata,
        ...double,
      });
      sessionId = session.id;
      paymentId = session.payment;
      log(`created checkout session ${session.id} (payment ${session.payment})`);
      if (type === 'checkout_session.completed') {
        await submitHostedForm(session.url, 'pay');
        log(`paid on the hosted page ${session.url}`);
      } else {
        await api.post(`/api/v1/checkout_sessions/${session.id}/expire`);
        log(`expired checkout session ${session.id}`);
      }
    } else {
      const payment = await api.post('/api/v1/payments', { ...NEW_PAYMENT, metadata, ...double });
      paymentId = payment.id;
      log(`created payment ${payment.id}`);
      if (type === 'payment.cancelled') {
        await api.post(`/api/v1/payments/${payment.id}/cancel`);
        log(`cancelled payment ${payment.id}`);
      } else {
        for (const status of EXAMPLE_PATHS[type]!) {
          await api.post(`/api/v1/sandbox/payments/${payment.id}/simulate`, { status });
          log(`moved payment ${payment.id} to ${status}`);
        }
      }
    }
    // The events those steps emitted, oldest first.
    const ids = new Set([paymentId, ...(sessionId ? [sessionId] : [])]);
    const page = await api.get<{ data: Array<{ id: string; type: string; data: { object: { id: string } } }> }>('/api/v1/events?limit=100');
    const events: TriggeredEvent[] = page.data
      .filter((e) => ids.has(e.data.object.id))
      .reverse()
      .map((e) => ({ id: e.id, type: e.type, object_id: e.data.object.id }));
    for (const e of events) log(`event ${e.id} ${e.type} (${e.object_id})${options.doubleDelivery ? ' x2 per endpoint' : ''}`);
    if (!events.some((e) => e.type === type)) throw new HttpError(`no ${type} event was found after the transitions`);
    return { type, payment: paymentId, checkout_session: sessionId, events };
  } catch (err) {
    if (err instanceof HttpError) throw new ConfigError(err.message);
    throw err;
  }
}

import { request, type Dispatcher } from 'undici';
import { EVENT_ID_HEADER, SIGNATURE_HEADER } from '@payhooks/contract';
import { ConfigError } from '../errors.ts';
import { RESPONSE_BODY_LIMIT, USER_AGENT } from '../delivery/destinations/http.ts';
import type { ForwardRequest, ForwardResult } from '../devtools/listen-sessions.ts';
import { receiverAccess, type ReceiverAccess } from './receiver-access.ts';
import type { ReceiverAuthFlags } from './receiver-auth-flags.ts';

export interface ListenOptions {
  apiKey: string;
  forwardTo: string;
  url: string;
  events?: string[] | undefined;
  /** Ends the session when aborted (Ctrl-C). */
  signal: AbortSignal;
  print: (line: string) => void;
  /** How to reach the local receiver when it wants what an endpoint's `authentication` and `tls` give. */
  receiver?: ReceiverAuthFlags | undefined;
}

/** Reads an SSE stream into `{event, data}` messages; comments (heartbeats) are skipped. */
async function* sseMessages(body: ReadableStream<Uint8Array>): AsyncGenerator<{ event: string; data: string }> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      if (data.length) yield { event, data: data.join('\n') };
    }
  }
}

/**
 * `payhooks listen`: opens a listen session on a running payhooks (sandbox key), prints the
 * session's `whsec_` secret, and forwards each delivery the server hands over to `forwardTo`:
 * the exact bytes and the server's own `Service-Signature` (made with the session's secret).
 * The local answer goes back to the server, which records it as the attempt.
 */
export async function runListen(options: ListenOptions): Promise<void> {
  if (!options.apiKey.startsWith('sk_test_'))
    throw new ConfigError('payhooks listen takes a sandbox key (sk_test_…): sessions exist in the sandbox only.');
  let target: URL;
  try {
    target = new URL(options.forwardTo);
  } catch {
    throw new ConfigError(
      `--forward-to '${options.forwardTo}' is not a URL; give your receiver's full address, e.g. http://localhost:3000/webhooks.`,
    );
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new ConfigError('--forward-to must be an http or https URL.');
  const access = receiverAccess(options.receiver ?? {});
  try {
    await listenWith(options, target, access);
  } finally {
    await access.close();
  }
}

async function listenWith(options: ListenOptions, target: URL, access: ReceiverAccess): Promise<void> {
  const base = options.url.replace(/\/+$/, '');
  const auth = { authorization: `Bearer ${options.apiKey}` };
  let res: Response;
  try {
    res = await fetch(`${base}/api/v1/listen_sessions`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify(options.events ? { enabled_events: options.events } : {}),
      signal: options.signal,
    });
  } catch (err) {
    if (options.signal.aborted) return;
    throw new ConfigError(
      `cannot reach payhooks at ${base}: ${((err as Error).cause as Error | undefined)?.message ?? (err as Error).message}. Is it running (payhooks serve)? Pass its address with --url.`,
    );
  }
  if (!res.ok || !res.body) {
    const text = await res.text();
    let message = text;
    try {
      const e = (JSON.parse(text) as { error?: { code?: string; message?: string } }).error;
      if (e) message = `${e.code}: ${e.message}`;
    } catch {
      // not our error shape
    }
    throw new ConfigError(`payhooks refused the listen session (HTTP ${res.status}): ${message}`);
  }
  let sessionId = '';
  const inFlight = new Set<Promise<void>>();
  try {
    for await (const msg of sseMessages(res.body)) {
      if (msg.event === 'session') {
        const s = JSON.parse(msg.data) as { id: string; secret: string; enabled_events: string[] };
        sessionId = s.id;
        options.print(`Ready! Forwarding ${s.enabled_events.join(', ')} to ${target.href} (session ${s.id}).`);
        options.print(`Your webhook signing secret for this session is ${s.secret}`);
        options.print('Press Ctrl-C to stop.');
      } else if (msg.event === 'delivery') {
        const d = JSON.parse(msg.data) as ForwardRequest;
        const p = forward(d, target.href, access).then(async (result) => {
          options.print(
            result.status_code !== null
              ? `<-- ${result.status_code} ${result.duration_ms} ms ${d.event_id}`
              : `<-- error ${result.error} ${d.event_id}`,
          );
          await fetch(`${base}/api/v1/listen_sessions/${sessionId}/results`, {
            method: 'POST',
            headers: { ...auth, 'content-type': 'application/json' },
            body: JSON.stringify({ forward_id: d.forward_id, ...result }),
          }).then(
            (r) => r.body?.cancel(),
            () => options.print(`!!  could not report the result of ${d.event_id} to payhooks`),
          );
        });
        options.print(`--> ${d.event_type} ${d.event_id}`);
        inFlight.add(p);
        void p.finally(() => inFlight.delete(p));
      }
    }
  } catch (err) {
    if (!options.signal.aborted) throw new ConfigError(`the listen session's stream broke: ${(err as Error).message}`);
  }
  await Promise.all([...inFlight]);
  if (!options.signal.aborted) throw new ConfigError('payhooks closed the listen session (the server stopped?).');
}

/**
 * One forward: the server's bytes and signature, to the local receiver, within 10 s; with the
 * receiver's authentication, and once more with a new token when it answers 401 to one.
 */
async function forward(d: ForwardRequest, url: string, access: ReceiverAccess): Promise<ForwardResult> {
  const started = performance.now();
  try {
    let authorization = await access.authorization();
    let res = await post(d, url, access, authorization);
    if (res.statusCode === 401 && authorization?.startsWith('Bearer ')) {
      await res.body.dump();
      access.refused(authorization);
      authorization = await access.authorization();
      res = await post(d, url, access, authorization);
    }
    const duration_ms = Math.round(performance.now() - started);
    const body = (await res.body.text()).slice(0, RESPONSE_BODY_LIMIT);
    return { status_code: res.statusCode, body, duration_ms, error: null };
  } catch (err) {
    const e = err as Error & { code?: string; cause?: Error & { code?: string } };
    return {
      status_code: null,
      body: '',
      duration_ms: Math.round(performance.now() - started),
      error: e.cause?.code ?? e.code ?? e.message,
    };
  }
}

function post(d: ForwardRequest, url: string, access: ReceiverAccess, authorization: string | null): Promise<Dispatcher.ResponseData> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    [EVENT_ID_HEADER]: d.event_id,
    [SIGNATURE_HEADER]: d.signature,
  };
  if (authorization !== null) headers.authorization = authorization;
  if (access.transport) return access.transport.request(url, headers, d.body, AbortSignal.timeout(9_000));
  return request(url, { method: 'POST', headers, body: d.body, headersTimeout: 9_000, bodyTimeout: 9_000 });
}

import { type SpanHandle, tracing } from '../telemetry/tracing.ts';
import type { AttemptResult, SendRequest } from './destinations/attempt.ts';
import type { Sender } from './sender.ts';
import { BROKER_PROTOCOLS } from '../endpoint-urls/broker-url.ts';

/**
 * The span of one delivery attempt (only while tracing): an HTTP client span (`POST`), or a
 * messaging producer span for a broker endpoint, linked to the span that published the event.
 * Its traceparent goes out with the attempt, so the merchant's tracing joins it. The URL is
 * recorded without its query, which may carry the merchant's own tokens.
 */
export function startAttemptSpan(
  d: { id: string; event_id: string; endpoint_id: string; url: string; trace_parent: string | null },
  attempt: number,
  options: { root: boolean },
): SpanHandle {
  const ids = {
    'payhooks.delivery.id': d.id,
    'payhooks.event.id': d.event_id,
    'payhooks.endpoint.id': d.endpoint_id,
    'payhooks.attempt': attempt,
  };
  let url: URL | null = null;
  try {
    url = new URL(d.url);
  } catch {}
  const broker = url ? BROKER_PROTOCOLS[url.protocol] : undefined;
  if (url && broker) {
    const destination =
      broker.kind === 'amqp'
        ? `${url.searchParams.get('exchange') ?? ''}/${url.searchParams.get('routing_key') ?? ''}`
        : (url.searchParams.get('subject') ?? '');
    return tracing.startSpan(`publish ${destination}`, {
      kind: 'producer',
      root: options.root,
      links: [d.trace_parent],
      attributes: {
        ...ids,
        'messaging.system': broker.kind === 'amqp' ? 'rabbitmq' : 'nats',
        'messaging.operation.type': 'send',
        'messaging.destination.name': destination,
        'server.address': url.hostname,
      },
    });
  }
  return tracing.startSpan('POST', {
    kind: 'client',
    root: options.root,
    links: [d.trace_parent],
    attributes: {
      ...ids,
      'http.request.method': 'POST',
      'url.full': url ? `${url.origin}${url.pathname}` : undefined,
      'server.address': url?.hostname,
      'server.port': url ? Number(url.port || (url.protocol === 'https:' ? 443 : 80)) : undefined,
    },
  });
}

export function endAttemptSpan(span: SpanHandle, result: AttemptResult): void {
  span.setAttributes({
    'http.response.status_code': result.statusCode ?? undefined,
    'error.type': result.errorKind ?? undefined,
  });
  span.end(result.succeeded ? undefined : (result.errorMessage ?? result.errorKind ?? 'failed'));
}

/**
 * One attempt through the sender, inside its span while tracing (the span's traceparent goes
 * out with it). `root`: a worker's attempt starts its own trace; a manual one is a child of the
 * API request that asked for it.
 */
export function sendTraced(
  sender: Sender,
  row: Parameters<typeof startAttemptSpan>[0],
  attempt: number,
  req: SendRequest,
  root: boolean,
): Promise<AttemptResult> {
  // Not an async function: untraced (the common case), the sender's promise is the attempt's.
  if (!tracing.enabled) return sender.send(req);
  const span = startAttemptSpan(row, attempt, { root });
  return sender.send({ ...req, traceparent: span.traceparent }).then((result) => {
    endAttemptSpan(span, result);
    return result;
  });
}

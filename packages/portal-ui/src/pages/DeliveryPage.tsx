import { useEffect, useState } from 'react';
import { api, type Attempt, type Delivery } from '../api.ts';
import { Link } from '../router.tsx';
import { useSession } from '../session.tsx';
import { Confirm, Crumbs, ErrorBox, Loading, Notice, StateBadge, Time, prettyJson } from '../ui.tsx';

export function DeliveryPage({ id }: { id: string }) {
  const [delivery, setDelivery] = useState<Delivery | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [result, setResult] = useState<{ ok: boolean; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const [confirmCancel, setConfirmCancel] = useState(false);
  // Replay, Resend and Cancel are a developer's: a viewer reads the delivery only.
  const { can } = useSession();
  const developer = can('developer');

  useEffect(() => {
    api.delivery(id).then(setDelivery, setError);
  }, [id]);

  /** An action on the delivery: the page shows the delivery it returns and what happened, in place. */
  const act = async (what: () => Promise<{ after: Delivery; result: { ok: boolean; text: string } }>) => {
    setBusy(true);
    setError(null);
    setResult(null);
    try {
      const done = await what();
      setDelivery(done.after);
      setResult(done.result);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  /** Replay or Resend: one manual attempt now. */
  const attempt = (kind: 'replay' | 'resend') =>
    act(async () => {
      const after = await (kind === 'replay' ? api.replay(id) : api.resend(id));
      const last = after.attempts.at(-1);
      return {
        after,
        result: {
          ok: !!last?.succeeded,
          text: last?.succeeded
            ? `${kind === 'replay' ? 'Replayed' : 'Resent'}: ${last.status_code === null ? 'the broker confirmed it' : `your endpoint answered ${last.status_code}`}.`
            : `The attempt failed${last?.status_code ? ` with ${last.status_code}` : last?.error_kind ? ` (${last.error_kind})` : ''}. The delivery is still ${after.state.replace('_', ' ')}.`,
        },
      };
    });

  /** Cancel: no more attempts; asked first, since it can't be undone. */
  const cancel = () =>
    act(async () => {
      const after = await api.cancelDelivery(id);
      setConfirmCancel(false);
      return { after, result: { ok: true, text: 'Cancelled: no more attempts will be made.' } };
    });

  if (!delivery)
    return error ? (
      <section>
        <h1>Delivery not found</h1>
        <ErrorBox error={error} />
      </section>
    ) : (
      <Loading />
    );
  const replayable = delivery.state === 'failed_retrying' || delivery.state === 'exhausted';
  const unfinished = delivery.state === 'pending' || delivery.state === 'failed_retrying';
  return (
    <>
      <Crumbs
        items={[
          { label: 'Webhooks', to: '/webhooks' },
          { label: 'Endpoints', to: '/webhooks/endpoints' },
          delivery.endpoint_deleted
            ? { label: `${delivery.endpoint_url ?? delivery.endpoint_id} (deleted)` }
            : { label: delivery.endpoint_url ?? delivery.endpoint_id, to: `/webhooks/endpoints/${delivery.endpoint_id}` },
          { label: 'Delivery' },
        ]}
      />
      <div className="page-head">
        <div className="grow">
          <h1>
            {delivery.event_type ?? 'Event'} <StateBadge state={delivery.state} />
          </h1>
          <p className="meta mono small">
            Delivery {delivery.id} · event <Link to={`/webhooks/events/${delivery.event_id}`}>{delivery.event_id}</Link>
          </p>
        </div>
        <div className="actions">
          {developer && replayable && (
            <button type="button" className="primary" disabled={busy || delivery.endpoint_deleted} onClick={() => void attempt('replay')}>
              {busy ? 'Sending…' : 'Replay'}
            </button>
          )}
          {developer && delivery.state === 'delivered' && (
            <button type="button" disabled={busy || delivery.endpoint_deleted} onClick={() => void attempt('resend')}>
              {busy ? 'Sending…' : 'Resend'}
            </button>
          )}
          {developer && unfinished && !delivery.endpoint_deleted && (
            <button type="button" className="danger" disabled={busy} onClick={() => setConfirmCancel(true)}>
              Cancel delivery…
            </button>
          )}
        </div>
      </div>
      {developer && confirmCancel && unfinished && (
        <Confirm
          title="Cancel this delivery?"
          confirm="Cancel delivery"
          keep="Keep it"
          busy={busy}
          onClose={() => setConfirmCancel(false)}
          onConfirm={() => void cancel()}
        >
          No more attempts will be made, and it can’t be replayed afterwards. If this endpoint gets each object’s events in order, the
          object’s later events are sent next.
        </Confirm>
      )}
      <ErrorBox error={error} />
      {result && <Notice kind={result.ok ? 'success' : 'warning'}>{result.text}</Notice>}

      <dl className="facts card">
        <div>
          <dt>State</dt>
          <dd>
            <StateBadge state={delivery.state} />
          </dd>
        </div>
        <div>
          <dt>Attempts</dt>
          <dd data-testid="attempt-count">{delivery.attempt_count}</dd>
        </div>
        <div>
          <dt>Next attempt</dt>
          <dd>{delivery.next_attempt_at ? <Time iso={delivery.next_attempt_at} /> : <span className="muted">none scheduled</span>}</dd>
        </div>
        {delivery.waiting_for && (
          <div>
            <dt>Waiting for</dt>
            <dd data-testid="waiting-for">
              <Link to={`/webhooks/deliveries/${delivery.waiting_for.delivery_id}`}>{delivery.waiting_for.delivery_id}</Link>, an earlier
              event about the same object: this endpoint gets each object's events in order.
            </dd>
          </div>
        )}
        {delivery.state === 'cancelled' && (
          <div>
            <dt>Cancelled</dt>
            <dd data-testid="cancel-reason">
              {delivery.cancel_reason === 'endpoint_deleted'
                ? 'The endpoint was deleted before this delivery finished.'
                : delivery.cancel_reason === 'manual'
                  ? 'Cancelled in the portal before it finished.'
                  : delivery.cancel_reason}
            </dd>
          </div>
        )}
        <div>
          <dt>Created</dt>
          <dd>
            <Time iso={delivery.created_at} />
          </dd>
        </div>
      </dl>

      <h2>Attempts</h2>
      {delivery.attempts.length === 0 ? (
        <p className="empty">No attempt yet: the first one is on its way.</p>
      ) : (
        <ol className="attempts" reversed>
          {[...delivery.attempts].reverse().map((a) => (
            <AttemptItem key={a.id} attempt={a} broker={isBrokerUrl(delivery.endpoint_url)} />
          ))}
        </ol>
      )}

      <h2>Event body</h2>
      <pre className="code" data-testid="event-body">
        {prettyJson(delivery.event_body)}
      </pre>
    </>
  );
}

/** amqp(s):// and nats:// / tls:// endpoints get a message, not an HTTP request. */
export function isBrokerUrl(url: string | null): boolean {
  return url !== null && /^(amqps?|nats|tls):\/\//i.test(url);
}

/**
 * One attempt. For a broker endpoint the message carried the event id and signature as message
 * headers (no User-Agent: that is HTTP's), and the broker's confirmation or refusal stands where
 * a receiver's response body would.
 */
function AttemptItem({ attempt: a, broker }: { attempt: Attempt; broker: boolean }) {
  return (
    <li className={`attempt ${a.succeeded ? 'ok' : 'fail'}`} data-attempt={a.attempt_number}>
      <div className="attempt-head">
        {a.error_kind === 'interrupted' ? (
          <span className="badge state-interrupted" title="Its worker stopped mid-attempt: your endpoint may have received it">
            Interrupted
          </span>
        ) : (
          <span className={`badge ${a.succeeded ? 'state-delivered' : 'state-exhausted'}`}>{a.succeeded ? 'Succeeded' : 'Failed'}</span>
        )}
        <strong>#{a.attempt_number}</strong>
        <span className="tag">{a.trigger === 'manual' ? 'Manual' : 'Automatic'}</span>
        <Time iso={a.started_at} />
        <span className="spacer" />
        {!broker && (
          <span>
            Status <strong data-testid="status-code">{a.status_code ?? '—'}</strong>
          </span>
        )}
        <span className="muted">{a.duration_ms} ms</span>
      </div>
      {a.rate_limited_ms !== null && a.rate_limited_ms > 0 && (
        <p className="muted small" data-testid="rate-limited">
          Waited {a.rate_limited_ms} ms for the endpoint's limit of requests per second before it was sent.
        </p>
      )}
      {(a.error_kind || a.error_message) && (
        <p className="attempt-error">
          Error: {a.error_kind}
          {a.error_message ? ` — ${a.error_message}` : ''}
          {a.worker_id && (
            <>
              {' '}
              (worker <span className="mono">{a.worker_id}</span>)
            </>
          )}
        </p>
      )}
      {a.request_headers && <RequestHeaders headers={a.request_headers} broker={broker} />}
      <details open={!a.succeeded}>
        <summary>{broker ? "The broker's answer" : 'Response body'}</summary>
        {/* Receivers control this text: it is rendered as text, never as HTML. */}
        <pre className="code response-body">{a.response_body === null || a.response_body === '' ? '(empty)' : a.response_body}</pre>
      </details>
    </li>
  );
}

/**
 * The headers the attempt was sent with, as the API lists them (a broker message's have no
 * User-Agent). Each signature is shortened to its first and last characters: enough to match it
 * against a receiver's log, and the page stays readable.
 */
function RequestHeaders({ headers, broker }: { headers: NonNullable<Attempt['request_headers']>; broker: boolean }) {
  const shown = Object.entries(headers).filter((h): h is [string, string] => typeof h[1] === 'string');
  return (
    <details className="request-headers">
      <summary>{broker ? 'Message headers' : 'Request headers'}</summary>
      <dl className="headers mono small">
        {shown.map(([name, value]) => (
          <div key={name} data-header={name}>
            <dt>{name}</dt>
            <dd title={SIGNATURES.has(name) ? value : undefined}>{SIGNATURES.has(name) ? shortenSignature(value) : value}</dd>
          </div>
        ))}
      </dl>
    </details>
  );
}

/** The headers whose values are shortened (each shown whole on hover). */
const SIGNATURES = new Set(['Service-Signature', 'webhook-signature']);

/**
 * `t=…,v1=<64 hex>,…` (Service-Signature) or `v1,<base64> v1,<base64>` (webhook-signature) with
 * each signature cut to 8 + … + 6 characters.
 */
export function shortenSignature(header: string): string {
  const cut = (s: string) => (s.length > 16 ? `${s.slice(0, 8)}…${s.slice(-6)}` : s);
  if (!header.startsWith('t='))
    return header
      .split(' ')
      .map((entry) => {
        const comma = entry.indexOf(',');
        return comma > 0 ? `${entry.slice(0, comma + 1)}${cut(entry.slice(comma + 1))}` : entry;
      })
      .join(' ');
  return header
    .split(',')
    .map((part) => {
      const [key, value = ''] = part.split('=', 2) as [string, string?];
      return key === 'v1' && value.length > 16 ? `v1=${cut(value)}` : part;
    })
    .join(',');
}

import { useEffect, useState } from 'react';
import { api, type Endpoint, type EventTypeEntry } from '../api.ts';
import { useSession } from '../session.tsx';
import { Crumbs, ErrorBox, Loading, Notice } from '../ui.tsx';

/**
 * The event catalog: each type, what it means, which change sends it, its JSON Schema and an
 * example. In sandbox a developer picks an endpoint and sends a real example of a payment event to
 * it ("Send example"), delivered, signed and logged like any other.
 */
export function EventTypes() {
  const { session, can } = useSession();
  const [types, setTypes] = useState<EventTypeEntry[] | null>(null);
  const [endpoints, setEndpoints] = useState<Endpoint[]>([]);
  const [target, setTarget] = useState('');
  const [sent, setSent] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const sending = session.environment === 'sandbox' && can('developer');

  useEffect(() => {
    api.eventTypes().then((r) => setTypes(r.data), setError);
    if (sending)
      api.endpoints().then((page) => {
        const enabled = page.data.filter((e) => e.status === 'enabled');
        setEndpoints(enabled);
        setTarget((t) => t || enabled[0]?.id || '');
      }, setError);
  }, [sending]);

  const send = async (type: string) => {
    setError(null);
    setSent(null);
    try {
      const r = await api.sendTestEvent(target, type);
      setSent(`Sent a ${r.type} example (${r.event_id}) to the endpoint: see its delivery log.`);
    } catch (err) {
      setError(err);
    }
  };

  if (!types) return error ? <ErrorBox error={error} /> : <Loading />;
  return (
    <section className="event-types">
      <Crumbs items={[{ label: 'Webhooks', to: '/webhooks' }, { label: 'Event types' }]} />
      <h1>Event types</h1>
      <p className="muted">
        Every event your endpoints may receive. The list grows over time: acknowledge (2xx) and ignore the types you don’t handle. Each
        schema is a JSON Schema (2020-12) of the whole event.
      </p>
      {sending && (
        <div className="card form">
          <label htmlFor="example-endpoint">Send examples to</label>
          <select id="example-endpoint" value={target} onChange={(e) => setTarget(e.target.value)}>
            {endpoints.map((e) => (
              <option key={e.id} value={e.id}>
                {e.url}
              </option>
            ))}
          </select>
          {endpoints.length === 0 && <p className="muted small">Add an enabled sandbox endpoint to send examples to it.</p>}
        </div>
      )}
      {sent && (
        <Notice kind="success">
          <span data-testid="example-sent">{sent}</span>
        </Notice>
      )}
      <ErrorBox error={error} />
      {types.map((t) => (
        <article className="card event-type" key={t.type} data-type={t.type}>
          <h2>
            <code>{t.type}</code>
          </h2>
          <p>{t.description}</p>
          <p className="muted small">Sent when: {t.sent_when}</p>
          {sending && t.sendable && (
            <button type="button" disabled={!target} onClick={() => void send(t.type)}>
              Send example to this endpoint
            </button>
          )}
          <details>
            <summary>Example</summary>
            <pre>{JSON.stringify(t.example, null, 2)}</pre>
          </details>
          <details>
            <summary>JSON Schema</summary>
            <pre>{JSON.stringify(t.schema, null, 2)}</pre>
          </details>
        </article>
      ))}
    </section>
  );
}

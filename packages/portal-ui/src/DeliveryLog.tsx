import { useCallback, useEffect, useState } from 'react';
import { api, type DeliveryRow, type DeliveryState } from './api.ts';
import { Link } from './router.tsx';
import { ErrorBox, Loading, StateBadge, Time } from './ui.tsx';

const STATES: Array<{ value: '' | DeliveryState; label: string }> = [
  { value: '', label: 'All states' },
  { value: 'pending', label: 'Pending' },
  { value: 'delivered', label: 'Delivered' },
  { value: 'failed_retrying', label: 'Failed, retrying' },
  { value: 'exhausted', label: 'Exhausted' },
  { value: 'cancelled', label: 'Cancelled' },
];

/**
 * The delivery log, newest first, filtered by endpoint or event and by state, 20 a page
 * (keyset pages: "Newer" goes back through the cursors already seen).
 */
export function DeliveryLog({
  endpointId,
  eventId,
  showEndpoint = false,
  refreshKey = 0,
}: {
  endpointId?: string;
  eventId?: string;
  showEndpoint?: boolean;
  refreshKey?: number;
}) {
  const [state, setState] = useState<'' | DeliveryState>('');
  const [cursors, setCursors] = useState<string[]>([]); // starting_after of each page after the first
  const [page, setPage] = useState<{ data: DeliveryRow[]; has_more: boolean } | null>(null);
  const [error, setError] = useState<unknown>(null);

  const load = useCallback(async () => {
    setError(null);
    try {
      const filter: Record<string, string> = {};
      if (endpointId) filter.endpoint_id = endpointId;
      if (eventId) filter.event_id = eventId;
      if (state) filter.state = state;
      const after = cursors.at(-1);
      if (after) filter.starting_after = after;
      setPage(await api.deliveries(filter));
    } catch (err) {
      setError(err);
    }
  }, [endpointId, eventId, state, cursors]);

  // biome-ignore lint/correctness/useExhaustiveDependencies: a new refreshKey is how the page asks for a reload
  useEffect(() => {
    void load();
  }, [load, refreshKey]);

  return (
    <section className="log" aria-label="Delivery log">
      <div className="toolbar">
        <h2>Deliveries</h2>
        <span className="spacer" />
        <label className="inline">
          State{' '}
          <select
            value={state}
            onChange={(e) => {
              setState(e.target.value as '' | DeliveryState);
              setCursors([]);
            }}
          >
            {STATES.map((s) => (
              <option key={s.value} value={s.value}>
                {s.label}
              </option>
            ))}
          </select>
        </label>
        <button type="button" onClick={() => void load()}>
          Refresh
        </button>
      </div>
      <ErrorBox error={error} />
      {!page ? (
        <Loading />
      ) : page.data.length === 0 ? (
        <p className="empty">No deliveries{state ? ' in this state' : ''} yet.</p>
      ) : (
        <div className="table-wrap">
          <table>
            <thead>
              <tr>
                <th>Event</th>
                {showEndpoint && <th className="hide-sm">Endpoint</th>}
                <th>State</th>
                <th className="hide-sm">Attempts</th>
                <th className="hide-sm">Last answer</th>
                <th className="hide-sm">Created</th>
              </tr>
            </thead>
            <tbody>
              {page.data.map((d) => (
                <tr key={d.id} data-delivery-id={d.id}>
                  <td>
                    <Link to={`/webhooks/deliveries/${d.id}`} className="strong">
                      {d.event_type ?? 'event'}
                    </Link>
                    <div className="mono small muted">{d.event_id}</div>
                  </td>
                  {showEndpoint && <td className="url-cell hide-sm">{d.endpoint_url ?? d.endpoint_id}</td>}
                  <td>
                    <StateBadge state={d.state} />
                  </td>
                  <td className="hide-sm">{d.attempt_count}</td>
                  <td className="hide-sm">{d.last_attempt ? (d.last_attempt.status_code ?? d.last_attempt.error_kind ?? '—') : '—'}</td>
                  <td className="hide-sm">
                    <Time iso={d.created_at} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {page && (cursors.length > 0 || page.has_more) && (
        <div className="pager">
          <button type="button" disabled={cursors.length === 0} onClick={() => setCursors(cursors.slice(0, -1))}>
            ← Newer
          </button>
          <span className="muted small">Page {cursors.length + 1}</span>
          <button type="button" disabled={!page.has_more} onClick={() => setCursors([...cursors, page.data.at(-1)!.id])}>
            Older →
          </button>
        </div>
      )}
    </section>
  );
}

import { type FormEvent, useCallback, useEffect, useState } from 'react';
import { api, type DeliveryFilter, type DeliveryRow, type DeliveryState } from './api.ts';
import { latestOnly } from './latest.ts';
import { Link } from './router.tsx';
import { CopyId, ErrorBox, Loading, ScrollTable, StateBadge, Time } from './ui.tsx';

const STATES: Array<{ value: '' | DeliveryState; label: string }> = [
  { value: '', label: 'All states' },
  { value: 'pending', label: 'Pending' },
  { value: 'delivered', label: 'Delivered' },
  { value: 'failed_retrying', label: 'Failed, retrying' },
  { value: 'exhausted', label: 'Exhausted' },
  { value: 'cancelled', label: 'Cancelled' },
];

/** What the search box finds: an event by its id, or every event about one payment or checkout session. */
export function searchFilter(text: string): Pick<DeliveryFilter, 'event_id' | 'object_id'> | { invalid: string } | null {
  const q = text.trim();
  if (q === '') return null;
  if (/^evt_[A-Za-z0-9]+$/.test(q)) return { event_id: q };
  if (/^(pay|cs)_[A-Za-z0-9]+$/.test(q)) return { object_id: q };
  return { invalid: 'Search by an event id (evt_…), a payment id (pay_…) or a checkout session id (cs_…).' };
}

/** A `datetime-local` value (the browser's time zone) as the API's timestamp, or undefined when empty. */
const isoOf = (local: string) => (local ? new Date(local).toISOString().replace(/\.\d{3}Z$/, 'Z') : undefined);

interface Filters {
  state: '' | DeliveryState;
  type: string;
  from: string;
  to: string;
  search: string;
}
const NO_FILTERS: Filters = { state: '', type: '', from: '', to: '', search: '' };

/**
 * The delivery log, newest first, 20 a page (keyset pages: "Newer" goes back through the cursors
 * already seen), filtered by endpoint or event (the page's own), and by the merchant's choice of
 * state, event type, time range, and an event, payment or checkout session id.
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
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  const [search, setSearch] = useState('');
  const [types, setTypes] = useState<string[]>([]);
  const [cursors, setCursors] = useState<string[]>([]); // starting_after of each page after the first
  const [page, setPage] = useState<{ data: DeliveryRow[]; has_more: boolean } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [searchError, setSearchError] = useState<string | null>(null);

  useEffect(() => {
    if (eventId) return; // one event's deliveries all have its type
    api.catalog().then((c) => setTypes(c.event_types), setError);
  }, [eventId]);

  // Filter changes and refreshes overlap: only the newest read's rows are shown.
  const [latest] = useState(latestOnly);
  const load = useCallback(async () => {
    setError(null);
    try {
      const filter: DeliveryFilter = {};
      if (endpointId) filter.endpoint_id = endpointId;
      if (eventId) filter.event_id = eventId;
      if (filters.state) filter.state = filters.state;
      if (filters.type) filter.type = filters.type;
      const from = isoOf(filters.from);
      const to = isoOf(filters.to);
      if (from) filter['created[gte]'] = from;
      if (to) filter['created[lt]'] = to;
      const found = searchFilter(filters.search);
      if (found && !('invalid' in found)) Object.assign(filter, found);
      const after = cursors.at(-1);
      if (after) filter.starting_after = after;
      await latest(api.deliveries(filter), setPage, setError);
    } catch (err) {
      setError(err); // a time the browser could not read
    }
  }, [endpointId, eventId, filters, cursors, latest]);

  // biome-ignore lint/correctness/useExhaustiveDependencies: a new refreshKey is how the page asks for a reload
  useEffect(() => {
    void load();
  }, [load, refreshKey]);

  const change = (next: Partial<Filters>) => {
    setFilters({ ...filters, ...next });
    setCursors([]);
  };
  const submitSearch = (e: FormEvent) => {
    e.preventDefault();
    const found = searchFilter(search);
    if (found && 'invalid' in found) {
      setSearchError(found.invalid);
      return;
    }
    setSearchError(null);
    change({ search });
  };
  const filtered = filters.state || filters.type || filters.from || filters.to || filters.search;

  return (
    <section className="log" aria-label="Delivery log">
      <div className="toolbar">
        <h2>Deliveries</h2>
        <span className="spacer" />
        <button type="button" onClick={() => void load()}>
          Refresh
        </button>
      </div>
      <fieldset className="filters">
        <legend className="visually-hidden">Filters</legend>
        <label className="inline">
          State{' '}
          <select value={filters.state} onChange={(e) => change({ state: e.target.value as '' | DeliveryState })}>
            {STATES.map((s) => (
              <option key={s.value} value={s.value}>
                {s.label}
              </option>
            ))}
          </select>
        </label>
        {!eventId && (
          <label className="inline">
            Event type{' '}
            <select value={filters.type} onChange={(e) => change({ type: e.target.value })} aria-label="Event type">
              <option value="">All types</option>
              {types.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
          </label>
        )}
        <label className="inline">
          From <input type="datetime-local" value={filters.from} onChange={(e) => change({ from: e.target.value })} aria-label="From" />
        </label>
        <label className="inline">
          Until <input type="datetime-local" value={filters.to} onChange={(e) => change({ to: e.target.value })} aria-label="Until" />
        </label>
        {!eventId && (
          <form className="inline search" onSubmit={submitSearch} aria-label="Find a delivery">
            <input
              type="search"
              placeholder="evt_…, pay_… or cs_…"
              aria-label="Find by event, payment or checkout session id"
              value={search}
              onChange={(e) => {
                setSearch(e.target.value);
                if (e.target.value === '' && filters.search) change({ search: '' });
              }}
            />
            <button type="submit">Find</button>
          </form>
        )}
        {filtered && (
          <button
            type="button"
            className="link-button"
            onClick={() => {
              setSearch('');
              setSearchError(null);
              change(NO_FILTERS);
            }}
          >
            Clear filters
          </button>
        )}
      </fieldset>
      {searchError && (
        <p className="field-error" role="alert">
          {searchError}
        </p>
      )}
      <ErrorBox error={error} />
      {!page ? (
        <Loading />
      ) : page.data.length === 0 ? (
        <p className="empty">{filtered ? 'No deliveries match these filters.' : 'No deliveries yet.'}</p>
      ) : (
        <ScrollTable>
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
                  <td className="event-cell">
                    <Link to={`/webhooks/deliveries/${d.id}`} className="strong event-type">
                      {d.event_type ?? 'event'}
                    </Link>
                    <CopyId id={d.event_id} label="event id" />
                    {/* On a phone the endpoint column is hidden: each row names its endpoint here instead. */}
                    {showEndpoint && (
                      <div className="show-sm small muted url-line" data-testid="row-endpoint">
                        {d.endpoint_url ?? d.endpoint_id}
                      </div>
                    )}
                  </td>
                  {showEndpoint && <td className="url-cell hide-sm">{d.endpoint_url ?? d.endpoint_id}</td>}
                  <td>
                    <StateBadge state={d.state} />
                  </td>
                  <td className="hide-sm">{d.attempt_count}</td>
                  <td className="hide-sm">
                    {d.last_attempt
                      ? (d.last_attempt.status_code ?? d.last_attempt.error_kind ?? (d.last_attempt.succeeded ? 'confirmed' : '—'))
                      : '—'}
                  </td>
                  <td className="hide-sm nowrap">
                    <Time iso={d.created_at} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollTable>
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

import type { Catalog, Environment } from './api.ts';

/**
 * Event type checkboxes. "All events" subscribes to `*`. In live the required minimum can't be
 * unticked (the server refuses a live endpoint without it too); in sandbox it is only pre-ticked.
 */
export function EventTypePicker({
  catalog,
  environment,
  value,
  onChange,
}: {
  catalog: Catalog;
  environment: Environment;
  value: string[];
  onChange: (v: string[]) => void;
}) {
  const all = value.includes(catalog.wildcard);
  const required = environment === 'live' ? catalog.required_live_event_types : [];
  const toggle = (type: string, on: boolean) =>
    onChange(on ? [...value.filter((t) => t !== catalog.wildcard), type] : value.filter((t) => t !== type));
  return (
    <fieldset className="types">
      <legend>Event types</legend>
      <label className="check">
        <input
          type="checkbox"
          checked={all}
          onChange={(e) => onChange(e.target.checked ? [catalog.wildcard] : [...new Set([...catalog.required_live_event_types])])}
        />
        <span>
          All events (<code>*</code>), including types added later
        </span>
      </label>
      <div className="type-grid">
        {catalog.event_types.map((t) => {
          const locked = required.includes(t);
          return (
            <label key={t} className={`check${all ? ' dim' : ''}`}>
              <input
                type="checkbox"
                disabled={all || locked}
                checked={all || value.includes(t)}
                onChange={(e) => toggle(t, e.target.checked)}
              />
              <code>{t}</code>
              {locked && <span className="tag">required for live</span>}
            </label>
          );
        })}
      </div>
      {environment === 'live' && (
        <p className="muted small">Live endpoints always receive {catalog.required_live_event_types.join(', ')}.</p>
      )}
    </fieldset>
  );
}

/** The starting selection of a new endpoint: the live minimum, in either environment. */
export function initialTypes(catalog: Catalog): string[] {
  return [...catalog.required_live_event_types];
}

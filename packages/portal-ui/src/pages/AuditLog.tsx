import { Fragment, useCallback, useEffect, useState, type FormEvent } from 'react';
import { api, type AuditEvent, type AuditFilter } from '../api.ts';
import { latestOnly } from '../latest.ts';
import { Crumbs, ErrorBox, Loading, ScrollTable, Time } from '../ui.tsx';

/** Actions the trail records, offered as suggestions in the Action filter (any text is accepted). */
const ACTIONS = [
  'webhook_endpoint.create',
  'webhook_endpoint.update',
  'webhook_endpoint.delete',
  'webhook_endpoint.rotate_secret',
  'webhook_endpoint.test_event',
  'webhook_endpoint.bulk_replay',
  'webhook_endpoint.auto_disable',
  'webhook_delivery.replay',
  'webhook_delivery.resend',
  'webhook_delivery.cancel',
  'session.create',
  'session.delete',
  'session.switch_environment',
  'portal_session.issue',
  'portal_user.invite',
  'portal_user.create',
  'portal_user.role_change',
  'portal_user.remove',
  'portal_user.password_change',
  'portal_user.password_reset',
  'portal_user.two_factor_enable',
  'portal_user.two_factor_disable',
  'invitation.revoke',
  'settings.update',
];

const ACTOR_TYPES: Record<AuditEvent['actor']['type'], string> = {
  user: 'Portal user',
  embedded_user: 'Dashboard user',
  api_key: 'API key',
  internal: 'Payment service',
  operator: 'Operator',
  system: 'payhooks',
  customer: 'Customer',
};

interface Filters {
  actor_id: string;
  action: string;
  resource_id: string;
  outcome: '' | AuditEvent['outcome'];
  environment: '' | 'sandbox' | 'live';
  from: string;
  to: string;
}
const NO_FILTERS: Filters = { actor_id: '', action: '', resource_id: '', outcome: '', environment: '', from: '', to: '' };

/** A `date` input's day (the browser's time zone) as the API's timestamp: its start, or with `next` the next day's start. */
export function dayBound(day: string, next = false): string | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day);
  if (!m) return undefined;
  const d = new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]) + (next ? 1 : 0));
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function auditQuery(f: Filters): AuditFilter {
  const q: AuditFilter = {};
  if (f.actor_id.trim()) q.actor_id = f.actor_id.trim();
  if (f.action.trim()) q.action = f.action.trim();
  if (f.resource_id.trim()) q.resource_id = f.resource_id.trim();
  if (f.outcome) q.outcome = f.outcome;
  if (f.environment) q.environment = f.environment;
  const from = dayBound(f.from);
  const to = dayBound(f.to, true); // "to" is the last day shown, whole
  if (from) q['created[gte]'] = from;
  if (to) q['created[lt]'] = to;
  return q;
}

/** `/audit` (admins): who changed what in this Platform, when, from where, and how it ended; newest first. */
export function AuditLog() {
  const [draft, setDraft] = useState<Filters>(NO_FILTERS);
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  const [rows, setRows] = useState<AuditEvent[] | null>(null);
  const [hasMore, setHasMore] = useState(false);
  const [open, setOpen] = useState<Set<string>>(new Set());
  const [error, setError] = useState<unknown>(null);
  const [loadingMore, setLoadingMore] = useState(false);

  const [latest] = useState(latestOnly);
  const load = useCallback(() => {
    setError(null);
    setRows(null);
    void latest(
      api.auditEvents(auditQuery(filters)),
      (page) => {
        setRows(page.data);
        setHasMore(page.has_more);
      },
      setError,
    );
  }, [filters, latest]);
  useEffect(load, [load]);

  const more = async () => {
    const last = rows?.at(-1);
    if (!last) return;
    setLoadingMore(true);
    try {
      const page = await api.auditEvents({ ...auditQuery(filters), starting_after: last.id });
      setRows([...(rows ?? []), ...page.data]);
      setHasMore(page.has_more);
    } catch (err) {
      setError(err);
    } finally {
      setLoadingMore(false);
    }
  };

  const apply = (e: FormEvent) => {
    e.preventDefault();
    setFilters(draft);
  };
  const set = (change: Partial<Filters>) => setDraft({ ...draft, ...change });
  const filtered = Object.values(filters).some((v) => v !== '');
  const toggle = (id: string) => {
    const next = new Set(open);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setOpen(next);
  };

  return (
    <section className="audit">
      <Crumbs items={[{ label: 'Webhooks', to: '/webhooks' }, { label: 'Audit log' }]} />
      <div className="toolbar">
        <h1>Audit log</h1>
        <span className="spacer" />
        <button type="button" onClick={load}>
          Refresh
        </button>
      </div>
      <p className="muted">Every change in your Platform, in both environments, and every refused attempt: newest first.</p>
      <form className="filters audit-filters" onSubmit={apply} aria-label="Filter the audit log">
        <label className="inline">
          Actor id
          <input
            type="text"
            value={draft.actor_id}
            placeholder="usr_… or your user id"
            onChange={(e) => set({ actor_id: e.target.value })}
          />
        </label>
        <label className="inline">
          Action
          <input
            type="text"
            list="audit-actions"
            value={draft.action}
            placeholder="webhook_endpoint.update"
            onChange={(e) => set({ action: e.target.value })}
          />
        </label>
        <datalist id="audit-actions">
          {ACTIONS.map((a) => (
            <option key={a} value={a} />
          ))}
        </datalist>
        <label className="inline">
          Resource id
          <input type="text" value={draft.resource_id} placeholder="we_…" onChange={(e) => set({ resource_id: e.target.value })} />
        </label>
        <label className="inline">
          Outcome
          <select value={draft.outcome} onChange={(e) => set({ outcome: e.target.value as Filters['outcome'] })}>
            <option value="">Any outcome</option>
            <option value="succeeded">Succeeded</option>
            <option value="failed">Failed</option>
            <option value="denied">Denied</option>
          </select>
        </label>
        <label className="inline">
          Environment
          <select value={draft.environment} onChange={(e) => set({ environment: e.target.value as Filters['environment'] })}>
            <option value="">Both</option>
            <option value="sandbox">Sandbox</option>
            <option value="live">Live</option>
          </select>
        </label>
        <label className="inline">
          From
          <input type="date" value={draft.from} onChange={(e) => set({ from: e.target.value })} />
        </label>
        <label className="inline">
          To
          <input type="date" value={draft.to} onChange={(e) => set({ to: e.target.value })} />
        </label>
        <button type="submit" className="primary">
          Filter
        </button>
        {filtered && (
          <button
            type="button"
            className="link-button"
            onClick={() => {
              setDraft(NO_FILTERS);
              setFilters(NO_FILTERS);
            }}
          >
            Clear filters
          </button>
        )}
      </form>
      <ErrorBox error={error} />
      {!rows ? (
        error ? null : (
          <Loading />
        )
      ) : rows.length === 0 ? (
        <p className="empty">{filtered ? 'No entries match these filters.' : 'No entries yet.'}</p>
      ) : (
        <ScrollTable>
          <table className="audit-table">
            <thead>
              <tr>
                <th>Time</th>
                <th>Actor</th>
                <th>Action</th>
                <th className="hide-sm">Resource</th>
                <th>Outcome</th>
                <th className="hide-sm">From</th>
                <th>
                  <span className="visually-hidden">Details</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <Fragment key={r.id}>
                  <tr data-audit-id={r.id} data-action={r.action} data-outcome={r.outcome}>
                    <td className="nowrap">
                      <Time iso={r.created_at} />
                    </td>
                    <td className="actor-cell">
                      <div>{r.actor.email ?? r.actor.name ?? r.actor.id ?? '—'}</div>
                      <div className="muted small">
                        {ACTOR_TYPES[r.actor.type] ?? r.actor.type}
                        {r.actor.email && r.actor.id ? ` · ${r.actor.id}` : ''}
                      </div>
                    </td>
                    <td>
                      <code className="type">{r.action}</code>
                      {r.environment && <div className="muted small">{r.environment === 'live' ? 'Live' : 'Sandbox'}</div>}
                    </td>
                    <td className="hide-sm id-cell">
                      <div className="small">{r.resource.type}</div>
                      {r.resource.id && <div className="mono small muted">{r.resource.id}</div>}
                    </td>
                    <td>
                      <span className={`badge outcome-${r.outcome}`}>
                        {r.outcome === 'succeeded' ? 'Succeeded' : r.outcome === 'failed' ? 'Failed' : 'Denied'}
                      </span>
                      {r.error_code && <div className="mono small muted">{r.error_code}</div>}
                    </td>
                    <td className="hide-sm mono small">{r.origin.ip ?? '—'}</td>
                    <td>
                      <button
                        type="button"
                        className="link-button"
                        aria-expanded={open.has(r.id)}
                        aria-controls={`audit-details-${r.id}`}
                        onClick={() => toggle(r.id)}
                      >
                        {open.has(r.id) ? 'Hide' : 'Details'}
                      </button>
                    </td>
                  </tr>
                  {open.has(r.id) && (
                    <tr className="audit-details" id={`audit-details-${r.id}`}>
                      <td colSpan={7}>
                        {/* What was changed is the merchant's data: shown as text, never as HTML. */}
                        <pre className="code" data-testid="audit-details">
                          {JSON.stringify(
                            {
                              id: r.id,
                              resource: r.resource,
                              changes: r.changes,
                              user_agent: r.origin.user_agent,
                              request_id: r.origin.request_id,
                            },
                            null,
                            2,
                          )}
                        </pre>
                      </td>
                    </tr>
                  )}
                </Fragment>
              ))}
            </tbody>
          </table>
        </ScrollTable>
      )}
      {rows && hasMore && (
        <div className="pager">
          <button type="button" disabled={loadingMore} onClick={() => void more()}>
            {loadingMore ? 'Loading…' : 'Load more'}
          </button>
        </div>
      )}
    </section>
  );
}

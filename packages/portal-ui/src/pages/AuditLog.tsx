import { Fragment, useCallback, useEffect, useState, type FormEvent } from 'react';
import { api, type AuditEvent } from '../api.ts';
import { auditQuery, NO_FILTERS, type Filters } from '../audit-filter.ts';
import { latestOnly } from '../latest.ts';
import { useSession } from '../session.tsx';
import { CopyId, Crumbs, ErrorBox, Loading, ScrollTable, Time } from '../ui.tsx';

/** Actions the trail records, offered as suggestions in the Action filter (any text is accepted). */
const ACTIONS = [
  'webhook_endpoint.create',
  'webhook_endpoint.update',
  'webhook_endpoint.delete',
  'webhook_endpoint.rotate_secret',
  'webhook_endpoint.rotate_signing_key',
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

/** `/audit` (admins): who changed what in this Platform, when, from where, and how it ended; newest first. */
export function AuditLog() {
  const { session } = useSession();
  // An embedded session reads its own environment's entries and the Platform-wide ones only.
  const locked = session.environment_locked;
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
      <p className="muted">
        {locked
          ? `Every change in ${session.environment === 'live' ? 'Live' : 'Sandbox'} and every Platform-wide one (settings, team, sign-ins), and every refused attempt: newest first.`
          : 'Every change in your Platform, in both environments, and every refused attempt: newest first.'}
      </p>
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
        {!locked && (
          <label className="inline">
            Environment
            <select value={draft.environment} onChange={(e) => set({ environment: e.target.value as Filters['environment'] })}>
              <option value="">Both</option>
              <option value="sandbox">Sandbox</option>
              <option value="live">Live</option>
            </select>
          </label>
        )}
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
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <Fragment key={r.id}>
                  <tr data-audit-id={r.id} data-action={r.action} data-outcome={r.outcome}>
                    <td className="time-cell">
                      <Time iso={r.created_at} />
                    </td>
                    <td className="actor-cell">
                      <div>{r.actor.email ?? r.actor.name ?? r.actor.id ?? '—'}</div>
                      {/* The id is who it was for certain: a payment service's own user id, usr_…, key_…, a login. */}
                      {r.actor.id && (r.actor.email || r.actor.name) && <div className="mono small">{r.actor.id}</div>}
                      <div className="muted small">{ACTOR_TYPES[r.actor.type] ?? r.actor.type}</div>
                    </td>
                    <td>
                      <code className="type">{r.action}</code>
                      <div className="small">
                        {r.environment && <span className="muted">{r.environment === 'live' ? 'Live' : 'Sandbox'} · </span>}
                        <button
                          type="button"
                          className="link-button details-toggle"
                          aria-expanded={open.has(r.id)}
                          aria-controls={`audit-details-${r.id}`}
                          onClick={() => toggle(r.id)}
                        >
                          {open.has(r.id) ? 'Hide' : 'Details'}
                        </button>
                      </div>
                    </td>
                    <td className="hide-sm">
                      <div className="small">{r.resource.type}</div>
                      {r.resource.id && <CopyId id={r.resource.id} label="resource id" />}
                    </td>
                    <td>
                      <span className={`badge outcome-${r.outcome}`}>
                        {r.outcome === 'succeeded' ? 'Succeeded' : r.outcome === 'failed' ? 'Failed' : 'Denied'}
                      </span>
                      {r.error_code && <div className="mono small muted">{r.error_code}</div>}
                    </td>
                    <td className="hide-sm mono small ip-cell">{r.origin.ip ?? '—'}</td>
                  </tr>
                  {open.has(r.id) && (
                    <tr className="audit-details" id={`audit-details-${r.id}`}>
                      <td colSpan={6}>
                        {/* What was changed is the merchant's data: shown as text, never as HTML. */}
                        <pre className="code" data-testid="audit-details">
                          {JSON.stringify(
                            {
                              id: r.id,
                              actor: r.actor,
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

import { useEffect, useState } from 'react';
import { api, type Endpoint } from '../api.ts';
import { Link } from '../router.tsx';
import { useSession } from '../session.tsx';
import { Crumbs, ErrorBox, HealthBadge, Loading, StatusBadge, SuccessChart, ScrollTable } from '../ui.tsx';

export function EndpointList() {
  const [cursors, setCursors] = useState<string[]>([]);
  const [page, setPage] = useState<{ data: Endpoint[]; has_more: boolean } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const { can } = useSession();

  useEffect(() => {
    api.endpoints(cursors.at(-1)).then(setPage, setError);
  }, [cursors]);

  return (
    <>
      <div className="page-head">
        <div>
          <Crumbs items={[{ label: 'Webhooks', to: '/webhooks' }, { label: 'Endpoints' }]} />
          <h1>Endpoints</h1>
        </div>
        {can('developer') && (
          <Link to="/webhooks/endpoints/new" className="button primary">
            + Add endpoint
          </Link>
        )}
      </div>
      <ErrorBox error={error} />
      {!page ? (
        <Loading />
      ) : page.data.length === 0 ? (
        <div className="card empty">
          <p>
            {can('developer')
              ? 'No endpoints yet. Add one to start receiving signed events.'
              : 'No endpoints yet. A developer or an admin of your team can add one.'}
          </p>
        </div>
      ) : (
        <ScrollTable>
          <table className="endpoints">
            <thead>
              <tr>
                <th>URL</th>
                <th>Status</th>
                <th className="hide-sm">Event types</th>
                <th>Last 24 h</th>
              </tr>
            </thead>
            <tbody>
              {page.data.map((e) => (
                <tr key={e.id} data-endpoint-id={e.id}>
                  <td className="url-cell">
                    <Link to={`/webhooks/endpoints/${e.id}`} className="strong">
                      {e.url}
                    </Link>
                    {e.description && <div className="muted small">{e.description}</div>}
                  </td>
                  <td>
                    <StatusBadge status={e.status} reason={e.disabled_reason} /> <HealthBadge health={e.health} />
                  </td>
                  <td className="hide-sm">
                    <div className="types-cell">
                      {e.enabled_events.includes('*') ? (
                        <span className="tag">All events</span>
                      ) : (
                        e.enabled_events.map((t) => (
                          <code key={t} className="type">
                            {t}
                          </code>
                        ))
                      )}
                    </div>
                  </td>
                  <td>{e.stats && <SuccessChart stats={e.stats} />}</td>
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
          <button type="button" disabled={!page.has_more} onClick={() => setCursors([...cursors, page.data.at(-1)!.id])}>
            Older →
          </button>
        </div>
      )}
    </>
  );
}

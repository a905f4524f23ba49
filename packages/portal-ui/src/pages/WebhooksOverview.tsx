import { useEffect, useState } from 'react';
import { api, type Endpoint, type WebhookStats } from '../api.ts';
import { DeliveryLog } from '../DeliveryLog.tsx';
import { Link } from '../router.tsx';
import { LazyEndpointHealthTable, LazyStatsPanel } from '../LazyStats.tsx';
import { Crumbs } from '../ui.tsx';

export function WebhooksOverview() {
  const [stats, setStats] = useState<WebhookStats | null>(null);
  const [endpoints, setEndpoints] = useState<Endpoint[]>([]);
  useEffect(() => {
    // The table names endpoints by URL: the first hundred are read once (others show their id).
    api.endpoints(undefined, 100).then(
      (page) => setEndpoints(page.data),
      () => setEndpoints([]),
    );
  }, []);
  return (
    <>
      <div className="page-head">
        <div>
          <Crumbs items={[{ label: 'Webhooks' }]} />
          <h1>Webhooks</h1>
          <p className="muted">Every payment and checkout change is sent, signed, to your endpoints. How all of them answered:</p>
        </div>
        <Link to="/webhooks/endpoints" className="button">
          Manage endpoints
        </Link>
      </div>
      <LazyStatsPanel onStats={setStats} />
      {stats && (
        <section className="card" aria-labelledby="by-endpoint">
          <h2 id="by-endpoint">By endpoint</h2>
          <LazyEndpointHealthTable stats={stats} endpoints={endpoints} />
        </section>
      )}
      <DeliveryLog showEndpoint />
    </>
  );
}

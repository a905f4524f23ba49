import { DeliveryLog } from '../DeliveryLog.tsx';
import { Link } from '../router.tsx';
import { Crumbs } from '../ui.tsx';

export function WebhooksOverview() {
  return (
    <>
      <div className="page-head">
        <div>
          <Crumbs items={[{ label: 'Webhooks' }]} />
          <h1>Webhooks</h1>
          <p className="muted">Every payment and checkout change is sent, signed, to your endpoints. Recent deliveries to all endpoints:</p>
        </div>
        <Link to="/webhooks/endpoints" className="button">
          Manage endpoints
        </Link>
      </div>
      <DeliveryLog showEndpoint />
    </>
  );
}

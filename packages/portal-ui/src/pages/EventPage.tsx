import { useEffect, useState } from 'react';
import { api, type EventView } from '../api.ts';
import { DeliveryLog } from '../DeliveryLog.tsx';
import { Crumbs, ErrorBox, Loading, Time, prettyJson } from '../ui.tsx';

export function EventPage({ id }: { id: string }) {
  const [event, setEvent] = useState<EventView | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    api.event(id).then(setEvent, setError);
  }, [id]);
  if (!event)
    return error ? (
      <section>
        <h1>Event not found</h1>
        <ErrorBox error={error} />
      </section>
    ) : (
      <Loading />
    );
  return (
    <>
      <Crumbs items={[{ label: 'Webhooks', to: '/webhooks' }, { label: 'Event' }]} />
      <h1>{event.type}</h1>
      <p className="meta mono small">
        {event.id} · created <Time iso={event.created_at} />
      </p>
      <DeliveryLog eventId={id} showEndpoint />
      <h2>Event body</h2>
      <pre className="code" data-testid="event-body">
        {prettyJson(event.body)}
      </pre>
    </>
  );
}

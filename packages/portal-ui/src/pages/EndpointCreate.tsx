import { useEffect, useState, type FormEvent } from 'react';
import { api, type Catalog, type Environment } from '../api.ts';
import { rememberSecret } from '../created-secret.ts';
import {
  authenticationOf,
  setsCredentials,
  EndpointOptions,
  rateCapOf,
  ReceiverAuthFields,
  TrustedCasField,
  tlsOf,
  type AuthChoice,
} from '../EndpointOptions.tsx';
import { EventTypePicker, initialTypes } from '../EventTypePicker.tsx';
import { parseHeaderLines } from '../header-lines.ts';
import { Link, navigate } from '../router.tsx';
import { Crumbs, ErrorBox, Loading } from '../ui.tsx';

export function EndpointCreate({ environment }: { environment: Environment }) {
  const [catalog, setCatalog] = useState<Catalog | null>(null);
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [types, setTypes] = useState<string[]>([]);
  const [standardWebhooks, setStandardWebhooks] = useState(false);
  const [headerLines, setHeaderLines] = useState('');
  const [asymmetric, setAsymmetric] = useState(false);
  const [rate, setRate] = useState('');
  const [auth, setAuth] = useState<AuthChoice>({ mode: 'none' });
  const [cas, setCas] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    api.catalog().then((c) => {
      setCatalog(c);
      setTypes(initialTypes(c));
    }, setError);
  }, []);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const parsed = parseHeaderLines(headerLines);
    if ('error' in parsed) {
      setError(parsed.error);
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const created = await api.createEndpoint({
        url: url.trim(),
        enabled_events: types,
        description: description.trim() || null,
        standard_webhooks: standardWebhooks,
        headers: parsed.headers,
        max_requests_per_second: rateCapOf(rate),
        ...(setsCredentials(auth) ? { authentication: authenticationOf(auth) } : {}),
        ...(cas.trim() !== '' ? { tls: tlsOf(cas) } : {}),
        // Left unticked, the Platform's default decides.
        ...(asymmetric ? { asymmetric_signature: true } : {}),
      });
      rememberSecret(created.id, created.secret!);
      navigate(`/webhooks/endpoints/${created.id}`, { replace: true });
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };

  if (!catalog) return error ? <ErrorBox error={error} /> : <Loading />;
  return (
    <>
      <Crumbs items={[{ label: 'Webhooks', to: '/webhooks' }, { label: 'Endpoints', to: '/webhooks/endpoints' }, { label: 'New' }]} />
      <h1>
        Add an endpoint <span className={`badge env-${environment}`}>{environment === 'live' ? 'Live' : 'Sandbox'}</span>
      </h1>
      <form className="card form" onSubmit={(e) => void submit(e)}>
        <ErrorBox error={error} />
        <label htmlFor="url">Endpoint URL</label>
        <input
          id="url"
          type="url"
          required
          placeholder="https://example.com/webhooks"
          value={url}
          onChange={(e) => setUrl(e.target.value)}
        />
        <p className="hint">
          {environment === 'live' ? 'Live endpoints need https.' : 'Where we POST each event, signed with the endpoint’s whsec_ secret.'} Or
          a message broker: <code>amqps://user:password@host/vhost?exchange=…&amp;routing_key=…</code> (RabbitMQ) or{' '}
          <code>tls://user:password@host?subject=…</code> (NATS JetStream); the credentials are stored encrypted and never shown again.
        </p>
        <label htmlFor="description">
          Description <span className="muted">(optional)</span>
        </label>
        <input id="description" type="text" maxLength={5000} value={description} onChange={(e) => setDescription(e.target.value)} />
        <EventTypePicker catalog={catalog} environment={environment} value={types} onChange={setTypes} />
        <EndpointOptions
          idPrefix="create-"
          standardWebhooks={standardWebhooks}
          onStandardWebhooks={setStandardWebhooks}
          headerLines={headerLines}
          onHeaderLines={setHeaderLines}
          rate={rate}
          onRate={setRate}
        />
        <ReceiverAuthFields idPrefix="create-" current={null} value={auth} onChange={setAuth} />
        <TrustedCasField idPrefix="create-" value={cas} onChange={setCas} />
        <label className="check">
          <input type="checkbox" checked={asymmetric} onChange={(e) => setAsymmetric(e.target.checked)} /> Also sign with ed25519 (a public
          key verifies it)
        </label>
        <p className="hint">Left unticked, your Platform’s default applies. You can change it later under Edit.</p>
        <div className="actions">
          <button type="submit" className="primary" disabled={busy || types.length === 0}>
            {busy ? 'Adding…' : 'Add endpoint'}
          </button>
          <Link to="/webhooks/endpoints" className="button">
            Cancel
          </Link>
        </div>
      </form>
    </>
  );
}

import { useEffect, useRef, useState, type FormEvent } from 'react';
import { api, type BulkReplay, type Catalog, type Endpoint, type Environment } from '../api.ts';
import { takeSecret } from '../created-secret.ts';
import { DeliveryLog } from '../DeliveryLog.tsx';
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
import { EventTypePicker } from '../EventTypePicker.tsx';
import { LazyStatsPanel } from '../LazyStats.tsx';
import { formatHeaderLines, parseHeaderLines } from '../header-lines.ts';
import { latestOnly } from '../latest.ts';
import { Link, navigate } from '../router.tsx';
import { useSession } from '../session.tsx';
import { Confirm, Crumbs, CopyId, ErrorBox, HealthBadge, Loading, Notice, ScrollTable, StatusBadge, SuccessChart, Time } from '../ui.tsx';

/** Reads after Send test event: 10 at 1 s, then 22 at 5 s (about two minutes). */
const TEST_EVENT_POLLS = 32;

export function EndpointDetail({ id, environment }: { id: string; environment: Environment }) {
  const [endpoint, setEndpoint] = useState<Endpoint | null>(null);
  const [secret, setSecret] = useState(() => takeSecret(id));
  const [rolling, setRolling] = useState(false);
  const [rollingKey, setRollingKey] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [editing, setEditing] = useState(false);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [busy, setBusy] = useState(false);
  const [refreshKey, setRefreshKey] = useState(0);
  // Changes are a developer's: a viewer sees the endpoint and its log, no button that can only fail.
  const { can } = useSession();
  const developer = can('developer');

  // Reads overlap (an action's refresh, the test-event watch): only the newest is shown.
  const [latest] = useState(latestOnly);
  const reload = () => latest(api.endpoint(id), setEndpoint, setError);
  // biome-ignore lint/correctness/useExhaustiveDependencies: load once per endpoint id; reload is a new function every render
  useEffect(() => {
    void reload();
  }, [id]);

  // After "Send test event" the attempt comes from a worker a moment later: read the card and the
  // log again until it shows up: every second at first, then every 5 s (a busy worker, a slow
  // receiver taking its full deadline), for about two minutes in all.
  const [watch, setWatch] = useState<{ attempts: number; polls: number } | null>(null);
  // biome-ignore lint/correctness/useExhaustiveDependencies: reload is a new function every render
  useEffect(() => {
    if (!watch) return;
    if (watch.polls >= TEST_EVENT_POLLS || (endpoint?.stats?.attempts ?? 0) > watch.attempts) {
      setWatch(null);
      setRefreshKey((k) => k + 1);
      return;
    }
    const t = setTimeout(
      () => {
        void reload().then(() => setWatch((w) => (w ? { ...w, polls: w.polls + 1 } : w)));
      },
      watch.polls < 10 ? 1000 : 5000,
    );
    return () => clearTimeout(t);
  }, [watch, endpoint]);

  /**
   * An update's answer is the endpoint without its 24-hour card: the card shown stays until the
   * refresh that follows reads it again (the test-event watch counts from it meanwhile).
   */
  const updated = (next: Endpoint) => setEndpoint((prev) => ({ ...next, stats: prev?.stats ?? next.stats }));

  /** The endpoint (its 24-hour card included) and its log, as they are now. */
  const refresh = () => {
    void reload();
    setRefreshKey((k) => k + 1);
  };

  // Every action changes what the card and the log show: both are read again once it is done.
  const act = async (what: () => Promise<unknown>, done?: string) => {
    setBusy(true);
    setError(null);
    setNotice(null);
    try {
      await what();
      if (done) setNotice(done);
      refresh();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  if (!endpoint) return error ? <NotFound error={error} /> : <Loading />;
  return (
    <>
      <Crumbs
        items={[{ label: 'Webhooks', to: '/webhooks' }, { label: 'Endpoints', to: '/webhooks/endpoints' }, { label: endpoint.url }]}
      />
      <div className="page-head">
        <div className="grow">
          <h1 className="url-title">{endpoint.url}</h1>
          <p className="meta">
            <StatusBadge status={endpoint.status} reason={endpoint.disabled_reason} /> <HealthBadge health={endpoint.health} />{' '}
            <CopyId id={endpoint.id} label="endpoint id" /> · created <Time iso={endpoint.created_at} />
          </p>
          {endpoint.description && <p>{endpoint.description}</p>}
          {endpoint.url_has_credentials && (
            <p className="muted small" data-testid="url-credentials">
              Broker credentials stored, encrypted; they are not shown again. To change them, edit the URL with new user:password@.
            </p>
          )}
          {endpoint.delivery_order === 'per_object' && (
            <p className="muted small" data-testid="delivery-order">
              Ordered per object: the events about one payment or checkout session are sent one at a time, in the order they happened.
            </p>
          )}
          {endpoint.max_requests_per_second !== null && (
            <p className="muted small" data-testid="rate-cap">
              At most {endpoint.max_requests_per_second} requests a second: under a backlog, deliveries wait for their turn.
            </p>
          )}
          {endpoint.paused_until && (
            <p className="muted small" data-testid="paused-until">
              Paused until <Time iso={endpoint.paused_until} />: the endpoint asked to be retried later (429 or 503 with Retry-After).
              Deliveries due meanwhile go when the pause ends.
            </p>
          )}
          {endpoint.standard_webhooks && (
            <p className="muted small" data-testid="standard-webhooks">
              Standard Webhooks headers on: each delivery also carries webhook-id, webhook-timestamp and webhook-signature.
            </p>
          )}
          {Object.keys(endpoint.headers).length > 0 && (
            <p className="muted small" data-testid="custom-headers">
              Custom headers: {Object.keys(endpoint.headers).join(', ')}.
            </p>
          )}
          {endpoint.authentication && (
            <p className="muted small" data-testid="receiver-authentication">
              Authenticates to your receiver: {authenticationWords(endpoint)}.
            </p>
          )}
          {endpoint.tls && (
            <p className="muted small" data-testid="trusted-cas">
              Trusts certificate authorities of your own beside the public ones.
            </p>
          )}
        </div>
      </div>

      {endpoint.health.state === 'failing' && (
        <Notice kind="warning">
          <span data-testid="health-failing">
            Failing since <Time iso={endpoint.health.since} />: every attempt since then has failed.{' '}
            {endpoint.health.disables_at ? (
              <>
                If nothing succeeds, it will be disabled automatically <Time iso={endpoint.health.disables_at} />
                {endpoint.health.warning ? ` (${endpoint.health.warning}% of the way there)` : ''}.{' '}
              </>
            ) : null}
            The attempts below say what your receiver answered; once it answers 2xx again, the endpoint recovers by itself.
          </span>
        </Notice>
      )}
      {endpoint.health.state === 'recovered' && (
        <p className="muted small" data-testid="health-recovered">
          Recovered <Time iso={endpoint.health.since} />: a delivery succeeded after a run of failures. Replay what failed meanwhile with
          “Recover after an outage” below.
        </p>
      )}
      {endpoint.disabled_reason === 'failing' && (
        <Notice kind="warning">
          Disabled automatically <Time iso={endpoint.disabled_at} />: every delivery to it failed for days. New events are not sent to it,
          and deliveries still retrying fail without a request until they run out of attempts. Fix the receiver, enable the endpoint, then
          replay what failed with “Recover after an outage” below.
        </Notice>
      )}
      {endpoint.previous_secret_expires_at && (
        <p className="muted small" data-testid="previous-secret">
          The previous signing secret also signs deliveries until <Time iso={endpoint.previous_secret_expires_at} />.
        </p>
      )}

      {secret && <SecretPanel secret={secret} />}
      <ErrorBox error={error} />
      {notice && <Notice kind="success">{notice}</Notice>}

      {developer && (
        <div className="actions wrap">
          <button type="button" onClick={() => setEditing(!editing)} aria-expanded={editing}>
            Edit
          </button>
          {endpoint.status === 'enabled' ? (
            <button
              type="button"
              disabled={busy}
              onClick={() =>
                void act(
                  async () => updated(await api.updateEndpoint(id, { status: 'disabled' })),
                  'Endpoint disabled: new events are not sent to it. Deliveries still retrying keep their schedule and fail without a request; replay them once it is enabled again.',
                )
              }
            >
              Disable
            </button>
          ) : (
            <button
              type="button"
              disabled={busy}
              onClick={() =>
                void act(
                  async () => updated(await api.updateEndpoint(id, { status: 'enabled' })),
                  'Endpoint enabled: new events are sent to it again, and deliveries still retrying go at their next scheduled attempt.',
                )
              }
            >
              Enable
            </button>
          )}
          {environment === 'sandbox' && (
            <button
              type="button"
              disabled={busy || endpoint.status !== 'enabled'}
              onClick={() =>
                void act(async () => {
                  await api.sendTestEvent(id);
                  setWatch({ attempts: endpoint.stats?.attempts ?? 0, polls: 0 });
                }, 'Test event sent: a sandbox payment went through, and its payment.succeeded event goes to this endpoint only. It appears below.')
              }
            >
              Send test event
            </button>
          )}
          <button type="button" onClick={() => setRolling(true)} aria-expanded={rolling}>
            Roll secret…
          </button>
          {endpoint.asymmetric_signature && (
            <button type="button" onClick={() => setRollingKey(true)} aria-expanded={rollingKey}>
              Roll signing key…
            </button>
          )}
          <span className="spacer" />
          <button type="button" className="danger" onClick={() => setConfirmDelete(true)}>
            Delete…
          </button>
        </div>
      )}

      {developer && rollingKey && endpoint.asymmetric_signature && (
        <RollSecretForm
          what="key"
          busy={busy}
          onCancel={() => setRollingKey(false)}
          onRoll={(expireIn) =>
            void act(
              async () => {
                setEndpoint({ ...endpoint, ...(await api.rotateSigningKey(id, expireIn)) });
                setRollingKey(false);
              },
              expireIn === 0
                ? 'Signing key rolled: only the new key signs from now on.'
                : 'Signing key rolled: deliveries carry a signature by each key until the previous one expires.',
            )
          }
        />
      )}

      {developer && rolling && (
        <RollSecretForm
          what="secret"
          busy={busy}
          onCancel={() => setRolling(false)}
          onRoll={(expireIn) =>
            void act(
              async () => {
                const rolled = await api.rotateSecret(id, expireIn);
                const { secret: fresh, ...shown } = rolled;
                setSecret(fresh);
                setEndpoint({ ...endpoint, ...shown });
                setRolling(false);
              },
              expireIn === 0
                ? 'Secret rolled: only the new secret signs from now on.'
                : 'Secret rolled: deliveries carry a signature by each secret until the previous one expires.',
            )
          }
        />
      )}

      {developer && confirmDelete && (
        <Confirm
          title="Delete this endpoint?"
          confirm="Delete endpoint"
          keep="Cancel"
          busy={busy}
          onClose={() => setConfirmDelete(false)}
          onConfirm={() =>
            void act(async () => {
              await api.deleteEndpoint(id);
              navigate('/webhooks/endpoints');
            })
          }
        >
          It stops receiving events at once. Its delivery log stays readable. This can’t be undone.
        </Confirm>
      )}

      {developer && editing && (
        <EditForm
          endpoint={endpoint}
          environment={environment}
          onSaved={(e) => {
            setEndpoint({ ...endpoint, ...e });
            setEditing(false);
            setNotice('Endpoint saved.');
          }}
          onCancel={() => setEditing(false)}
        />
      )}

      {endpoint.asymmetric_signature && <PublicKeys keys={endpoint.public_keys} />}

      <div className="grid2">
        <div className="card">
          <h2>Event types</h2>
          <div className="types-cell">
            {endpoint.enabled_events.includes('*') ? (
              <span className="tag">All events</span>
            ) : (
              endpoint.enabled_events.map((t) => (
                <code key={t} className="type">
                  {t}
                </code>
              ))
            )}
          </div>
        </div>
        <div className="card">
          <h2>Last 24 hours</h2>
          {endpoint.stats && <SuccessChart stats={endpoint.stats} />}
          <p className="muted small">
            {endpoint.stats?.attempts ?? 0} {endpoint.stats?.attempts === 1 ? 'attempt' : 'attempts'}, {endpoint.stats?.succeeded ?? 0}{' '}
            answered with a 2xx.
          </p>
        </div>
      </div>

      <LazyStatsPanel key={refreshKey} endpointId={id} />
      {developer && <BulkReplayForm endpointId={id} onProgress={refresh} />}
      <DeliveryLog endpointId={id} refreshKey={refreshKey} />
    </>
  );
}

const OVERLAPS: Array<{ seconds: number; label: string }> = [
  { seconds: 0, label: 'Now' },
  { seconds: 3600, label: 'In 1 hour' },
  { seconds: 86_400, label: 'In 24 hours' },
  { seconds: 3 * 86_400, label: 'In 3 days' },
  { seconds: 7 * 86_400, label: 'In 7 days' },
];

/** The ed25519 public keys that sign (new first): what a receiver verifies the v1a= entries with. */
function PublicKeys({ keys }: { keys: Endpoint['public_keys'] }) {
  return (
    <section className="card" aria-label="Public keys">
      <h2>Public keys (ed25519)</h2>
      <p className="muted small">
        Each delivery’s Service-Signature carries a v1a= signature per key below. Give your receiver the whpk_ key, or let it fetch your
        Platform’s JWKS document and pick the key by kid. They are public: no secret is needed to verify.
      </p>
      <ScrollTable>
        <thead>
          <tr>
            <th>Public key</th>
            <th>kid</th>
            <th>Created</th>
            <th>Stops signing</th>
          </tr>
        </thead>
        <tbody>
          {keys.map((k) => (
            <tr key={k.kid} data-kid={k.kid}>
              <td>
                <CopyId id={k.public_key} label="public key" />
              </td>
              <td>
                <CopyId id={k.kid} label="kid" />
              </td>
              <td>
                <Time iso={k.created_at} />
              </td>
              <td>{k.expires_at ? <Time iso={k.expires_at} /> : <span className="muted">Current key</span>}</td>
            </tr>
          ))}
        </tbody>
      </ScrollTable>
    </section>
  );
}

/** "Roll secret" or "Roll signing key": a new one now; the old one keeps signing for the chosen overlap. */
function RollSecretForm({
  what,
  busy,
  onRoll,
  onCancel,
}: {
  what: 'secret' | 'key';
  busy: boolean;
  onRoll: (expireIn: number) => void;
  onCancel: () => void;
}) {
  const [expireIn, setExpireIn] = useState(86_400);
  const noun = what === 'secret' ? 'secret' : 'key';
  return (
    <form
      className="card confirm"
      aria-labelledby={`roll-${what}-title`}
      onKeyDown={(e) => e.key === 'Escape' && onCancel()}
      onSubmit={(e) => {
        e.preventDefault();
        onRoll(expireIn);
      }}
    >
      <h2 id={`roll-${what}-title`}>{what === 'secret' ? 'Roll the signing secret?' : 'Roll the ed25519 signing key?'}</h2>
      <p>
        A new {noun} signs every delivery from now on. Until the old one expires, each delivery carries a signature by both, so your
        receiver keeps verifying while you deploy the new {what === 'secret' ? 'secret' : 'public key'}.
      </p>
      <label>
        Old {noun} expires{' '}
        <select value={expireIn} onChange={(e) => setExpireIn(Number(e.target.value))} aria-label={`Old ${noun} expires`}>
          {OVERLAPS.map((o) => (
            <option key={o.seconds} value={o.seconds}>
              {o.label}
            </option>
          ))}
        </select>
      </label>
      <div className="actions">
        <button type="submit" className="primary" disabled={busy}>
          {what === 'secret' ? 'Roll secret' : 'Roll signing key'}
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function NotFound({ error }: { error: unknown }) {
  return (
    <section>
      <h1>Endpoint not found</h1>
      <ErrorBox error={error} />
      <Link to="/webhooks/endpoints">Back to endpoints</Link>
    </section>
  );
}

function SecretPanel({ secret }: { secret: string }) {
  const [copied, setCopied] = useState(false);
  const ref = useRef<HTMLInputElement>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret);
      setCopied(true);
    } catch {
      ref.current?.select(); // no clipboard access (plain http): select it for Ctrl+C
    }
  };
  return (
    <section className="card secret" aria-label="Signing secret">
      <h2>Signing secret</h2>
      <p>
        <strong>Copy it now: you won’t see this again.</strong> Your receiver verifies every delivery’s Service-Signature with it.
      </p>
      <div className="secret-row">
        <input ref={ref} readOnly value={secret} aria-label="Signing secret" className="mono" onFocus={(e) => e.target.select()} />
        <button type="button" className="primary" onClick={() => void copy()}>
          {copied ? 'Copied' : 'Copy'}
        </button>
      </div>
    </section>
  );
}

function EditForm({
  endpoint,
  environment,
  onSaved,
  onCancel,
}: {
  endpoint: Endpoint;
  environment: Environment;
  onSaved: (e: Endpoint) => void;
  onCancel: () => void;
}) {
  const [catalog, setCatalog] = useState<Catalog | null>(null);
  const [url, setUrl] = useState(endpoint.url);
  const [description, setDescription] = useState(endpoint.description ?? '');
  const [types, setTypes] = useState<string[]>(endpoint.enabled_events);
  const [ordered, setOrdered] = useState(endpoint.delivery_order === 'per_object');
  const [standardWebhooks, setStandardWebhooks] = useState(endpoint.standard_webhooks);
  const [headerLines, setHeaderLines] = useState(() => formatHeaderLines(endpoint.headers));
  const [rate, setRate] = useState(endpoint.max_requests_per_second === null ? '' : String(endpoint.max_requests_per_second));
  const [asymmetric, setAsymmetric] = useState(endpoint.asymmetric_signature);
  const [auth, setAuth] = useState<AuthChoice>(endpoint.authentication ? { mode: 'keep' } : { mode: 'none' });
  const [cas, setCas] = useState(endpoint.tls?.ca_certificates ?? '');
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    api.catalog().then(setCatalog, setError);
  }, []);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    const parsed = parseHeaderLines(headerLines);
    if ('error' in parsed) {
      setError(parsed.error);
      return;
    }
    try {
      onSaved(
        await api.updateEndpoint(endpoint.id, {
          url: url.trim(),
          description: description.trim() || null,
          enabled_events: types,
          delivery_order: ordered ? 'per_object' : 'unordered',
          standard_webhooks: standardWebhooks,
          headers: parsed.headers,
          // Empty is no cap; anything else goes as typed, and the server says what is wrong with it.
          max_requests_per_second: rateCapOf(rate),
          asymmetric_signature: asymmetric,
          // Sent only when it changes: "signature only" on an endpoint that has none is no change.
          ...(setsCredentials(auth) || (auth.mode === 'none' && endpoint.authentication) ? { authentication: authenticationOf(auth) } : {}),
          // Sent only when it changes, like the authentication.
          ...(cas.trim() !== (endpoint.tls?.ca_certificates ?? '').trim() ? { tls: tlsOf(cas) } : {}),
        }),
      );
    } catch (err) {
      setError(err);
    }
  };
  if (!catalog) return <Loading />;
  return (
    <form className="card form" onSubmit={(e) => void submit(e)} aria-label="Edit endpoint">
      <h2>Edit endpoint</h2>
      <ErrorBox error={error} />
      <label htmlFor="edit-url">Endpoint URL</label>
      <input id="edit-url" type="url" required value={url} onChange={(e) => setUrl(e.target.value)} />
      <label htmlFor="edit-description">Description</label>
      <input id="edit-description" type="text" value={description} onChange={(e) => setDescription(e.target.value)} />
      <EventTypePicker catalog={catalog} environment={environment} value={types} onChange={setTypes} />
      <label className="check">
        <input type="checkbox" checked={ordered} onChange={(e) => setOrdered(e.target.checked)} /> Deliver each object's events in order
      </label>
      <p className="muted small">
        One payment's (or checkout session's) events then go one at a time, in the order they happened: a later one waits while an earlier
        one is retrying. Other objects are never held up.
      </p>
      <EndpointOptions
        idPrefix="edit-"
        standardWebhooks={standardWebhooks}
        onStandardWebhooks={setStandardWebhooks}
        headerLines={headerLines}
        onHeaderLines={setHeaderLines}
        rate={rate}
        onRate={setRate}
      />
      <ReceiverAuthFields idPrefix="edit-" current={authenticationWords(endpoint)} value={auth} onChange={setAuth} />
      <TrustedCasField idPrefix="edit-" value={cas} onChange={setCas} />
      <label className="check">
        <input type="checkbox" checked={asymmetric} onChange={(e) => setAsymmetric(e.target.checked)} /> Also sign with ed25519
      </label>
      <p className="muted small">
        Deliveries then carry a signature your receiver verifies with a public key alone (shown on this page and in your Platform’s JWKS
        document), beside the one made with the signing secret.
      </p>
      <div className="actions">
        <button type="submit" className="primary" disabled={types.length === 0}>
          Save
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** `datetime-local` value for a Date, in the user's time zone. */
function localInput(d: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/**
 * "Recover after an outage": the server first counts what a replay since that time would send
 * (a dry run); nothing is replayed until the merchant confirms that number.
 */
function BulkReplayForm({ endpointId, onProgress }: { endpointId: string; onProgress: () => void }) {
  const [since, setSince] = useState(() => localInput(new Date(Date.now() - 24 * 3_600_000)));
  const [preview, setPreview] = useState<{ since: string; count: number } | null>(null);
  const [job, setJob] = useState<BulkReplay | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  // biome-ignore lint/correctness/useExhaustiveDependencies: poll per job state; onProgress is a new function every parent render
  useEffect(() => {
    if (job?.status !== 'running') return;
    const t = setTimeout(() => {
      api.bulkReplayStatus(job.id).then((j) => {
        setJob(j);
        if (j.status !== 'running') onProgress();
      }, setError);
    }, 500);
    return () => clearTimeout(t);
  }, [job]);

  const run = async (what: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await what();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const count = (e: FormEvent) => {
    e.preventDefault();
    const iso = new Date(since).toISOString();
    void run(async () => {
      setJob(null);
      const found = await api.bulkReplayPreview(endpointId, iso);
      setPreview({ since: iso, count: found.count });
    });
  };
  const confirm = (iso: string) =>
    void run(async () => {
      setPreview(null);
      setJob(await api.bulkReplay(endpointId, iso));
      onProgress();
    });

  return (
    <form className="card bulk" onSubmit={count} aria-label="Bulk replay">
      <h2>Recover after an outage</h2>
      <p className="muted small">
        Replays every failed or exhausted delivery whose last attempt failed since this time, a few at a time so your endpoint isn’t
        flooded. You see how many first.
      </p>
      <div className="inline-form">
        <label htmlFor="bulk-since">Failed since</label>
        <input
          id="bulk-since"
          type="datetime-local"
          required
          value={since}
          onChange={(e) => {
            setSince(e.target.value);
            setPreview(null);
          }}
        />
        <button type="submit" disabled={busy || job?.status === 'running'}>
          Replay all failed since…
        </button>
      </div>
      <ErrorBox error={error} />
      {preview &&
        (preview.count === 0 ? (
          <Notice kind="info">
            <span data-bulk-preview="0">Nothing to replay: no delivery’s last attempt failed since then.</span>
          </Notice>
        ) : (
          <div className="confirm-inline" role="alertdialog" aria-labelledby="bulk-confirm" data-bulk-preview={preview.count}>
            <p id="bulk-confirm">
              Replay <strong>{preview.count}</strong> {preview.count === 1 ? 'delivery' : 'deliveries'} that failed since{' '}
              <Time iso={preview.since} />?
            </p>
            <div className="actions">
              <button type="button" className="primary" disabled={busy} onClick={() => confirm(preview.since)}>
                Replay {preview.count}
              </button>
              <button type="button" onClick={() => setPreview(null)}>
                Cancel
              </button>
            </div>
          </div>
        ))}
      {job && (
        <Notice kind={job.status === 'running' ? 'info' : job.failed > 0 ? 'warning' : 'success'}>
          <span data-bulk-status={job.status}>
            {job.status === 'running' ? 'Replaying… ' : 'Bulk replay finished: '}
            {job.attempted} of {job.total} replayed, {job.delivered} delivered, {job.failed} failed
            {job.skipped ? `, ${job.skipped} skipped` : ''}.
          </span>
        </Notice>
      )}
    </form>
  );
}

/** The endpoint's receiver authentication in words, without its secret; null when it has none. */
function authenticationWords(endpoint: Endpoint): string | null {
  const a = endpoint.authentication;
  if (!a) return null;
  switch (a.type) {
    case 'basic':
      return `Basic, as ${a.username}`;
    case 'mtls':
      return `client certificate ${a.subject}, issued by ${a.issuer}, until ${a.not_after}${
        a.previous ? ` (and the previous one, ${a.previous.subject}, when your gateway refuses it, until ${a.previous.expires_at})` : ''
      }`;
    case 'oauth2_client_credentials':
      return `OAuth 2.0 as client ${a.client_id}, tokens from ${a.token_url}`;
  }
}

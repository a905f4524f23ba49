/**
 * The endpoint forms' delivery options, one implementation for Add and Edit: the Standard
 * Webhooks headers, the merchant's own request headers as `Name: value` lines (header-lines.ts),
 * and the cap on requests per second (`rateCapOf` turns the field into the API's value).
 */
export function EndpointOptions({
  idPrefix,
  standardWebhooks,
  onStandardWebhooks,
  headerLines,
  onHeaderLines,
  rate,
  onRate,
}: {
  idPrefix: string;
  standardWebhooks: boolean;
  onStandardWebhooks: (on: boolean) => void;
  headerLines: string;
  onHeaderLines: (text: string) => void;
  rate: string;
  onRate: (text: string) => void;
}) {
  return (
    <>
      <label className="check">
        <input
          type="checkbox"
          checked={standardWebhooks}
          onChange={(e) => onStandardWebhooks(e.target.checked)}
          data-testid={`${idPrefix}standard-webhooks`}
        />{' '}
        Also send Standard Webhooks headers
      </label>
      <p className="muted small">
        Adds <code>webhook-id</code>, <code>webhook-timestamp</code> and <code>webhook-signature</code>, so your receiver can verify with a
        Standard Webhooks library given this endpoint’s <code>whsec_</code> secret. <code>Service-Signature</code> is sent either way.
      </p>
      <label htmlFor={`${idPrefix}headers`}>
        Custom headers <span className="muted">(optional)</span>
      </label>
      <textarea
        id={`${idPrefix}headers`}
        className="mono"
        rows={3}
        placeholder="Authorization: Basic …"
        value={headerLines}
        onChange={(e) => onHeaderLines(e.target.value)}
      />
      <p className="muted small">
        One <code>Name: value</code> per line, sent with every delivery and not signed; at most 20. Headers payhooks sets itself (
        <code>Content-Type</code>, <code>User-Agent</code>, <code>Service-*</code>, <code>webhook-*</code>…) and hop-by-hop headers can’t be
        set.
      </p>
      <label htmlFor={`${idPrefix}rate`}>Most requests per second</label>
      <input
        id={`${idPrefix}rate`}
        type="number"
        min={1}
        max={10000}
        step={1}
        placeholder="No limit"
        value={rate}
        onChange={(e) => onRate(e.target.value)}
      />
      <p className="muted small">Empty for no limit. Under a backlog, deliveries to this endpoint wait for their turn.</p>
    </>
  );
}

/** The rate field as the API takes it: empty is no cap (null); the server checks the range. */
export const rateCapOf = (rate: string): number | null => (rate.trim() === '' ? null : Number(rate.trim()));

/** The authentication fields' state: unchanged (Edit only), none, or a kind with new credentials. */
export type AuthChoice =
  | { mode: 'keep' }
  | { mode: 'none' }
  | { mode: 'basic'; username: string; password: string }
  | { mode: 'mtls'; certificate: string; privateKey: string }
  | {
      mode: 'oauth2';
      tokenUrl: string;
      clientId: string;
      clientSecret: string;
      scope: string;
      audience: string;
      method: 'client_secret_basic' | 'client_secret_post';
    };

/** Whether the choice sets new credentials (anything but keep and none). */
export const setsCredentials = (c: AuthChoice) => c.mode !== 'keep' && c.mode !== 'none';

const optional = (text: string) => (text.trim() === '' ? null : text.trim());

/** What the API takes for a choice: undefined leaves the endpoint's as it is; null removes it. */
export function authenticationOf(c: AuthChoice) {
  switch (c.mode) {
    case 'keep':
      return undefined;
    case 'none':
      return null;
    case 'basic':
      return { type: 'basic' as const, username: c.username, password: c.password };
    case 'mtls':
      return { type: 'mtls' as const, certificate: c.certificate, private_key: c.privateKey };
    case 'oauth2':
      return {
        type: 'oauth2_client_credentials' as const,
        token_url: c.tokenUrl.trim(),
        client_id: c.clientId,
        client_secret: c.clientSecret,
        scope: optional(c.scope),
        audience: optional(c.audience),
        client_auth_method: c.method,
      };
  }
}

const EMPTY: Record<string, AuthChoice> = {
  keep: { mode: 'keep' },
  none: { mode: 'none' },
  basic: { mode: 'basic', username: '', password: '' },
  mtls: { mode: 'mtls', certificate: '', privateKey: '' },
  oauth2: { mode: 'oauth2', tokenUrl: '', clientId: '', clientSecret: '', scope: '', audience: '', method: 'client_secret_basic' },
};

/**
 * How payhooks authenticates to the merchant's receiver beside the signature. Passwords, keys
 * and client secrets are typed, sent once and never shown again: on Edit, "keep" leaves the
 * stored ones untouched.
 */
export function ReceiverAuthFields({
  idPrefix,
  current,
  value,
  onChange,
}: {
  idPrefix: string;
  /** What the endpoint has now, in words ("Basic, as gw"), for Edit; null: none. */
  current: string | null;
  value: AuthChoice;
  onChange: (c: AuthChoice) => void;
}) {
  const field = (name: string, label: string, input: React.ReactNode) => (
    <>
      <label htmlFor={`${idPrefix}auth-${name}`}>{label}</label>
      {input}
    </>
  );
  const fresh = current !== null ? ', new credentials' : '';
  return (
    <>
      <label htmlFor={`${idPrefix}auth`}>Authenticate to your receiver</label>
      <select id={`${idPrefix}auth`} value={value.mode} onChange={(e) => onChange(EMPTY[e.target.value] ?? EMPTY.none!)}>
        {current !== null && <option value="keep">{current} (unchanged)</option>}
        <option value="none">Signature only</option>
        <option value="basic">{current !== null ? `Basic${fresh}` : 'Basic (username and password)'}</option>
        <option value="mtls">Client certificate (mutual TLS){fresh}</option>
        <option value="oauth2">OAuth 2.0 client credentials{fresh}</option>
      </select>
      {value.mode === 'basic' && (
        <>
          {field(
            'username',
            'Username',
            <input
              id={`${idPrefix}auth-username`}
              type="text"
              required
              maxLength={255}
              autoComplete="off"
              value={value.username}
              onChange={(e) => onChange({ ...value, username: e.target.value })}
            />,
          )}
          {field(
            'password',
            'Password',
            <input
              id={`${idPrefix}auth-password`}
              type="password"
              required
              maxLength={1024}
              autoComplete="new-password"
              value={value.password}
              onChange={(e) => onChange({ ...value, password: e.target.value })}
            />,
          )}
        </>
      )}
      {value.mode === 'mtls' && (
        <>
          {field(
            'certificate',
            'Client certificate (PEM)',
            <textarea
              id={`${idPrefix}auth-certificate`}
              className="mono"
              rows={3}
              required
              placeholder="-----BEGIN CERTIFICATE-----"
              value={value.certificate}
              onChange={(e) => onChange({ ...value, certificate: e.target.value })}
            />,
          )}
          {field(
            'key',
            'Private key (PEM)',
            <textarea
              id={`${idPrefix}auth-key`}
              className="mono"
              rows={3}
              required
              autoComplete="off"
              placeholder="-----BEGIN PRIVATE KEY-----"
              value={value.privateKey}
              onChange={(e) => onChange({ ...value, privateKey: e.target.value })}
            />,
          )}
        </>
      )}
      {value.mode === 'oauth2' && (
        <>
          {field(
            'token-url',
            'Token URL',
            <input
              id={`${idPrefix}auth-token-url`}
              type="url"
              required
              placeholder="https://auth.example.com/oauth/token"
              value={value.tokenUrl}
              onChange={(e) => onChange({ ...value, tokenUrl: e.target.value })}
            />,
          )}
          {field(
            'client-id',
            'Client ID',
            <input
              id={`${idPrefix}auth-client-id`}
              type="text"
              required
              maxLength={255}
              autoComplete="off"
              value={value.clientId}
              onChange={(e) => onChange({ ...value, clientId: e.target.value })}
            />,
          )}
          {field(
            'client-secret',
            'Client secret',
            <input
              id={`${idPrefix}auth-client-secret`}
              type="password"
              required
              maxLength={1024}
              autoComplete="new-password"
              value={value.clientSecret}
              onChange={(e) => onChange({ ...value, clientSecret: e.target.value })}
            />,
          )}
          {field(
            'scope',
            'Scope (optional)',
            <input
              id={`${idPrefix}auth-scope`}
              type="text"
              maxLength={1024}
              value={value.scope}
              onChange={(e) => onChange({ ...value, scope: e.target.value })}
            />,
          )}
          {field(
            'audience',
            'Audience (optional)',
            <input
              id={`${idPrefix}auth-audience`}
              type="text"
              maxLength={1024}
              value={value.audience}
              onChange={(e) => onChange({ ...value, audience: e.target.value })}
            />,
          )}
          {field(
            'method',
            'Client authentication',
            <select
              id={`${idPrefix}auth-method`}
              value={value.method}
              onChange={(e) =>
                onChange({ ...value, method: e.target.value === 'client_secret_post' ? 'client_secret_post' : 'client_secret_basic' })
              }
            >
              <option value="client_secret_basic">HTTP Basic (client_secret_basic)</option>
              <option value="client_secret_post">In the form body (client_secret_post)</option>
            </select>,
          )}
        </>
      )}
      <p className="muted small">
        For a receiver behind a gateway that wants its own credentials: Basic sends <code>Authorization: Basic …</code>; a client
        certificate is presented in the TLS handshake (https only); OAuth 2.0 gets an access token from your authorization server and sends{' '}
        <code>Authorization: Bearer …</code>. Passwords, keys and client secrets are stored encrypted and never shown again; the delivery
        log shows <code>[redacted]</code>.
      </p>
    </>
  );
}

/**
 * Certificate authorities this endpoint trusts beside the public ones (a receiver on a private
 * PKI), as PEM; empty for the public ones only.
 */
export function TrustedCasField({ idPrefix, value, onChange }: { idPrefix: string; value: string; onChange: (pem: string) => void }) {
  return (
    <>
      <label htmlFor={`${idPrefix}cas`}>
        Your own certificate authorities <span className="muted">(optional)</span>
      </label>
      <textarea
        id={`${idPrefix}cas`}
        className="mono"
        rows={3}
        placeholder="-----BEGIN CERTIFICATE-----"
        value={value}
        onChange={(e) => onChange(e.target.value)}
      />
      <p className="muted small">
        For a receiver whose certificate comes from your own CA: paste the CA’s PEM. It is trusted for this endpoint beside the public
        authorities, and the certificate is still checked in full, its hostname included.
      </p>
    </>
  );
}

/** The field as the API takes it: empty is none (null). */
export const tlsOf = (pem: string) => (pem.trim() === '' ? null : { ca_certificates: pem.trim() });

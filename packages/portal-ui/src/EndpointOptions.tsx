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

/** The authentication fields' state: unchanged (Edit only), none, or Basic with new credentials. */
export type AuthChoice = { mode: 'keep' } | { mode: 'none' } | { mode: 'basic'; username: string; password: string };

/** What the API takes for a choice: undefined leaves the endpoint's as it is; null removes it. */
export const authenticationOf = (c: AuthChoice) =>
  c.mode === 'keep' ? undefined : c.mode === 'none' ? null : { type: 'basic' as const, username: c.username, password: c.password };

/**
 * How payhooks authenticates to the merchant's receiver beside the signature. The password is
 * typed, sent once and never shown again: on Edit, "keep" leaves the stored one untouched.
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
  const select = (mode: string) =>
    onChange(mode === 'basic' ? { mode: 'basic', username: '', password: '' } : mode === 'keep' ? { mode: 'keep' } : { mode: 'none' });
  return (
    <>
      <label htmlFor={`${idPrefix}auth`}>Authenticate to your receiver</label>
      <select id={`${idPrefix}auth`} value={value.mode} onChange={(e) => select(e.target.value)}>
        {current !== null && <option value="keep">{current} (unchanged)</option>}
        <option value="none">Signature only</option>
        <option value="basic">{current !== null ? 'Basic, new credentials' : 'Basic (username and password)'}</option>
      </select>
      {value.mode === 'basic' && (
        <>
          <label htmlFor={`${idPrefix}auth-username`}>Username</label>
          <input
            id={`${idPrefix}auth-username`}
            type="text"
            required
            maxLength={255}
            autoComplete="off"
            value={value.username}
            onChange={(e) => onChange({ ...value, username: e.target.value })}
          />
          <label htmlFor={`${idPrefix}auth-password`}>Password</label>
          <input
            id={`${idPrefix}auth-password`}
            type="password"
            required
            maxLength={1024}
            autoComplete="new-password"
            value={value.password}
            onChange={(e) => onChange({ ...value, password: e.target.value })}
          />
        </>
      )}
      <p className="muted small">
        For a receiver behind a gateway that wants its own credentials: every delivery then carries <code>Authorization: Basic …</code>. The
        password is stored encrypted and never shown again; the delivery log shows <code>Basic [redacted]</code>.
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

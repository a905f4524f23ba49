/**
 * The endpoint forms' delivery options: the Standard Webhooks headers, and the
 * merchant's own request headers as `Name: value` lines (header-lines.ts).
 */
export function EndpointOptions({
  idPrefix,
  standardWebhooks,
  onStandardWebhooks,
  headerLines,
  onHeaderLines,
}: {
  idPrefix: string;
  standardWebhooks: boolean;
  onStandardWebhooks: (on: boolean) => void;
  headerLines: string;
  onHeaderLines: (text: string) => void;
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
    </>
  );
}

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

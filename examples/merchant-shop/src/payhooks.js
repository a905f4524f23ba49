// The two payhooks API calls the shop makes, server to server, with the secret API key. The key
// never reaches the browser.

export class PayhooksApiError extends Error {
  constructor(status, body) {
    const error = body && typeof body === 'object' ? body.error : undefined;
    super(`payhooks answered ${status}${error ? `: ${error.code} (${error.message})` : ''}`);
    this.name = 'PayhooksApiError';
    this.status = status;
    this.code = error?.code;
  }
}

/**
 * @param {{ baseUrl: string, apiKey: string, timeoutMs?: number }} options
 */
export function payhooksClient({ baseUrl, apiKey, timeoutMs = 10_000 }) {
  const base = baseUrl.replace(/\/+$/, '');

  async function call(method, path, body, headers = {}) {
    const response = await fetch(base + path, {
      method,
      headers: {
        authorization: `Bearer ${apiKey}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    let parsed;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (!response.ok) throw new PayhooksApiError(response.status, parsed);
    return parsed;
  }

  return {
    /**
     * A checkout session for one order. The order id is the Idempotency-Key: a retried "Buy" request
     * for the same order gets the same session instead of a second one.
     */
    createCheckoutSession: ({ order, successUrl, cancelUrl, doubleDelivery = false }) =>
      call(
        'POST',
        '/api/v1/checkout_sessions',
        {
          amount: order.amount,
          asset_code: order.asset_code,
          metadata: { order_id: order.id },
          success_url: successUrl,
          cancel_url: cancelUrl,
          // Sandbox only: payhooks delivers every event of this checkout twice (same evt_ id).
          ...(doubleDelivery ? { double_delivery: true } : {}),
        },
        { 'idempotency-key': `checkout-${order.id}` },
      ),
    /** The payment as payhooks knows it: the verified server-side GET of spec 1. */
    getPayment: (paymentId) => call('GET', `/api/v1/payments/${encodeURIComponent(paymentId)}`),
  };
}

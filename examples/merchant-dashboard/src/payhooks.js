// The one call the payment service's backend makes to payhooks for the Webhooks tab: a portal
// session for the signed-in user. The internal token stays on the server; the browser only ever
// sees the single-use link, which it opens once, in the frame.

/** The dashboard's roles, and what each may do in payhooks (viewer, developer or admin). */
export const PAYHOOKS_ROLE = { owner: 'admin', engineer: 'developer', support: 'viewer' };

/**
 * @param {{ payhooksUrl: string, internalToken: string }} options
 * @returns {{ portalLink(input: { merchantId: string, environment: 'sandbox' | 'live', user: { id: string, email: string, name: string, role: keyof typeof PAYHOOKS_ROLE }, returnUrl: string }): Promise<{ url: string, expires_at: string }> }}
 */
export function payhooksClient({ payhooksUrl, internalToken }) {
  const base = payhooksUrl.replace(/\/+$/, '');
  return {
    async portalLink({ merchantId, environment, user, returnUrl }) {
      const res = await fetch(`${base}/internal/v1/portal_sessions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${internalToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          merchant_id: merchantId,
          environment,
          user: { id: user.id, email: user.email, name: user.name },
          role: PAYHOOKS_ROLE[user.role],
          return_url: returnUrl,
        }),
      });
      const body = await res.json();
      if (res.status !== 201)
        throw new Error(`payhooks refused the portal session: ${res.status} ${body?.error?.code ?? ''} ${body?.error?.message ?? ''}`);
      return body;
    },
  };
}

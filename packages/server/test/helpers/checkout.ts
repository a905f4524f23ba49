/**
 * Drives the hosted checkout page over plain HTTP like a browser without script would: GET the
 * page, read the form's CSRF token, POST the chosen button's form. Redirects are not followed.
 */
export async function submitCheckout(
  pageUrl: string,
  action: 'pay' | 'fail' | 'cancel',
  options: { token?: string } = {},
): Promise<{ status: number; location: string | null; body: string }> {
  const page = await fetch(pageUrl);
  const html = await page.text();
  const token = options.token ?? /name="csrf_token" value="([^"]+)"/.exec(html)?.[1];
  if (token === undefined) throw new Error(`no CSRF token on the page (status ${page.status}):\n${html}`);
  const res = await fetch(`${pageUrl}/${action}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf_token: token }).toString(),
    redirect: 'manual',
  });
  return { status: res.status, location: res.headers.get('location'), body: await res.text() };
}

/** The events a receiver got, parsed, in arrival order. */
export function parsedEvents(
  requests: Array<{ raw: Buffer }>,
): Array<{ id: string; type: string; environment: string; merchant_id: string; data: { object: Record<string, any> } }> {
  return requests.map((r) => JSON.parse(r.raw.toString('utf8')));
}

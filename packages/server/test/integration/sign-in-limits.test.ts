import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.ts';
import { portalRequest, type PortalResponse } from '../helpers/portal.ts';
import { DEVICE_COOKIE, SIGN_IN_LIMITS } from '../../src/api/portal/sign-in-limits.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';

/**
 * Portal sign-in limits (OWASP device cookies): guessing stays slow, and a stranger who knows a
 * user's email can't lock that user out of a browser where they signed in before. The service
 * trusts 127.0.0.1 as its proxy, so each request's X-Forwarded-For is its client address.
 */
let svc: TestService;
let untrusting: TestService;

beforeAll(async () => {
  [svc, untrusting] = await Promise.all([startService({ trustProxy: ['127.0.0.1'] }), startService()]);
});
afterAll(async () => {
  await Promise.all([svc?.close(), untrusting?.close()]);
});

let addressSeq = 0;
/** A client address of its own, in TEST-NET-3. */
const newAddress = () => `203.0.113.${++addressSeq % 250}`;

function signIn(
  base: TestService,
  email: string,
  password: string,
  options: { from?: string; cookie?: string } = {},
): Promise<PortalResponse> {
  const headers: Record<string, string> = { origin: base.url };
  if (options.from) headers['x-forwarded-for'] = options.from;
  if (options.cookie) headers.cookie = options.cookie;
  return portalRequest(base.url, 'POST', '/session', { email, password }, headers);
}

function deviceCookie(res: PortalResponse): string {
  const cookies = res.headers.getSetCookie();
  const device = cookies.find((c) => c.startsWith(`${DEVICE_COOKIE}=`));
  expect(device, cookies.join('\n')).toBeDefined();
  expect(device).toMatch(/; Path=\/portal\/api\/session/);
  expect(device).toMatch(/; HttpOnly/);
  expect(device).toMatch(/; SameSite=Strict/);
  expect(device).toMatch(/; Max-Age=15552000/);
  return device!.split(';')[0]!;
}

describe('portal sign-in limits', () => {
  let user: CreatedPlatform;
  beforeAll(async () => {
    user = await svc.platform('Locked-out target');
  });

  it('a stranger guessing from many addresses gets at most 20 guesses checked a minute, and the user still signs in from a browser that knows them', async () => {
    // The user signed in before from their own browser: it holds a device cookie.
    const home = newAddress();
    const first = await signIn(svc, user.portal.email, user.portal.password, { from: home });
    expect(first.status).toBe(200);
    const cookie = deviceCookie(first);

    // An attacker spreads guesses over many addresses (one each).
    const statuses: number[] = [];
    for (let i = 0; i < SIGN_IN_LIMITS.perEmail + 10; i++) {
      statuses.push((await signIn(svc, user.portal.email, `guess-${i}`, { from: newAddress() })).status);
    }
    // The user's own first sign-in (no cookie yet) used one of the email's 20 a minute.
    const checked = SIGN_IN_LIMITS.perEmail - 1;
    expect(statuses.slice(0, checked)).toEqual(Array(checked).fill(401));
    expect(statuses.slice(checked)).toEqual(Array(statuses.length - checked).fill(429));

    // The email's allowance is spent, yet the user's own browser signs in (and a typo there is a 401, not a 429).
    expect((await signIn(svc, user.portal.email, 'a typo', { from: home, cookie })).status).toBe(401);
    const again = await signIn(svc, user.portal.email, user.portal.password, { from: home, cookie });
    expect(again.status).toBe(200);
    expect(deviceCookie(again)).toBe(cookie); // the same device keeps its id

    // A browser without the cookie is limited with the rest, with a Retry-After.
    const newBrowser = await signIn(svc, user.portal.email, user.portal.password, { from: home });
    expect(newBrowser.status).toBe(429);
    expect(newBrowser.body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limited' });
    expect(newBrowser.body.error.message).toMatch(/^Too many sign-in attempts; retry after \d+ s\.$/);
    expect(Number(newBrowser.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(newBrowser.headers.get('retry-after'))).toBeLessThanOrEqual(60);
  });

  it('a device is limited on its own: 10 attempts a minute, then 429', async () => {
    const target = await svc.platform('Device limit');
    const from = newAddress();
    const cookie = deviceCookie(await signIn(svc, target.portal.email, target.portal.password, { from }));
    const statuses: number[] = [];
    for (let i = 0; i < SIGN_IN_LIMITS.perDevice + 1; i++) {
      statuses.push((await signIn(svc, target.portal.email, `wrong-${i}`, { from: newAddress(), cookie })).status);
    }
    // The first sign-in counted against the address limits, not the device's.
    expect(statuses).toEqual([...Array(SIGN_IN_LIMITS.perDevice).fill(401), 429]);
  });

  it("a device cookie proves nothing for another user's email, and a forged one is ignored", async () => {
    const [mine, theirs] = [await svc.platform('Mine'), await svc.platform('Theirs')];
    const from = newAddress();
    const cookie = deviceCookie(await signIn(svc, mine.portal.email, mine.portal.password, { from }));
    const [nonce] = cookie.slice(DEVICE_COOKIE.length + 1).split('.');
    const forged = `${DEVICE_COOKIE}=${nonce}.${'A'.repeat(43)}`;
    // Spend `theirs`' email allowance, then try with each cookie: both are treated as no cookie.
    for (let i = 0; i < SIGN_IN_LIMITS.perEmail; i++) await signIn(svc, theirs.portal.email, `g-${i}`, { from: newAddress() });
    expect((await signIn(svc, theirs.portal.email, theirs.portal.password, { from: newAddress(), cookie })).status).toBe(429);
    expect((await signIn(svc, theirs.portal.email, theirs.portal.password, { from: newAddress(), cookie: forged })).status).toBe(429);
  });

  it('one address trying one email: 10 attempts a minute, whatever the password', async () => {
    const target = await svc.platform('Email and address');
    const from = newAddress();
    const statuses: number[] = [];
    for (let i = 0; i < SIGN_IN_LIMITS.perEmailAndAddress; i++)
      statuses.push((await signIn(svc, target.portal.email, `g${i}`, { from })).status);
    expect(statuses).toEqual(Array(SIGN_IN_LIMITS.perEmailAndAddress).fill(401));
    expect((await signIn(svc, target.portal.email, target.portal.password, { from })).status).toBe(429);
    // Another address still gets its own allowance for that email.
    expect((await signIn(svc, target.portal.email, target.portal.password, { from: newAddress() })).status).toBe(200);
  });

  it('one address trying many emails: 30 attempts a minute', async () => {
    const from = newAddress();
    const statuses: number[] = [];
    for (let i = 0; i < SIGN_IN_LIMITS.perAddress + 1; i++) {
      statuses.push((await signIn(svc, `nobody-${i}@example.com`, 'x', { from })).status);
    }
    expect(statuses).toEqual([...Array(SIGN_IN_LIMITS.perAddress).fill(401), 429]);
  });

  it('without PAYHOOKS_TRUST_PROXY a forwarded address is ignored: the connecting address is counted', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < SIGN_IN_LIMITS.perAddress + 1; i++) {
      statuses.push((await signIn(untrusting, `someone-${i}@example.com`, 'x', { from: newAddress() })).status);
    }
    expect(statuses).toEqual([...Array(SIGN_IN_LIMITS.perAddress).fill(401), 429]);
  });
});

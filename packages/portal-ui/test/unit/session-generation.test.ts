import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { api, sessionToken, setCsrfToken, setOnSessionEnded, setSessionToken, type SessionEnded } from '../../src/api.ts';

/**
 * The portal's stale-session fix (src/api.ts): every request remembers the session it was sent
 * under (a new CSRF token starts a new one), and a 401 to a request of an earlier session,
 * answered after the user signed in again, neither ends the new session nor drops its bearer
 * token. Found as a browser-test flake under load; here the answers are released in the order
 * that broke it, with `fetch` answering from a queue the test controls (no browser, no timing).
 */

interface Pending {
  url: string;
  answer(status: number, body: unknown): void;
}

let pending: Pending[];
let ended: SessionEnded[];

beforeEach(() => {
  pending = [];
  ended = [];
  setOnSessionEnded((why) => ended.push(why));
  vi.stubGlobal('fetch', (url: string) => {
    return new Promise<Response>((resolve) => {
      pending.push({
        url,
        answer: (status, body) => resolve(new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } })),
      });
    });
  });
});
afterEach(() => {
  vi.unstubAllGlobals();
  setSessionToken(null);
});

const idle = { error: { code: 'session_idle', message: 'Your session ended after 30 minutes without activity.' } };
const settle = (p: Promise<unknown>) =>
  p.then(
    () => 'answered',
    () => 'refused',
  );

describe('a 401 ends only the session its request was sent under', () => {
  it('a read sent under the old session and refused after signing in again leaves the new session alone', async () => {
    setCsrfToken('csrf-old');
    setSessionToken('old-bearer');
    const slowRead = settle(api.deliveries({}));
    // The old session ends; the user signs in again: a new CSRF token and bearer token.
    setCsrfToken('csrf-new');
    setSessionToken('new-bearer');
    // The slow read's answer comes now: the old session's 401.
    pending.shift()!.answer(401, idle);
    expect(await slowRead).toBe('refused');
    expect(ended).toEqual([]);
    expect(sessionToken()).toBe('new-bearer');
  });

  it('a 401 to a request of the current session ends it and drops its bearer token', async () => {
    setCsrfToken('csrf-current');
    setSessionToken('current-bearer');
    const read = settle(api.deliveries({}));
    pending.shift()!.answer(401, idle);
    expect(await read).toBe('refused');
    expect(ended).toEqual([{ code: 'session_idle', message: idle.error.message, bearer: true }]);
    expect(sessionToken()).toBeNull();
  });

  it('the same CSRF token arriving again (a session re-read) is the same session: its 401 still ends it', async () => {
    setCsrfToken('csrf-same');
    const read = settle(api.deliveries({}));
    setCsrfToken('csrf-same');
    pending.shift()!.answer(401, idle);
    await read;
    expect(ended.map((e) => e.code)).toEqual(['session_idle']);
  });

  it('a 401 that does not mean the session is gone (a wrong password) ends nothing', async () => {
    setCsrfToken('csrf-sign-in');
    const signIn = settle(api.signIn('a@example.com', 'wrong'));
    pending.shift()!.answer(401, { error: { code: 'invalid_credentials', message: 'Wrong email or password.' } });
    expect(await signIn).toBe('refused');
    expect(ended).toEqual([]);
  });
});

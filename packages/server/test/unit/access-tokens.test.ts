import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { describe, expect, it } from 'vitest';
import {
  AccessTokens,
  DEFAULT_TOKEN_LIFETIME_S,
  FAILURE_HOLD_MS,
  refreshAt,
  TokenEndpointError,
  type OAuthClient,
  type TokenTransport,
} from '../../src/delivery/destinations/access-tokens.ts';

/** The token cache's own logic; the requests themselves are tested against a real server in receiver-oauth2.test.ts. */

const client: OAuthClient = {
  id: 'sealed-1',
  tokenUrl: 'https://idp.example/token',
  clientId: 'id with space',
  clientSecret: 's3cr:et&',
  scope: 'webhooks',
  audience: 'https://api.example',
  method: 'client_secret_basic',
};

const answer = (statusCode: number, json: unknown) =>
  ({ statusCode, body: Readable.from([Buffer.from(JSON.stringify(json))]) }) as unknown as Dispatcher.ResponseData;

function recording(answers: Array<() => Dispatcher.ResponseData>) {
  const calls: { url: string; headers: Record<string, string>; body: string }[] = [];
  const transport: TokenTransport = async (url, headers, body) => {
    calls.push({ url, headers, body });
    return answers[Math.min(calls.length - 1, answers.length - 1)]!();
  };
  return { calls, transport };
}

describe('OAuth 2.0 access tokens: the cache', () => {
  it('renews at 90 % of the lifetime, never within a minute of its end', () => {
    expect(refreshAt(0, 60)).toBe(54_000);
    expect(refreshAt(0, 3600)).toBe(3_540_000);
    expect(refreshAt(1000, 0)).toBe(1000);
  });

  it('asks once for concurrent attempts, with the client in a form-encoded Basic header, and keeps the token', async () => {
    let now = 0;
    const tokens = new AccessTokens(() => now);
    const { calls, transport } = recording([() => answer(200, { access_token: 'tok-1', token_type: 'bearer', expires_in: 100 })]);
    const got = await Promise.all([tokens.get(client, transport), tokens.get(client, transport), tokens.get(client, transport)]);
    expect(got).toEqual(['tok-1', 'tok-1', 'tok-1']);
    expect(calls).toHaveLength(1);
    const [call] = calls;
    expect(call!.headers.authorization).toBe(`Basic ${Buffer.from('id+with+space:s3cr%3Aet%26').toString('base64')}`);
    expect(new URLSearchParams(call!.body).get('grant_type')).toBe('client_credentials');
    expect(new URLSearchParams(call!.body).get('audience')).toBe('https://api.example');
    expect(call!.body).not.toContain('client_secret');
    now = 89_999;
    expect(await tokens.get(client, transport)).toBe('tok-1');
    expect(calls).toHaveLength(1);
  });

  it('client_secret_post puts the client in the body; a missing expires_in means the default lifetime', async () => {
    let now = 0;
    const tokens = new AccessTokens(() => now);
    const { calls, transport } = recording([() => answer(200, { access_token: 'tok', token_type: 'Bearer' })]);
    await tokens.get({ ...client, method: 'client_secret_post' }, transport);
    const form = new URLSearchParams(calls[0]!.body);
    expect([form.get('client_id'), form.get('client_secret')]).toEqual(['id with space', 's3cr:et&']);
    expect(calls[0]!.headers.authorization).toBeUndefined();
    now = refreshAt(0, DEFAULT_TOKEN_LIFETIME_S) - 1;
    await tokens.get({ ...client, method: 'client_secret_post' }, transport);
    expect(calls).toHaveLength(1);
  });

  it('a refused token is dropped only if it is still the one held', async () => {
    const tokens = new AccessTokens(() => 0);
    let n = 0;
    const { calls, transport } = recording([() => answer(200, { access_token: `tok-${++n}`, token_type: 'Bearer', expires_in: 600 })]);
    expect(await tokens.get(client, transport)).toBe('tok-1');
    tokens.refused(client, 'tok-1');
    expect(await tokens.get(client, transport)).toBe('tok-2');
    // A second attempt refused with the old token doesn't throw away the new one.
    tokens.refused(client, 'tok-1');
    expect(await tokens.get(client, transport)).toBe('tok-2');
    expect(calls).toHaveLength(2);
  });

  it('a failure is held for a few seconds, with words that never hold the secret, then asked again', async () => {
    let now = 0;
    const tokens = new AccessTokens(() => now);
    const { calls, transport } = recording([
      () => answer(400, { error: 'invalid_client', error_description: `bad secret s3cr:et& (s3cr%3Aet%26)` }),
      () => answer(200, { access_token: 'tok', token_type: 'mac' }),
      () => answer(200, { access_token: 'tok', token_type: 'Bearer' }),
    ]);
    const first = await tokens.get(client, transport).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(TokenEndpointError);
    expect((first as Error).message).toBe(
      'The token endpoint https://idp.example/token answered HTTP 400 (invalid_client: bad secret [redacted] ([redacted])); no access token, so nothing was sent to the receiver.',
    );
    now = FAILURE_HOLD_MS - 1;
    await expect(tokens.get(client, transport)).rejects.toBe(first);
    expect(calls).toHaveLength(1);
    now = FAILURE_HOLD_MS;
    await expect(tokens.get(client, transport)).rejects.toThrow('issued a token of type mac; only Bearer tokens can be sent');
    now += FAILURE_HOLD_MS;
    expect(await tokens.get(client, transport)).toBe('tok');
  });
});

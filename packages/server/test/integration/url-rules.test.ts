import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.ts';
import { FORBIDDEN_HOST_SPELLINGS } from '../helpers/host-spellings.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';

/**
 * The address rules hold at registration for every URL scheme an endpoint can have: each way of
 * writing a private, loopback or link-local address that an https URL is refused for is refused
 * for the broker schemes too, through the API, and nothing is stored.
 */
let svc: TestService;
let p: CreatedPlatform;

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: false, rateLimitPerSecond: 10_000, rateLimitBurst: 10_000 });
  p = await svc.platform();
});
afterAll(async () => {
  await svc?.close();
});

const create = (key: string, url: string) => svc.api(key, 'POST', '/api/v1/webhook_endpoints', { url, enabled_events: ['*'] });

describe('the same URL rules for every scheme, at registration', () => {
  it(`refuses ${FORBIDDEN_HOST_SPELLINGS.length} spellings of forbidden hosts for https, amqps and tls alike`, async () => {
    // amqp:// and nats:// share their scheme's parse with amqps:// and tls:// (the unit test runs all five).
    const cases = FORBIDDEN_HOST_SPELLINGS.flatMap(([what, authority]) =>
      [`https://${authority}/h`, `amqps://${authority}/?exchange=x`, `tls://${authority}?subject=a`].map((url) => ({
        what,
        url,
        // https refuses user-info before it looks at the host (400); every other refusal names the address (422).
        expected: url.startsWith('https:') && authority.includes('@') ? 'url_invalid' : 'url_not_allowed',
      })),
    );
    const accepted: string[] = [];
    for (let i = 0; i < cases.length; i += 16) {
      await Promise.all(
        cases.slice(i, i + 16).map(async ({ what, url, expected }) => {
          const r = await create(p.keys.live, url);
          if (r.body.error?.code !== expected) accepted.push(`${what}: ${url} -> ${r.status} ${r.body.error?.code ?? ''}`);
        }),
      );
    }
    expect(accepted).toEqual([]);
    const [stored] = await svc.ctx.database.query<{ n: string }>('SELECT count(*) AS n FROM webhook_endpoints', []);
    expect(Number(stored!.n)).toBe(0);
  });

  it('a public broker address written as one number is stored as the address the rules checked', async () => {
    const r = await create(p.keys.live, 'amqps://u:p@1572395042/?exchange=x');
    expect(r.status).toBe(201);
    expect(r.body.url).toBe('amqps://93.184.216.34/?exchange=x');
  });
});

import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.ts';
import { MAX_URL_LENGTH, validateEndpointUrl, type UrlPolicy } from '../../src/security/url-policy.ts';
import { FORBIDDEN_HOST_SPELLINGS, PUBLIC_HOST_SPELLINGS } from '../helpers/host-spellings.ts';

const strict: UrlPolicy = { allowHttp: false, allowPrivate: false };
const open: UrlPolicy = { allowHttp: true, allowPrivate: true };

function rejection(
  url: string,
  environment: 'live' | 'sandbox' = 'sandbox',
  policy = strict,
): { status: number; code: string; param: string | undefined } {
  try {
    validateEndpointUrl(url, environment, policy);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    const e = err as AppError;
    return { status: e.status, code: e.code, param: e.param };
  }
  throw new Error(`accepted ${url}`);
}

describe('validateEndpointUrl', () => {
  it('accepts absolute https URLs with ports, paths and queries, and returns them unchanged', () => {
    for (const url of [
      'https://merchant.example.com/hooks',
      'https://example.com',
      'https://example.com:8443/a/b?x=1&y=2',
      'https://93.184.216.34/h',
      'https://[2606:4700::1111]/h',
    ]) {
      expect(validateEndpointUrl(url, 'live', strict).url).toBe(url);
    }
  });

  it(`accepts exactly ${MAX_URL_LENGTH} characters and refuses one more`, () => {
    const base = 'https://example.com/';
    const at = base + 'a'.repeat(MAX_URL_LENGTH - base.length);
    expect(validateEndpointUrl(at, 'live', strict).url).toBe(at);
    expect(rejection(`${at}a`)).toEqual({ status: 400, code: 'url_invalid', param: 'url' });
  });

  it.each([
    ['not a url', 'no scheme'],
    ['/relative/path', 'relative'],
    ['//example.com/h', 'scheme-relative'],
    ['example.com/h', 'no scheme'],
    ['ftp://example.com/h', 'ftp'],
    ['file:///etc/passwd', 'file'],
    ['javascript:alert(1)', 'javascript'],
    ['ws://example.com/h', 'websocket'],
    ['https://user:pass@example.com/h', 'credentials'],
    ['https://user@example.com/h', 'user name only'],
    ['https://:pass@example.com/h', 'password only'],
    ['https://example.com/h#frag', 'fragment'],
    ['https://exa mple.com/h', 'space in host'],
    ['https://example.com:99999/h', 'port out of range'],
    ['https://example.com/a\u0000b', 'NUL byte'],
    ['https://example.com/a\nb', 'newline'],
    ['https://example.com/a b', 'space in path'],
    [' https://example.com/h', 'leading space'],
    ['', 'empty'],
  ])('refuses %j with 400 url_invalid (%s)', (url) => {
    expect(rejection(url)).toEqual({ status: 400, code: 'url_invalid', param: 'url' });
  });

  it('live endpoints need https (422 url_insecure); sandbox may use http', () => {
    expect(rejection('http://example.com/h', 'live')).toEqual({ status: 422, code: 'url_insecure', param: 'url' });
    expect(validateEndpointUrl('http://example.com/h', 'sandbox', strict).url).toBe('http://example.com/h');
    expect(validateEndpointUrl('http://example.com/h', 'live', { allowHttp: true, allowPrivate: false }).url).toBe('http://example.com/h');
  });

  it.each([
    'https://127.0.0.1/h',
    'https://127.0.0.1:8080/h',
    'https://10.1.2.3/h',
    'https://172.16.0.1/h',
    'https://192.168.0.10/h',
    'https://169.254.169.254/latest/meta-data',
    'https://100.64.0.1/h',
    'https://0.0.0.0/h',
    'https://[::1]/h',
    'https://[::]/h',
    'https://[fd00::1]/h',
    'https://[fe80::1]/h',
    'https://[::ffff:127.0.0.1]/h',
    'https://[::ffff:7f00:1]/h',
    'https://[0:0:0:0:0:ffff:a9fe:a9fe]/h',
    // Spellings the URL parser turns into 127.0.0.1
    'https://127.1/h',
    'https://0x7f000001/h',
    'https://2130706433/h',
    'https://017700000001/h',
    'https://127.0.0.1./h',
    'https://localhost/h',
    'https://LOCALHOST/h',
    'https://localhost./h',
    'https://api.localhost/h',
    'https://api.localhost./h',
    'https://metadata.google.internal/h',
    'https://metadata.google.internal./h',
    'https://localhost../h',
    'https://api.internal.../h',
  ])('refuses private or loopback host %s with 422 url_not_allowed', (url) => {
    expect(rejection(url, 'sandbox')).toEqual({ status: 422, code: 'url_not_allowed', param: 'url' });
    expect(rejection(url, 'live')).toEqual({ status: 422, code: 'url_not_allowed', param: 'url' });
  });

  it('allowPrivate admits private and loopback hosts', () => {
    for (const url of [
      'https://127.0.0.1:4000/h',
      'https://localhost/h',
      'https://[::1]/h',
      'https://10.0.0.5/h',
      'https://169.254.169.254/h',
    ]) {
      expect(validateEndpointUrl(url, 'live', { allowHttp: false, allowPrivate: true }).url).toBe(url);
    }
  });

  it('the development policy (http + private) admits http://127.0.0.1 for live', () => {
    expect(validateEndpointUrl('http://127.0.0.1:4000/webhooks', 'live', open).url).toBe('http://127.0.0.1:4000/webhooks');
  });

  it('credentials and bad schemes stay refused even under the open policy', () => {
    expect(rejection('https://u:p@127.0.0.1/h', 'live', open).code).toBe('url_invalid');
    expect(rejection('ftp://127.0.0.1/h', 'live', open).code).toBe('url_invalid');
  });

  it('public names that merely contain "localhost" or "internal" are allowed', () => {
    for (const url of ['https://localhost.example.com/h', 'https://internal.example.com/h', 'https://mylocalhost.com/h']) {
      expect(validateEndpointUrl(url, 'live', strict).url).toBe(url);
    }
  });

  it.each([
    [`https://example.com/${'a'.repeat(MAX_URL_LENGTH)}`, 'live', /^url must be at most 2048 characters\.$/],
    ['https://example.com/a b', 'live', /^url must not contain spaces or control characters; percent-encode them\.$/],
    ['example.com/h', 'live', /^url must be an absolute http:\/\/ or https:\/\/ URL \(or amqps:\/\/, tls:\/\/ for a message broker\)\.$/],
    ['ftp://example.com/h', 'live', /^url must use http or https \(or amqp, amqps, nats, tls for a message broker\)\.$/],
    [
      'https://u:p@example.com/h',
      'live',
      /^url must not contain credentials \(user:password@\); authenticate with the signature instead\.$/,
    ],
    ['https://example.com/h#x', 'live', /^url must not contain a #fragment\.$/],
    ['http://example.com/h', 'live', /^Live endpoints must use https\. Use a sandbox key for plain-http testing\.$/],
    ['https://[::1]/h', 'sandbox', /^url points at a private or local address \(::1\); webhooks are delivered over the public internet\.$/],
    ['https://LocalHost./h', 'sandbox', /^url points at a private or local address \(localhost\); /],
  ] as const)('%s: the message says what is wrong and what to do', (url, environment, message) => {
    expect(() => validateEndpointUrl(url, environment, strict)).toThrow(message);
  });
});

describe('validateEndpointUrl: message brokers (amqp, amqps, nats, tls)', () => {
  it('accepts broker URLs, splits user:password off (percent-decoded) and keeps the rest as given', () => {
    expect(
      validateEndpointUrl('amqps://us%40r:p%3Ass@rabbit.example.com/prod?exchange=payments&routing_key=hooks', 'live', strict),
    ).toEqual({
      url: 'amqps://rabbit.example.com/prod?exchange=payments&routing_key=hooks',
      credentials: { username: 'us@r', password: 'p:ss' },
    });
    expect(validateEndpointUrl('tls://nats.example.com:4443?subject=merchant.events', 'live', strict)).toEqual({
      url: 'tls://nats.example.com:4443?subject=merchant.events',
      credentials: null,
    });
  });

  it('live broker endpoints need amqps or tls (422 url_insecure) unless plain URLs are allowed; sandbox may use amqp, nats', () => {
    expect(rejection('amqp://rabbit.example.com/?exchange=x', 'live')).toEqual({ status: 422, code: 'url_insecure', param: 'url' });
    expect(rejection('nats://nats.example.com?subject=a', 'live')).toEqual({ status: 422, code: 'url_insecure', param: 'url' });
    expect(validateEndpointUrl('amqp://rabbit.example.com/?exchange=x', 'sandbox', strict).url).toBe(
      'amqp://rabbit.example.com/?exchange=x',
    );
    expect(validateEndpointUrl('nats://n.example.com?subject=a', 'live', { allowHttp: true, allowPrivate: false }).url).toBe(
      'nats://n.example.com?subject=a',
    );
  });

  it.each([
    'amqps://127.0.0.1/?exchange=x',
    'amqps://localhost/?exchange=x',
    'tls://[::1]?subject=a',
    'tls://10.0.0.5:4222?subject=a',
    'amqps://rabbit.internal/?exchange=x',
    'tls://169.254.169.254?subject=a',
  ])('the SSRF rules apply to the broker host: %s is refused (422 url_not_allowed)', (url) => {
    expect(rejection(url)).toEqual({ status: 422, code: 'url_not_allowed', param: 'url' });
  });

  it.each([
    ['amqps://rabbit.example.com/', /needs \?exchange=/],
    ['amqps://rabbit.example.com/a/b?exchange=x', /one segment; write a "\/" in it as %2F/],
    ['amqps://rabbit.example.com/?exchange=x&exchange=y', /"exchange" more than once/],
    [`amqps://rabbit.example.com/?exchange=${'x'.repeat(256)}`, /at most 255 bytes/],
    ['tls://nats.example.com?subject=', /needs \?subject=/],
    ['tls://nats.example.com?subject=a..b', /without wildcards/],
    ['tls://nats.example.com?subject=a.>', /without wildcards/],
    ['tls://nats.example.com?subject=a&stream=s', /unknown query parameter "stream"/],
    ['amqps://rabbit.example.com/?exchange=x#frag', /#fragment/],
  ])('%s: 400 url_invalid saying what to fix', (url, message) => {
    expect(rejection(url)).toEqual({ status: 400, code: 'url_invalid', param: 'url' });
    expect(() => validateEndpointUrl(url, 'sandbox', strict)).toThrow(message);
  });
});

describe('validateEndpointUrl: one address policy for http(s) and broker URLs, whatever the host spelling', () => {
  const brokerUrls = (authority: string) => [
    `amqp://${authority}/?exchange=x`,
    `amqps://${authority}/?exchange=x`,
    `nats://${authority}?subject=a`,
    `tls://${authority}?subject=a`,
  ];

  it.each(FORBIDDEN_HOST_SPELLINGS)('%s (%s): refused for https and for every broker scheme', (_what, authority) => {
    // https refuses user-info of any kind before looking at the host; brokers take credentials.
    const httpsCode = authority.includes('@') ? 'url_invalid' : 'url_not_allowed';
    expect(rejection(`https://${authority}/h`).code).toBe(httpsCode);
    for (const url of brokerUrls(authority))
      expect({ url, ...rejection(url) }).toEqual({ url, status: 422, code: 'url_not_allowed', param: 'url' });
  });

  it.each(PUBLIC_HOST_SPELLINGS)(
    '%s (%s): a public broker host is accepted, stored as an http(s) URL would read it',
    (_what, authority) => {
      const host = new URL(`https://${authority.replace(/^.*@/, '')}/`).hostname;
      for (const url of brokerUrls(authority)) expect(new URL(validateEndpointUrl(url, 'sandbox', strict).url).hostname).toBe(host);
    },
  );
});

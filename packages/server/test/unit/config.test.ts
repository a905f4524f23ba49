import { describe, expect, it } from 'vitest';
import { RETRY_DELAYS_MS, ACK_DEADLINE_MS, MAX_ATTEMPTS } from '@payhooks/contract';
import { SETTINGS, loadConfig, parseDuration, settingsTable } from '../../src/config.ts';
import { ConfigError } from '../../src/errors.ts';

function configError(env: NodeJS.ProcessEnv): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe('loadConfig defaults', () => {
  it('an empty environment gives the documented defaults', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      host: '127.0.0.1',
      port: 8080,
      databaseUrl: undefined,
      dataDir: './data',
      encryptionKey: undefined,
      dev: false,
      allowHttpUrls: false,
      allowPrivateUrls: false,
      logLevel: 'info',
      internalToken: undefined,
    });
    expect(c.rateLimitPerSecond).toBeGreaterThanOrEqual(1);
    expect(c.rateLimitBurst).toBeGreaterThanOrEqual(1);
  });

  it('spec 8: the default retry schedule is 1 min, 5 min, 30 min, 2 h, 12 h, 24 h, 24 h (8 attempts in all)', () => {
    const c = loadConfig({});
    expect(c.retryScheduleMs).toEqual([60_000, 300_000, 1_800_000, 7_200_000, 43_200_000, 86_400_000, 86_400_000]);
    expect(c.retryScheduleMs).toEqual(RETRY_DELAYS_MS);
    expect(c.retryScheduleMs.length + 1).toBe(MAX_ATTEMPTS);
  });

  it('spec 8: the default acknowledgement deadline is 10 s', () => {
    expect(loadConfig({}).attemptTimeoutMs).toBe(ACK_DEADLINE_MS);
    expect(ACK_DEADLINE_MS).toBe(10_000);
  });

  it('an empty variable counts as unset', () => {
    expect(loadConfig({ PAYHOOKS_PORT: '', DATABASE_URL: '' })).toMatchObject({ port: 8080, databaseUrl: undefined });
  });

  it('reads each kind of value', () => {
    const key = 'ab'.repeat(32);
    const c = loadConfig({
      PAYHOOKS_HOST: ' 0.0.0.0 ',
      PAYHOOKS_PORT: '0',
      DATABASE_URL: 'postgresql://u@db:5432/payhooks',
      PAYHOOKS_DATA_DIR: '/var/lib/payhooks',
      PAYHOOKS_ENCRYPTION_KEY: key.toUpperCase(),
      PAYHOOKS_DEV: 'yes',
      PAYHOOKS_ALLOW_HTTP_URLS: 'TRUE',
      PAYHOOKS_ALLOW_PRIVATE_URLS: '1',
      PAYHOOKS_LOG_LEVEL: 'silent',
      PAYHOOKS_RATE_LIMIT: '5',
      PAYHOOKS_RATE_LIMIT_BURST: '7',
      PAYHOOKS_INTERNAL_TOKEN: 't'.repeat(32),
      PAYHOOKS_ATTEMPT_TIMEOUT: '250ms',
      PAYHOOKS_POLL_INTERVAL: '50ms',
      PAYHOOKS_LEASE: '2m',
      PAYHOOKS_ENDPOINT_CONCURRENCY: '3',
      PAYHOOKS_WORKER_CONCURRENCY: '30',
    });
    expect(c).toMatchObject({
      host: '0.0.0.0',
      port: 0,
      databaseUrl: 'postgresql://u@db:5432/payhooks',
      dataDir: '/var/lib/payhooks',
      dev: true,
      allowHttpUrls: true,
      allowPrivateUrls: true,
      logLevel: 'silent',
      rateLimitPerSecond: 5,
      rateLimitBurst: 7,
      internalToken: 't'.repeat(32),
      attemptTimeoutMs: 250,
      pollIntervalMs: 50,
      leaseMs: 120_000,
      endpointConcurrency: 3,
      workerConcurrency: 30,
    });
    expect(c.encryptionKey).toEqual(Buffer.from(key, 'hex'));
    expect(loadConfig({ PAYHOOKS_DEV: 'off', PAYHOOKS_ALLOW_HTTP_URLS: 'no' })).toMatchObject({ dev: false, allowHttpUrls: false });
  });

  it('overrides win over the environment; undefined overrides are ignored', () => {
    const c = loadConfig({ PAYHOOKS_PORT: '9000', PAYHOOKS_DEV: 'false' }, { dev: true, port: undefined });
    expect(c.dev).toBe(true);
    expect(c.port).toBe(9000);
  });

  it('the configuration table (docs/operations.md) lists every variable with its default', () => {
    const table = settingsTable();
    for (const s of SETTINGS) expect(table).toContain(`\`${s.env}\``);
    expect(table.split('\n')).toHaveLength(SETTINGS.length);
  });
});

describe('PAYHOOKS_TRUST_PROXY', () => {
  it('is off by default; takes a hop count or a list of addresses and CIDR ranges', () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ PAYHOOKS_TRUST_PROXY: 'false' }).trustProxy).toBe(false);
    expect(loadConfig({ PAYHOOKS_TRUST_PROXY: '0' }).trustProxy).toBe(false);
    expect(loadConfig({ PAYHOOKS_TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ PAYHOOKS_TRUST_PROXY: '10.0.0.0/8, 192.168.1.10,::1,fd00::/8' }).trustProxy).toEqual([
      '10.0.0.0/8',
      '192.168.1.10',
      '::1',
      'fd00::/8',
    ]);
  });

  it('refuses to trust everyone, saying why', () => {
    expect(configError({ PAYHOOKS_TRUST_PROXY: 'true' }).message).toMatch(/would trust any client to name its own address/);
  });
});

describe('operations settings (issue 10)', () => {
  it('auto-disable defaults to 5 days, takes a duration, and 0 turns it off; the metrics port is unset unless given', () => {
    expect(loadConfig({}).autoDisableAfterMs).toBe(5 * 86_400_000);
    expect(loadConfig({ PAYHOOKS_AUTO_DISABLE_AFTER: '0' }).autoDisableAfterMs).toBe(0);
    expect(loadConfig({ PAYHOOKS_AUTO_DISABLE_AFTER: '36h' }).autoDisableAfterMs).toBe(36 * 3_600_000);
    expect(loadConfig({}).metricsPort).toBeUndefined();
    expect(loadConfig({ PAYHOOKS_METRICS_PORT: '9464' }).metricsPort).toBe(9464);
    expect(loadConfig({ PAYHOOKS_METRICS_PORT: '0' }).metricsPort).toBe(0);
  });
});

describe('bad values give a ConfigError naming the variable', () => {
  const cases: [string, string[]][] = [
    ['PAYHOOKS_HOST', ['   ']],
    ['PAYHOOKS_PORT', ['abc', '-1', '65536', '80.5', '8080x', '0x50', '1e3']],
    ['DATABASE_URL', ['mysql://db/x', 'localhost:5432/x', 'postgres:/db']],
    ['PAYHOOKS_DATA_DIR', ['  ']],
    ['PAYHOOKS_ENCRYPTION_KEY', ['abc', 'z'.repeat(64), 'a'.repeat(63), 'a'.repeat(65)]],
    ['PAYHOOKS_DEV', ['maybe', '2']],
    ['PAYHOOKS_ALLOW_HTTP_URLS', ['sure']],
    ['PAYHOOKS_ALLOW_PRIVATE_URLS', ['yesplease']],
    ['PAYHOOKS_LOG_LEVEL', ['verbose', 'INFO']],
    ['PAYHOOKS_RATE_LIMIT', ['0', 'abc', '1.5', '1000001']],
    ['PAYHOOKS_RATE_LIMIT_BURST', ['0', 'many']],
    ['PAYHOOKS_INTERNAL_TOKEN', ['short', 'x'.repeat(31)]],
    ['PAYHOOKS_REDIS_URL', ['localhost:6379', 'http://cache:6379', 'redis://', 'redis:///0']],
    ['PAYHOOKS_RETRY_SCHEDULE', ['soon', '1x', '1s,,2s', '1s;2s', '1.5s', '-1s', Array(21).fill('1s').join(',')]],
    ['PAYHOOKS_ATTEMPT_TIMEOUT', ['10', '99ms', '61s', 'ten seconds']],
    ['PAYHOOKS_ENDPOINT_CONCURRENCY', ['0', '1001']],
    ['PAYHOOKS_WORKER_CONCURRENCY', ['0', '10001']],
    ['PAYHOOKS_PLATFORM_SHARE', ['0', '0.001', '1.5', 'half', '-0.5']],
    ['PAYHOOKS_POLL_INTERVAL', ['9ms', '61s', '1']],
    ['PAYHOOKS_LEASE', ['999ms', '2h']],
    ['PAYHOOKS_DB_WAIT', ['soon', '10', '-1s', '2d']],
    ['PAYHOOKS_TRUST_PROXY', ['true', 'yes', '21', '10.0.0.0/33', 'proxy.internal', '10.0.0.1,', '1.2.3']],
    ['PAYHOOKS_RETENTION', ['30', 'a month', '6d', '167h', '0d']],
    ['PAYHOOKS_AUTO_DISABLE_AFTER', ['5', 'off', '-1d', '999ms', '366d']],
    ['PAYHOOKS_METRICS_PORT', ['abc', '-1', '65536', '9464x']],
  ];

  it('covers only real variables', () => {
    const known = new Set(SETTINGS.map((s) => s.env));
    for (const [env] of cases) expect(known.has(env as never), env).toBe(true);
  });

  for (const [env, values] of cases) {
    it(`${env}: ${values.map((v) => JSON.stringify(v.length > 20 ? `${v.slice(0, 17)}...` : v)).join(', ')}`, () => {
      for (const value of values) {
        const err = configError({ [env]: value });
        expect(err.message, value).toContain(env);
      }
    });
  }

  it('secret settings are not echoed back in the error', () => {
    const key = `${'ab'.repeat(31)}zz`;
    expect(configError({ PAYHOOKS_ENCRYPTION_KEY: key }).message).not.toContain(key);
    const token = 'secret-token-too-short';
    expect(configError({ PAYHOOKS_INTERNAL_TOKEN: token }).message).not.toContain(token);
  });

  it('the encryption key error says how to make a key', () => {
    expect(configError({ PAYHOOKS_ENCRYPTION_KEY: 'abc' }).message).toContain('openssl rand -hex 32');
  });
});

describe('durations', () => {
  it.each([
    ['250ms', 250],
    ['10s', 10_000],
    ['5m', 300_000],
    ['2h', 7_200_000],
    ['1d', 86_400_000],
    ['0s', 0],
    [' 30s ', 30_000],
  ])('parseDuration(%j) = %d ms', (raw, ms) => {
    expect(parseDuration(raw, 'X')).toBe(ms);
  });

  it.each(['10', '1.5s', '-1s', '10 s', '10S', 's', '', '1w', '1s1'])('parseDuration(%j) is a ConfigError naming the variable', (raw) => {
    expect(() => parseDuration(raw, 'PAYHOOKS_SOMETHING')).toThrow(ConfigError);
    expect(() => parseDuration(raw, 'PAYHOOKS_SOMETHING')).toThrow(/PAYHOOKS_SOMETHING/);
  });
});

describe('retry schedule list', () => {
  it('is a comma list of durations, spaces allowed around entries', () => {
    expect(loadConfig({ PAYHOOKS_RETRY_SCHEDULE: '1s,1s,2s' }).retryScheduleMs).toEqual([1000, 1000, 2000]);
    expect(loadConfig({ PAYHOOKS_RETRY_SCHEDULE: ' 100ms , 2m ' }).retryScheduleMs).toEqual([100, 120_000]);
    expect(loadConfig({ PAYHOOKS_RETRY_SCHEDULE: '5s' }).retryScheduleMs).toEqual([5000]);
  });

  it('takes up to 20 entries', () => {
    expect(loadConfig({ PAYHOOKS_RETRY_SCHEDULE: Array(20).fill('1s').join(',') }).retryScheduleMs).toHaveLength(20);
  });

  it('spec 8: the default round-trips through the variable', () => {
    const written = SETTINGS.find((s) => s.env === 'PAYHOOKS_RETRY_SCHEDULE')!.default!;
    expect(written).toBe('1m,5m,30m,2h,12h,1d,1d');
    expect(loadConfig({ PAYHOOKS_RETRY_SCHEDULE: written }).retryScheduleMs).toEqual(RETRY_DELAYS_MS);
  });
});

describe('config values that must not leak or overflow', () => {
  it('a retry schedule entry longer than 7 days is refused', () => {
    expect(() => loadConfig({ PAYHOOKS_RETRY_SCHEDULE: '1s,99999999999999999999d' })).toThrow(/PAYHOOKS_RETRY_SCHEDULE/);
    expect(() => loadConfig({ PAYHOOKS_RETRY_SCHEDULE: '8d' })).toThrow(/PAYHOOKS_RETRY_SCHEDULE/);
    expect(loadConfig({ PAYHOOKS_RETRY_SCHEDULE: '7d' }).retryScheduleMs).toEqual([7 * 86_400_000]);
  });

  it('an invalid DATABASE_URL is not echoed (it may carry a password)', () => {
    let message = '';
    try {
      loadConfig({ DATABASE_URL: 'mysql://user:s3cret@host/db' });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain('DATABASE_URL');
    expect(message).not.toContain('s3cret');
  });
});

describe('settings that cannot work together are refused (issue 9)', () => {
  it('the defaults work together: lease 60s, attempt deadline 10s, database wait 60s', () => {
    expect(loadConfig({})).toMatchObject({ leaseMs: 60_000, attemptTimeoutMs: 10_000, dbWaitMs: 60_000 });
  });

  it('a lease not longer than twice the attempt deadline plus 1s is refused, saying what to set', () => {
    for (const env of [
      { PAYHOOKS_LEASE: '5s' }, // shorter than the deadline itself: resent forever, never recorded
      { PAYHOOKS_LEASE: '10s' }, // equal to the deadline
      { PAYHOOKS_LEASE: '21s' }, // a queued row's wait + its own deadline + recording: not enough
      { PAYHOOKS_ATTEMPT_TIMEOUT: '30s' }, // the default lease is too short for a 30s deadline
    ]) {
      const err = configError(env);
      expect(err.message).toContain('PAYHOOKS_LEASE');
      expect(err.message).toContain('PAYHOOKS_ATTEMPT_TIMEOUT');
      expect(err.message).toMatch(/Set PAYHOOKS_LEASE above \d+s .* or lower PAYHOOKS_ATTEMPT_TIMEOUT\./);
    }
    expect(configError({ PAYHOOKS_LEASE: '5s' }).message).toContain('Set PAYHOOKS_LEASE above 21s');
  });

  it('a lease just above the minimum is accepted', () => {
    expect(loadConfig({ PAYHOOKS_LEASE: '22s' }).leaseMs).toBe(22_000);
    expect(loadConfig({ PAYHOOKS_LEASE: '2s', PAYHOOKS_ATTEMPT_TIMEOUT: '400ms' }).leaseMs).toBe(2000);
    expect(loadConfig({ PAYHOOKS_ATTEMPT_TIMEOUT: '29s', PAYHOOKS_LEASE: '60s' }).attemptTimeoutMs).toBe(29_000);
  });

  it('overrides are checked too (tests and CLI flags cannot bypass the rule)', () => {
    expect(() => loadConfig({}, { leaseMs: 10_000 })).toThrow(ConfigError);
  });

  it('PAYHOOKS_DB_WAIT takes a duration; 0s means fail at once', () => {
    expect(loadConfig({ PAYHOOKS_DB_WAIT: '0s' }).dbWaitMs).toBe(0);
    expect(loadConfig({ PAYHOOKS_DB_WAIT: '5m' }).dbWaitMs).toBe(300_000);
  });
});

describe('PAYHOOKS_RETENTION (issue 10 item 3)', () => {
  it('defaults to 30 days', () => {
    expect(loadConfig({}).retentionMs).toBe(30 * 86_400_000);
  });

  it('7 days is the minimum: it outlasts the whole default retry schedule (about 2.6 days); below it is refused saying what to set', () => {
    expect(RETRY_DELAYS_MS.reduce((a, b) => a + b, 0)).toBeLessThan(7 * 86_400_000 - 86_400_000);
    expect(loadConfig({ PAYHOOKS_RETENTION: '7d' }).retentionMs).toBe(7 * 86_400_000);
    expect(loadConfig({ PAYHOOKS_RETENTION: '168h' }).retentionMs).toBe(7 * 86_400_000);
    const err = configError({ PAYHOOKS_RETENTION: '6d' });
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toContain('PAYHOOKS_RETENTION=6d is too short');
    expect(err.message).toContain('Set PAYHOOKS_RETENTION=7d or more');
  });

  it('a custom retry schedule that would outlast the retention is refused, saying what to set', () => {
    const err = configError({ PAYHOOKS_RETENTION: '7d', PAYHOOKS_RETRY_SCHEDULE: '7d' });
    expect(err.message).toContain('PAYHOOKS_RETRY_SCHEDULE');
    expect(err.message).toContain('Set PAYHOOKS_RETENTION above 8d');
    expect(loadConfig({ PAYHOOKS_RETENTION: '9d', PAYHOOKS_RETRY_SCHEDULE: '7d' }).retentionMs).toBe(9 * 86_400_000);
  });
});

describe('portal and audit settings (issue 34)', () => {
  it('defaults: nothing may frame the portal, password sign-in on, 30 min idle, 12 h in all, a year of audit, no SMTP', () => {
    expect(loadConfig({})).toMatchObject({
      portalFrameAncestors: [],
      portalPasswordSignIn: true,
      portalIdleTimeoutMs: 30 * 60_000,
      portalSessionLifetimeMs: 12 * 3_600_000,
      auditRetentionMs: 365 * 86_400_000,
      smtpUrl: undefined,
    });
  });

  it('PAYHOOKS_PORTAL_FRAME_ANCESTORS takes origins (a *. host prefix and a * port as CSP allows), never a path or a keyword', () => {
    expect(
      loadConfig({ PAYHOOKS_PORTAL_FRAME_ANCESTORS: 'https://Dashboard.example.com, http://localhost:*,https://*.acme.example:8443' })
        .portalFrameAncestors,
    ).toEqual(['https://dashboard.example.com', 'http://localhost:*', 'https://*.acme.example:8443']);
    for (const bad of ['https://dashboard.example.com/webhooks', "'self'", '*', 'dashboard.example.com', 'javascript:alert(1)']) {
      expect(configError({ PAYHOOKS_PORTAL_FRAME_ANCESTORS: bad }).message, bad).toContain('PAYHOOKS_PORTAL_FRAME_ANCESTORS');
    }
  });

  it('PAYHOOKS_AUDIT_RETENTION is at least 30 days; the session limits have ranges; a bad SMTP URL is refused without echoing it', () => {
    expect(configError({ PAYHOOKS_AUDIT_RETENTION: '7d' }).message).toContain('at least 30d');
    expect(loadConfig({ PAYHOOKS_AUDIT_RETENTION: '90d' }).auditRetentionMs).toBe(90 * 86_400_000);
    expect(configError({ PAYHOOKS_PORTAL_IDLE_TIMEOUT: '10s' }).message).toContain('PAYHOOKS_PORTAL_IDLE_TIMEOUT');
    expect(configError({ PAYHOOKS_PORTAL_SESSION_LIFETIME: '60d' }).message).toContain('PAYHOOKS_PORTAL_SESSION_LIFETIME');
    const smtp = configError({ PAYHOOKS_SMTP_URL: 'http://user:hunter2@mail.example' }).message;
    expect(smtp).toContain('PAYHOOKS_SMTP_URL');
    expect(smtp).not.toContain('hunter2');
    expect(loadConfig({ PAYHOOKS_SMTP_URL: 'smtps://u:p@smtp.example:465' }).smtpUrl).toBe('smtps://u:p@smtp.example:465');
    expect(configError({ PAYHOOKS_SMTP_FROM: 'a@b.example\r\nBcc: x@evil.example' }).message).toContain('PAYHOOKS_SMTP_FROM');
    expect(loadConfig({ PAYHOOKS_PORTAL_PASSWORD_SIGN_IN: 'false' }).portalPasswordSignIn).toBe(false);
  });
});

describe('PAYHOOKS_EGRESS_PROXY', () => {
  it('is unset by default; takes http://host[:port] with optional credentials; anything else stops the start, without echoing a password', () => {
    expect(loadConfig({}).egressProxy).toBeUndefined();
    expect(loadConfig({ PAYHOOKS_EGRESS_PROXY: 'http://10.0.0.8:3128' }).egressProxy).toBe('http://10.0.0.8:3128');
    expect(loadConfig({ PAYHOOKS_EGRESS_PROXY: 'http://u:p@proxy.internal:3128/' }).egressProxy).toBe('http://u:p@proxy.internal:3128/');
    for (const bad of [
      'https://proxy.internal:3128',
      'proxy.internal:3128',
      'http://proxy.internal:3128/path',
      'socks5://p:1080',
      'http://p:3128?x=1',
    ]) {
      const message = configError({ PAYHOOKS_EGRESS_PROXY: bad }).message;
      expect(message, bad).toContain('PAYHOOKS_EGRESS_PROXY');
      expect(message, bad).toContain('http://host:port');
    }
    expect(configError({ PAYHOOKS_EGRESS_PROXY: 'https://u:hunter2@p:3128' }).message).not.toContain('hunter2');
  });
});

import { ACK_DEADLINE_MS, RETRY_DELAYS_MS } from '@payhooks/contract';
import ipaddr from 'ipaddr.js';
import { ConfigError } from './errors.ts';
import { DATABASE_URL_VARIABLE, parseDatabaseTargets } from './db/database-url.ts';

/**
 * The one configuration schema. Every setting is an environment variable; `loadConfig` reads,
 * validates and returns a typed object, or throws a ConfigError naming the variable and how to
 * fix it. The configuration table of docs/operations.md is this list.
 */
export interface Config {
  host: string;
  port: number;
  /** PostgreSQL URL; unset = embedded PGlite in `dataDir`. */
  databaseUrl: string | undefined;
  dataDir: string;
  /** 32-byte AES-256-GCM key; undefined = generate/read `<dataDir>/encryption.key` (embedded only). */
  encryptionKey: Buffer | undefined;
  /** Development mode: embedded demo Platform, private and plain-http URLs allowed. */
  dev: boolean;
  allowHttpUrls: boolean;
  allowPrivateUrls: boolean;
  /** Forward proxy every HTTP delivery goes through (`http://host:port`); undefined = direct. */
  egressProxy: string | undefined;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Management API requests per second per API key (token bucket), and the bucket size. */
  rateLimitPerSecond: number;
  rateLimitBurst: number;
  /** Redis holding the rate-limit counters shared by every API process; undefined = per process. */
  redisUrl: string | undefined;
  /** Bearer token for the internal API (`/internal/v1/…`); unset disables it. */
  internalToken: string | undefined;
  /** Delays between attempts, ms; length + 1 = total attempts. Spec 8 by default. */
  retryScheduleMs: readonly number[];
  /** Acknowledgement deadline per attempt, ms (spec 8: 10 s). */
  attemptTimeoutMs: number;
  /** Most attempts in flight to one endpoint at once, per worker process. */
  endpointConcurrency: number;
  /** Most attempts in flight per worker process. */
  workerConcurrency: number;
  /** Largest share of a worker's slots one Platform may hold (delivery/fairness.ts). */
  platformShare: number;
  /** Worker polling fallback when no wake-up signal arrives, ms. */
  pollIntervalMs: number;
  /** How long a claimed delivery stays leased to a worker before another may take it, ms. */
  leaseMs: number;
  /** How long `serve`, `worker` and the other commands wait at start for an unreachable PostgreSQL, ms. */
  dbWaitMs: number;
  /** Public base URL of hosted checkout pages; undefined = the address the server listens on. */
  publicUrl: string | undefined;
  /** How often workers look for checkout sessions past `expires_at`, ms (at most a minute). */
  expiryIntervalMs: number;
  /** How long every delivery to an endpoint must fail before it is disabled, ms; 0 = never. */
  autoDisableAfterMs: number;
  /** An endpoint is `failing` once its attempts have all failed for this long (endpoints/health.ts). */
  healthFailingAfterMs: number;
  /** ... and at least this many of them failed. */
  healthFailingAttempts: number;
  /** How long events, deliveries and attempts are kept, ms (at least 7 days; db/retention.ts). */
  retentionMs: number;
  /** Port of `payhooks worker`'s Prometheus listener (`/metrics`); undefined = none. */
  metricsPort: number | undefined;
  /**
   * Which proxies in front may name the client's address (X-Forwarded-For): false = none, a hop
   * count, or the proxies' addresses and CIDR ranges. Fastify's `trustProxy`.
   */
  trustProxy: false | number | string[];
  /** Origins (scheme://host[:port]) whose pages may frame the portal; empty = none may. */
  portalFrameAncestors: string[];
  /** Whether the portal offers password sign-in (false: sessions only start from the payment service's links). */
  portalPasswordSignIn: boolean;
  /** A portal session ends this long after its last request, ms. */
  portalIdleTimeoutMs: number;
  /** A portal session ends this long after it started, whatever happens in it, ms. */
  portalSessionLifetimeMs: number;
  /** How long audit entries are kept, ms (whole weeks are dropped after it). */
  auditRetentionMs: number;
  /** SMTP server for invitation and password-reset mail; undefined = links are shown, not mailed. */
  smtpUrl: string | undefined;
  /** The From of that mail. */
  smtpFrom: string;
}

interface Setting<K extends keyof Config> {
  key: K;
  env: string;
  doc: string;
  default: string | undefined;
  parse: (raw: string, env: string) => Config[K];
}

/**
 * `name` is the environment variable (`PAYHOOKS_PORT="abc"`) or, when the value came from a
 * command-line flag, the flag as the user typed it (`--port abc`).
 */
function fail(name: string, raw: string, want: string): never {
  const given = name.startsWith('--') ? `${name} ${/^[^\s"']+$/.test(raw) ? raw : JSON.stringify(raw)}` : `${name}=${JSON.stringify(raw)}`;
  throw new ConfigError(`${given} is not valid: expected ${want}.`);
}

const int =
  (min: number, max: number) =>
  (raw: string, env: string): number => {
    if (!/^\d+$/.test(raw)) fail(env, raw, `a whole number from ${min} to ${max}`);
    const n = Number(raw);
    if (n < min || n > max) fail(env, raw, `a whole number from ${min} to ${max}`);
    return n;
  };

const bool = (raw: string, env: string): boolean => {
  const v = raw.toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off', ''].includes(v)) return false;
  return fail(env, raw, 'true or false');
};

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `250ms`, `10s`, `5m`, `2h`, `1d`. */
export function parseDuration(raw: string, env: string): number {
  const m = /^(\d+)(ms|s|m|h|d)$/.exec(raw.trim());
  if (!m) return fail(env, raw, 'a duration such as 500ms, 10s, 5m, 2h or 1d');
  return Number(m[1]) * UNITS[m[2]!]!;
}

const durationIn =
  (min: number, max: number) =>
  (raw: string, env: string): number => {
    const ms = parseDuration(raw, env);
    if (ms < min || ms > max) fail(env, raw, `a duration from ${min} ms to ${max} ms`);
    return ms;
  };

const schedule = (raw: string, env: string): number[] => {
  const parts = raw.split(',').map((p) => p.trim());
  if (parts.length < 1 || parts.length > 20) fail(env, raw, 'a comma list of 1 to 20 durations, e.g. 1s,1s,2s');
  return parts.map((p) => durationIn(1, 7 * 86_400_000)(p, env));
};

function formatDuration(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const) {
    if (ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

function publicUrl(raw: string, env: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return fail(env, raw, 'an absolute http(s) URL such as https://pay.example.com');
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.search || url.hash || url.username)
    fail(env, raw, 'an http(s) base URL without query, fragment or credentials');
  return raw.replace(/\/+$/, '');
}

/** The shortest retention: longer than the whole retry schedule (about 2.6 days), with margin. */
export const MIN_RETENTION_MS = 7 * 86_400_000;

function retention(raw: string, env: string): number {
  const ms = parseDuration(raw, env);
  if (ms < MIN_RETENTION_MS) {
    throw new ConfigError(
      `${env}=${raw} is too short: events, deliveries and attempts must be kept at least 7 days, longer than the whole retry schedule ` +
        `(1m+5m+30m+2h+12h+24h+24h, about 2.6 days), so no delivery is purged while it is still being retried. Set ${env}=7d or more (default 30d).`,
    );
  }
  return ms;
}

/** An IPv4 address in its four-part form (not 1.2.3), an IPv6 address, or a CIDR range of either. */
function isAddressOrRange(entry: string): boolean {
  const address = entry.split('/')[0]!;
  if (!ipaddr.IPv4.isValidFourPartDecimal(address) && !ipaddr.IPv6.isValid(address)) return false;
  if (!entry.includes('/')) return true;
  try {
    ipaddr.parseCIDR(entry);
    return true;
  } catch {
    return false;
  }
}

/** `PAYHOOKS_TRUST_PROXY`: off, a hop count, or a comma list of addresses and CIDR ranges. */
function trustProxy(raw: string, env: string): false | number | string[] {
  const v = raw.trim().toLowerCase();
  if (['', '0', 'false', 'off', 'no'].includes(v)) return false;
  if (/^\d+$/.test(v)) return int(1, 20)(v, env);
  const want =
    "false, a number of proxy hops (1 = the one proxy in front), or a comma list of the proxies' addresses and CIDR ranges, e.g. 10.0.0.0/8,192.168.1.10";
  if (['true', 'on', 'yes'].includes(v)) {
    throw new ConfigError(
      `${env}=${raw} would trust any client to name its own address (X-Forwarded-For is set by whoever sends the request), which defeats every per-address limit. Expected ${want}.`,
    );
  }
  const list = raw.split(',').map((p) => p.trim());
  if (!list.every(isAddressOrRange)) fail(env, raw, want);
  return list;
}

/** `PAYHOOKS_PORTAL_FRAME_ANCESTORS`: origins only (no path, no wildcard but a host's `*.` prefix), as CSP takes them. */
function frameAncestors(raw: string, env: string): string[] {
  const want =
    'a comma list of origins allowed to frame the portal, such as https://dashboard.example.com,http://localhost:3000 (empty: none)';
  const list = raw
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  for (const entry of list) {
    // A host may start with `*.` and a port may be `*`, as CSP allows (`http://localhost:*` in development).
    const m = /^(https?):\/\/(\*\.)?([a-z0-9.-]+|\[[0-9a-f:.]+\])(:(\d{1,5}|\*))?$/i.exec(entry);
    if (!m) fail(env, raw, want);
  }
  return list.map((e) => e.toLowerCase());
}

/** How long audit entries are kept: at least 30 days (PCI DSS asks for a year, three months at hand). */
export const MIN_AUDIT_RETENTION_MS = 30 * 86_400_000;

function auditRetention(raw: string, env: string): number {
  const ms = parseDuration(raw, env);
  if (ms < MIN_AUDIT_RETENTION_MS) fail(env, raw, 'a duration of at least 30d (the default keeps a year: 365d)');
  return ms;
}

function smtpUrl(raw: string, env: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return fail(env, '(hidden)', 'an smtp:// or smtps:// URL such as smtps://user:password@smtp.example.com:465');
  }
  if ((url.protocol !== 'smtp:' && url.protocol !== 'smtps:') || !url.hostname)
    fail(env, '(hidden)', 'an smtp:// or smtps:// URL such as smtps://user:password@smtp.example.com:465');
  return raw;
}

/** `http://[user:password@]host[:port]`: a forward proxy spoken to in plain HTTP (CONNECT for https targets). */
function egressProxy(raw: string, env: string): string {
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    // reported below
  }
  const shown = url && (url.username || url.password) ? '(hidden)' : raw;
  const want = 'the forward proxy as http://host:port (e.g. http://10.0.0.8:3128), with no path';
  if (url?.protocol !== 'http:' || !url.hostname || (url.pathname !== '/' && url.pathname !== '') || url.search || url.hash)
    fail(env, shown, want);
  return raw;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export const SETTINGS = [
  {
    key: 'host',
    env: 'PAYHOOKS_HOST',
    default: '127.0.0.1',
    doc: 'Address the HTTP server binds to.',
    parse: (raw: string, env: string) => (raw.trim() ? raw.trim() : fail(env, raw, 'a host name or address')),
  },
  { key: 'port', env: 'PAYHOOKS_PORT', default: '8080', doc: 'HTTP port (0 = any free port).', parse: int(0, 65535) },
  {
    key: 'databaseUrl',
    env: DATABASE_URL_VARIABLE,
    default: undefined,
    doc: 'PostgreSQL connection URL. Several hosts fail over as with libpq: `postgres://user@h1:5432,h2:5433/db?target_session_attrs=read-write`. Unset: embedded PGlite in PAYHOOKS_DATA_DIR.',
    // Never echo the value: it may hold a password.
    parse: (raw: string, env: string) => {
      if (!/^postgres(ql)?:\/\//.test(raw)) return fail(env, '(hidden)', 'a postgres:// or postgresql:// URL');
      try {
        parseDatabaseTargets(raw);
      } catch (err) {
        return fail(env, '(hidden)', `a PostgreSQL URL whose hosts are host[:port][,host[:port]...] (${(err as Error).message})`);
      }
      return raw;
    },
  },
  {
    key: 'dataDir',
    env: 'PAYHOOKS_DATA_DIR',
    default: './data',
    doc: 'Directory of the embedded database and its generated encryption key.',
    parse: (raw: string, env: string) => (raw.trim() ? raw : fail(env, raw, 'a directory path')),
  },
  {
    key: 'encryptionKey',
    env: 'PAYHOOKS_ENCRYPTION_KEY',
    default: undefined,
    doc: 'AES-256-GCM key for signing secrets at rest: 64 hex characters (`openssl rand -hex 32`). Required with DATABASE_URL; generated into the data dir for the embedded database.',
    parse: (raw: string, env: string) =>
      /^[0-9a-fA-F]{64}$/.test(raw)
        ? Buffer.from(raw, 'hex')
        : fail(env, '(hidden)', '64 hex characters (32 random bytes); make one with `openssl rand -hex 32`'),
  },
  {
    key: 'dev',
    env: 'PAYHOOKS_DEV',
    default: 'false',
    doc: 'Development mode (also `serve --dev`): demo Platform, private and plain-http URLs allowed.',
    parse: bool,
  },
  {
    key: 'allowHttpUrls',
    env: 'PAYHOOKS_ALLOW_HTTP_URLS',
    default: 'false',
    doc: 'Allow plain-http URLs for live endpoints (sandbox endpoints may always use http).',
    parse: bool,
  },
  {
    key: 'allowPrivateUrls',
    env: 'PAYHOOKS_ALLOW_PRIVATE_URLS',
    default: 'false',
    doc: 'Allow endpoint URLs that resolve to private, loopback, link-local or metadata addresses.',
    parse: bool,
  },
  {
    key: 'egressProxy',
    env: 'PAYHOOKS_EGRESS_PROXY',
    default: undefined,
    doc: 'Forward proxy every HTTP delivery goes through, so deliveries leave from its fixed addresses (`http://host:port`, optionally `user:password@`): CONNECT tunnels for https endpoints, absolute-form requests for plain http. payhooks resolves and checks each endpoint host itself and asks the proxy for the checked address. Broker endpoints (amqp, nats) connect directly. Unset: direct connections.',
    parse: egressProxy,
  },
  {
    key: 'logLevel',
    env: 'PAYHOOKS_LOG_LEVEL',
    default: 'info',
    doc: `Log level: ${LOG_LEVELS.join(', ')}.`,
    parse: (raw: string, env: string) =>
      (LOG_LEVELS as readonly string[]).includes(raw) ? (raw as Config['logLevel']) : fail(env, raw, `one of ${LOG_LEVELS.join(', ')}`),
  },
  {
    key: 'rateLimitPerSecond',
    env: 'PAYHOOKS_RATE_LIMIT',
    default: '100',
    doc: 'Management API requests per second per API key.',
    parse: int(1, 1_000_000),
  },
  {
    key: 'rateLimitBurst',
    env: 'PAYHOOKS_RATE_LIMIT_BURST',
    default: '200',
    doc: 'Requests an API key may make in a burst above the rate.',
    parse: int(1, 1_000_000),
  },
  {
    key: 'redisUrl',
    env: 'PAYHOOKS_REDIS_URL',
    default: undefined,
    doc: 'Redis URL (`redis://host:6379`) holding the rate-limit counters, so all API processes share one limit per key and address. Unset: API-key limits are per process, and portal sign-in limits are shared through PostgreSQL. Unreachable at start: the process exits.',
    // Never echo the value: it may hold a password.
    parse: (raw: string, env: string) =>
      /^rediss?:\/\/[^/]/.test(raw) ? raw : fail(env, '(hidden)', 'a redis:// or rediss:// URL such as redis://127.0.0.1:6379'),
  },
  {
    key: 'internalToken',
    env: 'PAYHOOKS_INTERNAL_TOKEN',
    default: undefined,
    doc: 'Bearer token for the internal API (event publishing, payment transitions); unset disables it. At least 32 characters. Development mode generates one into the data dir (`internal-token`).',
    parse: (raw: string, env: string) =>
      raw.length >= 32 ? raw : fail(env, '(hidden)', 'at least 32 characters (`openssl rand -hex 32`)'),
  },
  {
    key: 'retryScheduleMs',
    env: 'PAYHOOKS_RETRY_SCHEDULE',
    default: RETRY_DELAYS_MS.map(formatDuration).join(','),
    doc: 'Retry delays after each failed attempt (spec 8). For tests and sandboxes only: production keeps the default.',
    parse: schedule,
  },
  {
    key: 'attemptTimeoutMs',
    env: 'PAYHOOKS_ATTEMPT_TIMEOUT',
    default: formatDuration(ACK_DEADLINE_MS),
    doc: 'Acknowledgement deadline per attempt (spec 8: 10s). For tests and sandboxes only.',
    parse: durationIn(100, 60_000),
  },
  {
    key: 'endpointConcurrency',
    env: 'PAYHOOKS_ENDPOINT_CONCURRENCY',
    default: '10',
    doc: 'Most attempts in flight to one endpoint per worker process; manual attempts (Replay, Resend, "Replay all failed since…") have the same cap, counted over all API processes together.',
    parse: int(1, 1000),
  },
  {
    key: 'workerConcurrency',
    env: 'PAYHOOKS_WORKER_CONCURRENCY',
    default: '200',
    doc: 'Most attempts in flight per worker process.',
    parse: int(1, 10_000),
  },
  {
    key: 'platformShare',
    env: 'PAYHOOKS_PLATFORM_SHARE',
    default: '0.5',
    doc: "Largest share (0.01 to 1) of a worker's attempt slots one Platform may hold, so one tenant's slow endpoints can't starve the others. A single-Platform install may set 1.",
    parse: (raw: string, env: string) => {
      const n = Number(raw);
      return Number.isFinite(n) && n >= 0.01 && n <= 1 ? n : fail(env, raw, 'a number from 0.01 to 1, e.g. 0.5');
    },
  },
  {
    key: 'pollIntervalMs',
    env: 'PAYHOOKS_POLL_INTERVAL',
    default: '1s',
    doc: 'How often an idle worker looks for due work when no wake-up arrives.',
    parse: durationIn(10, 60_000),
  },
  {
    key: 'publicUrl',
    env: 'PAYHOOKS_PUBLIC_URL',
    default: undefined,
    doc: 'Public base URL of the hosted checkout pages (`url` of a checkout session), e.g. https://pay.example.com. Unset: the address the server listens on.',
    parse: (raw: string, env: string) => publicUrl(raw, env),
  },
  {
    key: 'expiryIntervalMs',
    env: 'PAYHOOKS_EXPIRY_INTERVAL',
    default: '10s',
    doc: 'How often workers expire open checkout sessions past `expires_at` (at most 1m).',
    parse: durationIn(100, 60_000),
  },
  {
    key: 'leaseMs',
    env: 'PAYHOOKS_LEASE',
    default: '60s',
    doc: "How long a claimed delivery is leased to a worker; a dead worker's leases expire after this.",
    parse: durationIn(1000, 3_600_000),
  },
  {
    key: 'autoDisableAfterMs',
    env: 'PAYHOOKS_AUTO_DISABLE_AFTER',
    default: '5d',
    doc: 'Disable an endpoint whose deliveries have all failed for this long (at least 10 failed attempts, no 2xx), with `disabled_reason: "failing"`; its deliveries stay on their schedule, each attempt failing without a request (`endpoint_disabled`) until it is enabled again. `0` turns auto-disable off.',
    parse: (raw: string, env: string) => (raw.trim() === '0' ? 0 : durationIn(1000, 365 * 86_400_000)(raw, env)),
  },
  {
    key: 'healthFailingAfterMs',
    env: 'PAYHOOKS_HEALTH_FAILING_AFTER',
    default: '15m',
    doc: "An endpoint's health turns `failing` (and `webhook_endpoint.failing` is sent) once every attempt has failed for this long, with at least PAYHOOKS_HEALTH_FAILING_ATTEMPTS of them; warnings follow at half and at 90 % of PAYHOOKS_AUTO_DISABLE_AFTER.",
    parse: durationIn(60_000, 30 * 86_400_000),
  },
  {
    key: 'healthFailingAttempts',
    env: 'PAYHOOKS_HEALTH_FAILING_ATTEMPTS',
    default: '3',
    doc: 'Failed attempts (and no 2xx) an endpoint needs, besides PAYHOOKS_HEALTH_FAILING_AFTER, before its health turns `failing`.',
    parse: (raw: string, env: string) => {
      const n = Number(raw);
      if (!Number.isInteger(n) || n < 1 || n > 1000) throw new ConfigError(`${env} must be a whole number from 1 to 1000 (got '${raw}').`);
      return n;
    },
  },
  {
    key: 'retentionMs',
    env: 'PAYHOOKS_RETENTION',
    default: '30d',
    doc: 'How long events, deliveries and their attempts are kept (at least 7d). The worker drops whole weeks once all of a week is older than this, so rows stay up to 7 days longer; never a week with a delivery still due. Expired idempotency keys go after 24h.',
    parse: retention,
  },
  {
    key: 'metricsPort',
    env: 'PAYHOOKS_METRICS_PORT',
    default: undefined,
    doc: '`payhooks worker` serves Prometheus `/metrics` on this port (bound to PAYHOOKS_HOST; 0 = any free port, logged at start); unset: no listener. `serve` has `/metrics` on its HTTP port.',
    parse: int(0, 65535),
  },
  {
    key: 'trustProxy',
    env: 'PAYHOOKS_TRUST_PROXY',
    default: 'false',
    doc: "Behind a load balancer or reverse proxy: which proxies may name the client's address (`X-Forwarded-For`, and `X-Forwarded-Proto` for Secure cookies). `false`: none, the connecting address is the client's; a hop count (`1`: the one proxy in front); or the proxies' addresses and CIDR ranges (`10.0.0.0/8,192.168.1.10`). Every per-address limit (sign-in, failed authentication) counts the client's address only when it comes from a trusted proxy.",
    parse: trustProxy,
  },
  {
    key: 'dbWaitMs',
    env: 'PAYHOOKS_DB_WAIT',
    default: '60s',
    doc: 'How long a command started while PostgreSQL is unreachable waits for it (retrying with backoff, one log line per try) before exiting; 0s = fail at once.',
    parse: durationIn(0, 86_400_000),
  },
  {
    key: 'portalFrameAncestors',
    env: 'PAYHOOKS_PORTAL_FRAME_ANCESTORS',
    default: '',
    doc: "Origins whose pages may show the Merchant Portal in a frame (the payment service's own portal embedding it): a comma list such as `https://dashboard.example.com`, into the portal's CSP `frame-ancestors`. Empty: no page may frame it.",
    parse: frameAncestors,
  },
  {
    key: 'portalPasswordSignIn',
    env: 'PAYHOOKS_PORTAL_PASSWORD_SIGN_IN',
    default: 'true',
    doc: "The portal's own email-and-password sign-in, invitations and password resets. `false` for a deployment where every session starts from the payment service (`POST /internal/v1/portal_sessions`).",
    parse: bool,
  },
  {
    key: 'portalIdleTimeoutMs',
    env: 'PAYHOOKS_PORTAL_IDLE_TIMEOUT',
    default: '30m',
    doc: 'A portal session ends after this long without a request (1m to 24h).',
    parse: durationIn(60_000, 86_400_000),
  },
  {
    key: 'portalSessionLifetimeMs',
    env: 'PAYHOOKS_PORTAL_SESSION_LIFETIME',
    default: '12h',
    doc: 'A portal session ends this long after it started, however active (5m to 30d).',
    parse: durationIn(300_000, 30 * 86_400_000),
  },
  {
    key: 'auditRetentionMs',
    env: 'PAYHOOKS_AUDIT_RETENTION',
    default: '365d',
    doc: 'How long audit entries are kept (at least 30d). Whole weeks are dropped once all of a week is older, so entries stay up to 7 days longer.',
    parse: auditRetention,
  },
  {
    key: 'smtpUrl',
    env: 'PAYHOOKS_SMTP_URL',
    default: undefined,
    doc: 'SMTP server that mails invitations and password-reset links (`smtps://user:password@smtp.example.com:465`; `smtp://` upgrades with STARTTLS when offered). Unset: the links are shown to the admin and printed by the CLI only.',
    // Never echo the value: it may hold a password.
    parse: smtpUrl,
  },
  {
    key: 'smtpFrom',
    env: 'PAYHOOKS_SMTP_FROM',
    default: 'payhooks <no-reply@payhooks.local>',
    doc: 'The From address of that mail.',
    parse: (raw: string, env: string) =>
      // biome-ignore lint/suspicious/noControlCharactersInRegex: a line break here would add mail headers
      /[\u0000-\u001f]/.test(raw) || !raw.includes('@') ? fail(env, raw, 'an address such as "Webhooks <webhooks@example.com>"') : raw,
  },
] as const satisfies readonly Setting<keyof Config>[];

/** Settings given as command-line flags (`serve --port 8080`): they win over the environment, and errors name the flag. */
export type ConfigFlags = Partial<Record<keyof Config, { flag: string; value: string }>>;

/**
 * Reads every setting from `env` (default `process.env`) or its flag in `flags`, then applies
 * `overrides` (`--dev`, tests).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Config> = {}, flags: ConfigFlags = {}): Config {
  const out: Record<string, unknown> = {};
  for (const s of SETTINGS as readonly Setting<keyof Config>[]) {
    const flag = flags[s.key];
    if (flag) {
      out[s.key] = s.parse(flag.value, flag.flag);
      continue;
    }
    out[s.key] = fromEnv(s, env);
  }
  const config = { ...(out as unknown as Config), ...stripUndefined(overrides) };
  checkCombinations(config);
  return config;
}

/**
 * One setting from the environment alone, checked as `loadConfig` checks it: for a command that
 * needs nothing else of the configuration (`payhooks check-receiver` and the egress proxy).
 */
export function readSetting<K extends keyof Config>(key: K, env: NodeJS.ProcessEnv = process.env): Config[K] | undefined {
  return fromEnv((SETTINGS as readonly Setting<keyof Config>[]).find((x) => x.key === key) as Setting<K>, env);
}

/** A setting's value from the environment (unset or empty: its default), parsed. */
function fromEnv<K extends keyof Config>(s: Setting<K>, env: NodeJS.ProcessEnv): Config[K] | undefined {
  const raw = env[s.env];
  const value = raw !== undefined && raw !== '' ? raw : s.default;
  return value === undefined ? undefined : s.parse(value, s.env);
}

/**
 * Settings that are each valid but together would silently break delivery are refused, with
 * what to change.
 */
function checkCombinations(c: Config): void {
  // A claimed delivery may wait behind its endpoint's attempts in flight (at most one deadline),
  // then run its own attempt (at most one deadline, reading the response body included), then
  // be recorded. If the lease ran out first, another worker would resend it while it is in flight
  // and the first worker's outcome would be dropped: an endpoint that keeps timing out would be
  // resent forever with nothing in its log.
  const minLease = 2 * c.attemptTimeoutMs + RECORD_MARGIN_MS;
  if (c.leaseMs <= minLease) {
    throw new ConfigError(
      `PAYHOOKS_LEASE=${formatDuration(c.leaseMs)} is too short for PAYHOOKS_ATTEMPT_TIMEOUT=${formatDuration(c.attemptTimeoutMs)}: ` +
        "a claimed delivery can wait up to one attempt deadline behind its endpoint's attempts in flight, then take a full deadline of its own, and must still be recorded; " +
        'with a shorter lease another worker resends it meanwhile and the outcome is lost. ' +
        `Set PAYHOOKS_LEASE above ${formatDuration(minLease)} (2 x the attempt timeout + ${formatDuration(RECORD_MARGIN_MS)}) or lower PAYHOOKS_ATTEMPT_TIMEOUT.`,
    );
  }
  // A custom schedule (tests, sandboxes) longer than the retention would purge deliveries whose
  // schedule still runs: the last attempt must be due well inside the window.
  const scheduleMs = c.retryScheduleMs.reduce((a, b) => a + b, 0);
  if (scheduleMs + 86_400_000 > c.retentionMs) {
    throw new ConfigError(
      `PAYHOOKS_RETENTION=${formatDuration(c.retentionMs)} is too short for PAYHOOKS_RETRY_SCHEDULE (${formatDuration(scheduleMs)} in all): ` +
        'a delivery could be purged while it is still being retried. ' +
        `Set PAYHOOKS_RETENTION above ${formatDuration(scheduleMs + 86_400_000)} (the schedule + 1d) or shorten the schedule.`,
    );
  }
}

/** Time the lease keeps for recording an outcome after the attempt's deadline. */
const RECORD_MARGIN_MS = 1000;

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Markdown rows for the configuration table of docs/operations.md. */
/** Where `serve` listens, as a URL: the base of links when PAYHOOKS_PUBLIC_URL is unset and no server listens yet. */
export function listenUrl(config: Pick<Config, 'host' | 'port'>): string {
  return `http://${config.host}:${config.port}`;
}

export function settingsTable(): string {
  return SETTINGS.map(
    (s) => `| \`${s.env}\` | ${s.default === undefined ? '(unset)' : s.default === '' ? '(none)' : `\`${s.default}\``} | ${s.doc} |`,
  ).join('\n');
}

/** The settings for `payhooks --help`: each variable, its default, and what it does. */
export function settingsHelp(): string {
  const width = Math.max(...SETTINGS.map((s) => s.env.length));
  return SETTINGS.map(
    (s) =>
      `  ${s.env.padEnd(width)}  ${s.doc.replaceAll('`', '')}${s.default === undefined || s.default === '' ? '' : ` (default: ${s.default})`}`,
  ).join('\n');
}

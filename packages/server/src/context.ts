import type { ConnectionOptions } from 'node:tls';
import type { Logger } from 'pino';
import { listenUrl, type Config } from './config.ts';
import type { Clock } from './clock.ts';
import type { Database } from './db/client.ts';
import { SecretBox } from './security/encryption.ts';
import { EndpointService } from './endpoints/service.ts';
import { OperatorEndpoints } from './tenancy/operator-endpoints.ts';
import { EventService } from './events/service.ts';
import { DeliveryService } from './delivery/service.ts';
import { logAttempt } from './delivery/attempt-log.ts';
import { BulkReplays } from './delivery/bulk-replay.ts';
import { PostgresSlots } from './delivery/shared-gate.ts';
import { DeliveryMetrics } from './delivery/metrics.ts';
import { DeliveryWorker } from './delivery/worker.ts';
import { Sender } from './delivery/sender.ts';
import type { Resolver } from './delivery/safe-lookup.ts';
import { PaymentService } from './payments/service.ts';
import { CheckoutService } from './payments/checkout.ts';
import { ExpiryJob } from './payments/expiry.ts';
import { AutoDisableJob } from './endpoints/auto-disable.ts';
import { sendHealthMail } from './alerts/health-mail.ts';
import { PASSWORD_COST, type ScryptCost } from './accounts/passwords.ts';
import { RetentionJob } from './db/retention.ts';
import { AuditTrail } from './audit/trail.ts';
import type { SessionStore } from './accounts/sessions.ts';
import { openAccounts, type Accounts } from './accounts/index.ts';

/**
 * Everything a request handler or worker needs, built once at start and passed down
 * explicitly (no module-level singletons, so tests can run many services in one process).
 */
export interface ServiceContext {
  config: Config;
  database: Database;
  clock: Clock;
  logger: Logger;
  secrets: SecretBox;
  /** scrypt cost of portal passwords (and of the decoy unknown emails are checked against). */
  passwordCost: ScryptCost;
  /** The audit trail every change records itself in (audit/trail.ts). */
  audit: AuditTrail;
  /** Portal sessions, of both kinds (accounts/sessions.ts). */
  sessions: SessionStore;
  /** Sign-in, the payment service's portal links, the team, one's own account, password resets. */
  accounts: Accounts;
  endpoints: EndpointService;
  /** The payment service's own endpoints for endpoint health events (internal API). */
  operatorEndpoints: OperatorEndpoints;
  events: EventService;
  deliveries: DeliveryService;
  /** "Replay all failed since…" jobs of the portal (in this process). */
  bulkReplays: BulkReplays;
  sender: Sender;
  metrics: DeliveryMetrics;
  payments: PaymentService;
  checkout: CheckoutService;
  /**
   * Where users reach this service (hosted checkout pages, portal links, the listen relay, the
   * OpenAPI servers): PAYHOOKS_PUBLIC_URL, else the address the HTTP server listens on (read
   * from it when asked, never copied), else the configured host and port.
   */
  publicUrl(): string;
  /** A new worker on this context (not started). */
  createWorker(): DeliveryWorker;
  /** The checkout-session expiry job that runs beside workers (not started). */
  createExpiryJob(): ExpiryJob;
  /** The auto-disable sweep that runs beside workers (not started; a no-op when turned off). */
  createAutoDisableJob(): AutoDisableJob;
  /** Partition maintenance and purges (db/retention.ts) that run beside workers (not started). */
  createRetentionJob(): RetentionJob;
  /** Ends bulk replays and closes what the context opened (HTTP agent); the database belongs to the caller. */
  close(): Promise<void>;
}

export function createContext(options: {
  config: Config;
  database: Database;
  clock: Clock;
  logger: Logger;
  encryptionKey: Buffer;
  resolver?: Resolver;
  /** TLS options for https endpoints: only for code that embeds the service (tests trust their own CA). */
  tls?: ConnectionOptions;
  /** Only for code that embeds the service (tests); every payhooks process uses PASSWORD_COST. */
  passwordCost?: ScryptCost;
  /** The address the HTTP server listens on, once it does (api/app.ts, `listeningUrl`). */
  listeningAt?: () => string | undefined;
}): ServiceContext {
  const { config, database, clock, logger } = options;
  const secrets = new SecretBox(options.encryptionKey);
  const audit = new AuditTrail({ logger, clock });
  const passwordCost = options.passwordCost ?? PASSWORD_COST;
  const publicUrl = () => config.publicUrl ?? options.listeningAt?.() ?? listenUrl(config);
  const {
    accounts,
    sessions,
    mailer,
    close: closeAccounts,
  } = openAccounts({
    config,
    db: database.db,
    clock,
    audit,
    secrets,
    passwordCost,
    publicUrl,
  });
  const allowPrivate = config.dev || config.allowPrivateUrls;
  const urlPolicy = { allowHttp: config.dev || config.allowHttpUrls, allowPrivate };
  const sender = new Sender({
    timeoutMs: config.attemptTimeoutMs,
    allowPrivate,
    // Several endpoints may share an origin (one merchant host, many paths): the per-endpoint cap
    // is enforced by the worker, so the origin pool only needs to fit the worker's total.
    connectionsPerOrigin: config.workerConcurrency,
    now: () => clock.now(),
    ...(options.resolver ? { resolver: options.resolver } : {}),
    egressProxy: config.egressProxy === undefined ? undefined : new URL(config.egressProxy),
    tls: options.tls,
  });
  const metrics = new DeliveryMetrics({ database, clock });
  const payments = new PaymentService({ db: database.db, clock });
  const checkout = new CheckoutService({
    db: database.db,
    clock,
    payments,
    publicUrl,
    allowHttpLive: config.dev || config.allowHttpUrls,
  });
  // A session follows its payment, whoever moves it: wired here, where both services are made.
  payments.onTransition((tx, payment, options) => checkout.followPayment(tx, payment, options));
  const deliveries = new DeliveryService({
    database,
    clock,
    secrets,
    sender,
    audit,
    metrics,
    leaseMs: config.leaseMs,
    endpointConcurrency: config.endpointConcurrency,
    onAttempt: (entry) => logAttempt(logger, config.dev ? 'info' : 'debug', entry),
  });
  // Several processes share one PostgreSQL: the cap on manual attempts per endpoint is theirs
  // together (api/app.ts moves it to Redis when PAYHOOKS_REDIS_URL is set).
  if (database.kind === 'postgres') deliveries.shareManualGate(new PostgresSlots(database), logger);
  const endpoints = new EndpointService({ db: database.db, secrets, urlPolicy, clock, audit });
  const ctx: ServiceContext = {
    config,
    database,
    clock,
    logger,
    secrets,
    passwordCost,
    audit,
    sessions,
    accounts,
    endpoints,
    operatorEndpoints: new OperatorEndpoints({ db: database.db, endpoints, clock }),
    events: new EventService({ db: database.db }),
    deliveries,
    bulkReplays: new BulkReplays({ database, deliveries, clock, audit }),
    sender,
    metrics,
    payments,
    checkout,
    publicUrl,
    createWorker: () => new DeliveryWorker({ config, database, clock, secrets, sender, logger, metrics }),
    createExpiryJob: () => new ExpiryJob({ database, checkout, logger, intervalMs: config.expiryIntervalMs }),
    createRetentionJob: () =>
      new RetentionJob({
        database,
        clock,
        logger,
        retentionMs: config.retentionMs,
        auditRetentionMs: config.auditRetentionMs,
        retryScheduleMs: config.retryScheduleMs,
      }),
    createAutoDisableJob: () =>
      new AutoDisableJob({
        database,
        clock,
        logger,
        audit,
        metrics,
        windowMs: config.autoDisableAfterMs,
        scheduleMs: config.retryScheduleMs.reduce((a, b) => a + b, 0),
        failingAfterMs: config.healthFailingAfterMs,
        failingAttempts: config.healthFailingAttempts,
        afterSweep: () => sendHealthMail({ database, clock, logger, mailer, secrets, publicUrl }),
        // A minute at most past the window (or the failing threshold); short windows (tests,
        // sandboxes) are swept more often.
        intervalMs: Math.max(
          1000,
          Math.min(
            60_000,
            Math.floor((config.autoDisableAfterMs || config.healthFailingAfterMs) / 10),
            Math.floor(config.healthFailingAfterMs / 10),
          ),
        ),
      }),
    async close() {
      await ctx.bulkReplays.close(); // attempts in flight finish and are recorded first
      await sender.close();
      closeAccounts();
    },
  };
  return ctx;
}

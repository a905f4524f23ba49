import { Command, Option } from 'commander';
import { pino } from 'pino';
import { loadConfig, type Config } from '../config.ts';
import { AppError, ConfigError } from '../errors.ts';
import { openDatabase } from '../db/client.ts';
import { migrate } from '../db/migrate.ts';
import { openRuntime } from '../runtime.ts';
import { createLogger } from '../logging.ts';
import { waitForDatabase } from '../db/wait.ts';
import { describeDbError } from '../db/faults.ts';
import { buildApp } from '../api/app.ts';
import { startMetricsServer } from '../api/metrics-server.ts';
import { createApiKey, createPlatform, platformExists, revokeApiKey } from '../tenancy/platforms.ts';
import { devBanner, devInternalToken, ensureDevPlatform } from './dev-bootstrap.ts';
import { runTrigger } from './trigger.ts';
import { runListen } from './listen.ts';
import { checkReceiver, formatReport } from '../devtools/check-receiver.ts';
import { EVENT_TYPES, RESOURCE_EVENT_TYPES, SECRET_PREFIX } from '@payhooks/contract';
import { createPortalUser } from '../portal/users.ts';

/** A refused input (taken or malformed email) ends the command with its message, not a stack trace. */
async function asConfigError<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof AppError) throw new ConfigError(err.message);
    throw err;
  }
}

/** Config from the environment, with `--dev` applied on top. Exits 1 with the reason if invalid. */
function config(overrides: Partial<Config> = {}): Config {
  return loadConfig(process.env, overrides);
}

async function serve(options: { dev?: boolean; port?: string; host?: string; worker?: boolean }) {
  const env = { ...process.env };
  if (options.port !== undefined) env.PAYHOOKS_PORT = options.port;
  if (options.host !== undefined) env.PAYHOOKS_HOST = options.host;
  const cfg = loadConfig(env, options.dev ? { dev: true } : {});
  if (options.worker === false && !cfg.databaseUrl) {
    throw new ConfigError(
      'serve --no-worker needs PostgreSQL: the embedded database can be opened by this process only, so no worker could ever deliver its events. Drop --no-worker, or set DATABASE_URL and run `payhooks worker` beside it.',
    );
  }
  if (cfg.dev && !cfg.internalToken) cfg.internalToken = devInternalToken(cfg.dataDir);
  const runtime = await openRuntime({ config: cfg });
  const { ctx } = runtime;
  const app = await buildApp(ctx);
  const worker = options.worker === false ? null : ctx.createWorker();
  // Checkout sessions past expires_at are expired by whatever runs workers.
  const expiry = options.worker === false ? null : ctx.createExpiryJob();
  const autoDisable = options.worker === false ? null : ctx.createAutoDisableJob();
  // So is retention: partitions created ahead, old weeks dropped (one process at a time).
  const retention = options.worker === false ? null : ctx.createRetentionJob();
  const dev = cfg.dev ? await ensureDevPlatform(ctx) : null;
  const address = await app.listen({ port: cfg.port, host: cfg.host });
  await worker?.start();
  expiry?.start();
  autoDisable?.start();
  retention?.start();
  onStopSignal(ctx.logger, async () => {
    await app.close(); // stop taking requests first
    await expiry?.stop();
    await autoDisable?.stop();
    await retention?.stop();
    await worker?.stop(); // then let in-flight attempts finish and be recorded
    await runtime.close();
  });
  if (dev) process.stdout.write(devBanner(address, dev.platform, ctx) + '\n');
  ctx.logger.info({ url: address, database: ctx.database.kind, dev: cfg.dev, worker: worker !== null }, 'payhooks listening');
}

/** `payhooks worker`: delivery workers only, for scaling out on PostgreSQL. */
async function workerCommand(options: { processes?: string }) {
  const cfg = config();
  if (!cfg.databaseUrl) {
    throw new ConfigError(
      'payhooks worker needs PostgreSQL: set DATABASE_URL. The embedded database can be opened by one process only, so with it `payhooks serve` runs the worker in-process.',
    );
  }
  const count = options.processes === undefined ? 1 : Number(options.processes);
  if (!Number.isInteger(count) || count < 1 || count > 64) throw new ConfigError('--workers must be a whole number from 1 to 64.');
  const runtime = await openRuntime({ config: cfg, workers: count });
  const workers = Array.from({ length: count }, () => runtime.ctx.createWorker());
  await Promise.all(workers.map((w) => w.start()));
  const expiry = runtime.ctx.createExpiryJob();
  expiry.start();
  const autoDisable = runtime.ctx.createAutoDisableJob();
  autoDisable.start();
  const retention = runtime.ctx.createRetentionJob();
  retention.start();
  // Attempt counters live in this process: without a listener they could not be scraped.
  const metrics = cfg.metricsPort === undefined ? null : await startMetricsServer(runtime.ctx, { host: cfg.host, port: cfg.metricsPort });
  onStopSignal(runtime.ctx.logger, async () => {
    await metrics?.close();
    await expiry.stop();
    await autoDisable.stop();
    await retention.stop();
    await Promise.all(workers.map((w) => w.stop()));
    await runtime.close();
  });
  runtime.ctx.logger.info({ workers: workers.map((w) => w.id), metrics: metrics?.url ?? null }, 'payhooks workers started');
}

/** SIGTERM/SIGINT: run `shutdown` once (drain), then exit 0. A second signal exits at once. */
function onStopSignal(logger: { info: (o: object, m: string) => void }, shutdown: () => Promise<void>) {
  let stopping = false;
  const handler = (signal: string) => {
    if (stopping) process.exit(1);
    stopping = true;
    logger.info({ signal }, 'draining, then exiting');
    shutdown().then(
      () => process.exit(0),
      (err) => {
        process.stderr.write(`payhooks: shutdown failed: ${String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => handler('SIGTERM'));
  process.on('SIGINT', () => handler('SIGINT'));
}

/**
 * Admin commands open the database without starting a server. Their stdout is the result
 * (`--json` output is parsed by scripts), so their logs go to stderr.
 */
async function withRuntime<T>(fn: (rt: Awaited<ReturnType<typeof openRuntime>>) => Promise<T>): Promise<T> {
  const cfg = config({ logLevel: process.env.PAYHOOKS_LOG_LEVEL ? config().logLevel : 'warn' });
  const logger = createLogger(cfg, pino.destination({ fd: 2, sync: true }));
  const rt = await openRuntime({ config: cfg, logger });
  try {
    return await fn(rt);
  } finally {
    await rt.close();
  }
}

export function buildCli(): Command {
  const program = new Command('payhooks').description('payhooks: signed, retried, logged webhooks for a payment service').showHelpAfterError();

  program
    .command('serve')
    .description('run the HTTP API and an in-process delivery worker')
    .option('--dev', 'development mode: embedded database, demo Platform, private and plain-http URLs allowed')
    .option('--port <port>', 'port (overrides PAYHOOKS_PORT)')
    .option('--host <host>', 'host (overrides PAYHOOKS_HOST)')
    .option('--no-worker', 'do not run a delivery worker in this process')
    .action(serve);

  program
    .command('worker')
    .description('run delivery workers only (PostgreSQL; start as many processes as you like)')
    .option('--workers <n>', 'worker loops in this process', '1')
    .action((opts: { workers: string }) => workerCommand({ processes: opts.workers }));

  program
    .command('migrate')
    .description('apply pending database migrations and exit')
    .action(async () => {
      const cfg = config();
      const logger = createLogger(cfg, pino.destination({ fd: 2, sync: true }));
      const database = await openDatabase({ databaseUrl: cfg.databaseUrl, dataDir: cfg.dataDir, logger });
      try {
        await waitForDatabase(database, { maxWaitMs: cfg.dbWaitMs, logger });
        const applied = await migrate(database);
        process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n');
      } finally {
        await database.close();
      }
    });

  program
    .command('trigger')
    .description(`emit a sandbox event for real on a running payhooks (over HTTP): ${RESOURCE_EVENT_TYPES.join(', ')}`)
    .argument('<event-type>', 'the event type to emit')
    .requiredOption('--api-key <key>', 'a sandbox API key (sk_test_…)')
    .option('--url <url>', 'where payhooks runs', 'http://127.0.0.1:8080')
    .option('--double-delivery', 'deliver each event twice to every endpoint (the double-delivery case)')
    .option('--json', 'print one JSON object instead of progress lines')
    .action(async (type: string, opts: { apiKey: string; url: string; doubleDelivery?: boolean; json?: boolean }) => {
      const result = await runTrigger(type, { apiKey: opts.apiKey, url: opts.url, doubleDelivery: opts.doubleDelivery === true }, (line) => {
        if (!opts.json) process.stdout.write(line + '\n');
      });
      if (opts.json) process.stdout.write(JSON.stringify(result) + '\n');
    });

  program
    .command('listen')
    .description('forward sandbox events from a running payhooks to a local receiver, signed with the session\'s own whsec_ secret (Ctrl-C ends the session)')
    .requiredOption('--api-key <key>', 'a sandbox API key (sk_test_…)')
    .requiredOption('--forward-to <url>', 'your local receiver, e.g. http://localhost:3000/webhooks')
    .option('--url <url>', 'where payhooks runs', 'http://127.0.0.1:8080')
    .option('--events <types>', 'comma-separated event types to forward (default: every type)')
    .action(async (opts: { apiKey: string; forwardTo: string; url: string; events?: string }) => {
      const controller = new AbortController();
      const stop = () => {
        if (controller.signal.aborted) process.exit(1); // a second Ctrl-C: leave now
        controller.abort();
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
      const events = opts.events?.split(',').map((t) => t.trim()).filter(Boolean);
      await runListen({ apiKey: opts.apiKey, forwardTo: opts.forwardTo, url: opts.url, events, signal: controller.signal, print: (line) => process.stdout.write(line + '\n') });
      process.stdout.write('Session ended.\n');
    });

  program
    .command('check-receiver')
    .description('send your receiver a battery of signed and mis-signed deliveries and report, duty by duty, what it does wrong (exit 0 only when every duty holds)')
    .argument('<url>', 'your receiver, e.g. http://localhost:3000/webhooks')
    .requiredOption('--secret <whsec>', "the endpoint's whsec_ signing secret your receiver verifies with")
    .option('--json', 'print one JSON object instead of the report')
    .action(async (url: string, opts: { secret: string; json?: boolean }) => {
      let parsed: URL;
      try {
        parsed = new URL(url);
      } catch {
        throw new ConfigError(`'${url}' is not a URL; give your receiver's full address, e.g. http://localhost:3000/webhooks.`);
      }
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new ConfigError(`The receiver URL must be http or https, not ${parsed.protocol}`);
      if (!opts.secret.startsWith(SECRET_PREFIX) || opts.secret.length <= SECRET_PREFIX.length) throw new ConfigError(`--secret must be the endpoint's signing secret, which starts with ${SECRET_PREFIX}.`);
      const report = await checkReceiver({ url: parsed.href, secret: opts.secret });
      process.stdout.write((opts.json ? JSON.stringify(report) : formatReport(report)) + '\n');
      if (!report.ok) process.exitCode = 1;
    });

  const admin = program.command('admin').description('operator commands');
  admin
    .command('create-platform')
    .description('create a Platform with one merchant, a sandbox key and a live key (keys are printed once)')
    .requiredOption('--name <name>', 'display name of the Platform')
    .option('--email <email>', "the first portal user's email (default: admin+<platform id>@payhooks.local)")
    .option('--json', 'print one JSON object')
    .action(async (opts: { name: string; email?: string; json?: boolean }) => {
      const name = opts.name.trim();
      if (!name || name.length > 200) throw new ConfigError('--name must be 1 to 200 characters.');
      const created = await withRuntime(({ ctx }) => asConfigError(() => createPlatform(ctx.database.db, name, { portalEmail: opts.email })));
      if (opts.json) process.stdout.write(JSON.stringify(created) + '\n');
      else
        process.stdout.write(
          `Platform ${created.platform_id}\nMerchant ${created.merchant_id}\nSandbox key ${created.keys.sandbox}\nLive key    ${created.keys.live}\n` +
            `Portal user ${created.portal.email}\nPassword    ${created.portal.password}\n` +
            'Store the keys and the password now: they are not shown again.\n',
        );
    });
  admin
    .command('create-user')
    .description('create a Merchant Portal user for a Platform (its password is printed once)')
    .requiredOption('--platform <id>', 'Platform id (plt_…)')
    .requiredOption('--email <email>', 'the email the user signs in with')
    .option('--json', 'print one JSON object')
    .action(async (opts: { platform: string; email: string; json?: boolean }) => {
      const user = await withRuntime(async ({ ctx }) => {
        if (!(await platformExists(ctx.database.db, opts.platform))) throw new ConfigError(`No such Platform: ${opts.platform}`);
        return asConfigError(() => createPortalUser(ctx.database.db, opts.platform, opts.email));
      });
      if (opts.json) process.stdout.write(JSON.stringify(user) + '\n');
      else process.stdout.write(`Portal user ${user.id} (${user.email}) of ${user.platform_id}\nPassword ${user.password}\nStore it now: it is not shown again.\n`);
    });
  admin
    .command('create-key')
    .description('create another API key for a Platform (printed once)')
    .requiredOption('--platform <id>', 'Platform id (plt_…)')
    .addOption(new Option('--environment <env>', 'key environment').choices(['live', 'sandbox']).makeOptionMandatory())
    .option('--json', 'print one JSON object')
    .action(async (opts: { platform: string; environment: 'live' | 'sandbox'; json?: boolean }) => {
      const key = await withRuntime(async ({ ctx }) => {
        if (!(await platformExists(ctx.database.db, opts.platform))) throw new ConfigError(`No such Platform: ${opts.platform}`);
        return createApiKey(ctx.database.db, opts.platform, opts.environment);
      });
      if (opts.json) process.stdout.write(JSON.stringify({ id: key.id, environment: key.environment, key: key.key }) + '\n');
      else process.stdout.write(`Key ${key.id} (${key.environment}): ${key.key}\nStore it now: it is not shown again.\n`);
    });
  admin
    .command('revoke-key')
    .description('revoke an API key by id (key_…), full key, or its 12-character prefix (sk_live_AbCd)')
    .argument('<key>', 'key id, key, or key prefix')
    .action(async (idOrPrefix: string) => {
      const result = await withRuntime(({ ctx }) => revokeApiKey(ctx.database.db, idOrPrefix, ctx.clock.now()));
      if ('revoked' in result) process.stdout.write(`revoked ${result.revoked.id} (${result.revoked.prefix}…)\n`);
      else if (result.error === 'ambiguous') throw new ConfigError(`${result.matches} keys match '${idOrPrefix}'; give the key id (key_…) instead.`);
      else throw new ConfigError(`No API key matches '${idOrPrefix}'.`);
    });
  return program;
}

/**
 * A crash is still a crash (exit 1), but a database error in it prints as statement + SQLSTATE:
 * Node's default report would print drizzle's error with every query parameter.
 */
function reportCrash(err: unknown): never {
  const db = describeDbError(err);
  process.stderr.write(`payhooks: crashed: ${db ? db.message : err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
}

export async function main(argv: string[]): Promise<void> {
  process.on('unhandledRejection', reportCrash);
  process.on('uncaughtException', reportCrash);
  try {
    await buildCli().parseAsync(argv);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`payhooks: ${err.message}\n`);
      process.exit(1);
    }
    // A database failure prints its statement and SQLSTATE, never the query's parameters.
    const db = describeDbError(err);
    if (db) {
      process.stderr.write(`payhooks: ${db.message}${db.statement && db.unavailable ? ` (statement '${db.statement}')` : ''}\n`);
      process.exit(1);
    }
    throw err;
  }
}

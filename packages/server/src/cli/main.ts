import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { RESOURCE_EVENT_TYPES } from '@payhooks/contract';
import { settingsHelp } from '../config.ts';
import { ConfigError } from '../errors.ts';
import { describeDbError } from '../db/faults.ts';
import { withReceiverAuthFlags, type ReceiverAuthFlags } from './receiver-auth-flags.ts';

/*
 * The command tree only. Each command imports its implementation when it runs, so `--help`,
 * `--version` and the HTTP-only commands (trigger, listen) never load Fastify, the database
 * drivers or PGlite (docs/decisions/build-and-packaging.md: the CLI starts in well under 300 ms).
 */

function version(): string {
  // ../../package.json from src/cli/ and from dist/cli/ alike.
  return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}

export function buildCli(): Command {
  const program = new Command('payhooks')
    .description('payhooks: signed, retried, logged webhooks for a payment service')
    .version(version(), '-V, --version', 'print the version')
    .showHelpAfterError()
    .addHelpText('after', `\nEnvironment variables (flags given to a command override them):\n${settingsHelp()}\n`);

  program
    .command('serve')
    .description('run the HTTP API and an in-process delivery worker')
    .option('--dev', 'development mode: embedded database, demo Platform, private and plain-http URLs allowed')
    .option('--port <port>', 'port (overrides PAYHOOKS_PORT)')
    .option('--host <host>', 'host (overrides PAYHOOKS_HOST)')
    .option('--no-worker', 'do not run a delivery worker in this process')
    .action(async (opts: { dev?: boolean; port?: string; host?: string; worker?: boolean }) => (await import('./serve.ts')).serve(opts));

  program
    .command('worker')
    .description('run delivery workers only (PostgreSQL; start as many processes as you like)')
    .option('--workers <n>', 'worker loops in this process', '1')
    .action(async (opts: { workers: string }) => (await import('./worker.ts')).workerCommand({ processes: opts.workers }));

  program
    .command('migrate')
    .description('apply pending database migrations and exit')
    .option('--check', 'apply nothing: exit 0 when the database is up to date, 3 when migrations are pending (1: could not tell)')
    .action(async (opts: { check?: boolean }) => (await import('./admin.ts')).migrateCommand(opts));

  program
    .command('trigger')
    .description(`emit a sandbox event for real on a running payhooks (over HTTP): ${RESOURCE_EVENT_TYPES.join(', ')}`)
    .argument('<event-type>', 'the event type to emit')
    .requiredOption('--api-key <key>', 'a sandbox API key (sk_test_…)')
    .option('--url <url>', 'where payhooks runs', 'http://127.0.0.1:8080')
    .option('--double-delivery', 'deliver each event twice to every endpoint (the double-delivery case)')
    .option(
      '--metadata <key=value>',
      'add a metadata entry to the payment or session, e.g. --metadata account=acct_1 (repeatable)',
      (pair: string, all: string[]) => [...all, pair],
      [] as string[],
    )
    .option('--json', 'print one JSON object instead of progress lines')
    .action(async (type: string, opts: { apiKey: string; url: string; doubleDelivery?: boolean; metadata: string[]; json?: boolean }) => {
      const { runTrigger, parseMetadataFlags } = await import('./trigger.ts');
      const result = await runTrigger(
        type,
        { apiKey: opts.apiKey, url: opts.url, doubleDelivery: opts.doubleDelivery === true, metadata: parseMetadataFlags(opts.metadata) },
        (line) => {
          if (!opts.json) process.stdout.write(`${line}\n`);
        },
      );
      if (opts.json) process.stdout.write(`${JSON.stringify(result)}\n`);
    });

  withReceiverAuthFlags(
    program
      .command('listen')
      .description(
        "forward sandbox events from a running payhooks to a local receiver, signed with the session's own whsec_ secret (Ctrl-C ends the session)",
      )
      .requiredOption('--api-key <key>', 'a sandbox API key (sk_test_…)')
      .requiredOption('--forward-to <url>', 'your local receiver, e.g. http://localhost:3000/webhooks')
      .option('--url <url>', 'where payhooks runs', 'http://127.0.0.1:8080')
      .option('--events <types>', 'comma-separated event types to forward (default: every type)'),
  ).action(async (opts: { apiKey: string; forwardTo: string; url: string; events?: string } & ReceiverAuthFlags) => {
    const { runListen } = await import('./listen.ts');
    const controller = new AbortController();
    const stop = () => {
      if (controller.signal.aborted) process.exit(1); // a second Ctrl-C: leave now
      controller.abort();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    const events = opts.events
      ?.split(',')
      .map((t) => t.trim())
      .filter(Boolean);
    await runListen({
      apiKey: opts.apiKey,
      forwardTo: opts.forwardTo,
      url: opts.url,
      events,
      signal: controller.signal,
      print: (line) => process.stdout.write(`${line}\n`),
      receiver: opts,
    });
    process.stdout.write('Session ended.\n');
  });

  withReceiverAuthFlags(
    program
      .command('check-receiver')
      .description(
        'send your receiver a battery of signed and mis-signed deliveries and report, duty by duty, what it does wrong (exit 0 only when every duty holds)',
      )
      .argument('<url>', 'your receiver, e.g. http://localhost:3000/webhooks')
      .requiredOption('--secret <whsec>', "the endpoint's whsec_ signing secret your receiver verifies with")
      .option('--json', 'print one JSON object instead of the report'),
  ).action(async (url: string, opts: { secret: string; json?: boolean } & ReceiverAuthFlags) =>
    (await import('./check-receiver.ts')).checkReceiverCommand(url, opts),
  );

  program
    .command('maintain')
    .description(
      "run the hourly partition maintenance once (weeks ahead, retention, a closed week's index rebuild) as the tables' owner; for a service that runs as a runtime role (serve and worker do it themselves otherwise)",
    )
    .action(async () => (await import('./maintenance.ts')).maintainCommand());

  const admin = program.command('admin').description('operator commands');
  admin
    .command('runtime-role')
    .description(
      "create the PostgreSQL role serve and worker should run as (only the grants they need; the audit trail's triggers bind it), or update its grants after migrate; run as the owner",
    )
    .argument('<name>', 'the role, e.g. payhooks_runtime')
    .option('--check', 'change nothing: report what is wrong with the role (exit 1) or that it is right (exit 0)')
    .action(async (name: string, opts: { check?: boolean }) => (await import('./maintenance.ts')).runtimeRoleCommand(name, opts));
  admin
    .command('create-platform')
    .description('create a Platform with one merchant, a sandbox key and a live key (keys are printed once)')
    .requiredOption('--name <name>', 'display name of the Platform')
    .option('--email <email>', "the first portal user's email (default: admin+<platform id>@payhooks.local)")
    .option('--json', 'print one JSON object')
    .action(async (opts: { name: string; email?: string; json?: boolean }) => (await import('./admin.ts')).createPlatformCommand(opts));
  const roleOption = () => new Option('--role <role>', 'viewer, developer or admin').choices(['viewer', 'developer', 'admin']);
  admin
    .command('create-user')
    .description('create a Merchant Portal user for a Platform (its password is printed once); prefer invite, where the user chooses it')
    .requiredOption('--platform <id>', 'Platform id (plt_…)')
    .requiredOption('--email <email>', 'the email the user signs in with')
    .addOption(roleOption().default('developer'))
    .option('--json', 'print one JSON object')
    .action(async (opts: { platform: string; email: string; role?: string; json?: boolean }) =>
      (await import('./admin.ts')).createUserCommand(opts),
    );
  admin
    .command('invite')
    .description(
      'invite a teammate to the Merchant Portal: prints a single-use link (a week) where they choose their password; mailed too when PAYHOOKS_SMTP_URL is set',
    )
    .requiredOption('--platform <id>', 'Platform id (plt_…)')
    .requiredOption('--email <email>', "the teammate's email")
    .addOption(roleOption().default('developer'))
    .option('--json', 'print one JSON object')
    .action(async (opts: { platform: string; email: string; role?: string; json?: boolean }) =>
      (await import('./admin.ts')).inviteCommand(opts),
    );
  admin
    .command('list-users')
    .description("list a Platform's portal users: id, role, two-factor, creation time, email")
    .requiredOption('--platform <id>', 'Platform id (plt_…)')
    .option('--json', 'print one JSON array')
    .action(async (opts: { platform: string; json?: boolean }) => (await import('./admin.ts')).listUsersCommand(opts));
  admin
    .command('set-role')
    .description("change a portal user's role (applies at their next request; a Platform keeps at least one admin)")
    .requiredOption('--email <email>', "the user's email")
    .option('--platform <id>', 'the Platform (plt_…) when the email has accounts on several')
    .addOption(roleOption().makeOptionMandatory())
    .action(async (opts: { email: string; role: string; platform?: string }) => (await import('./admin.ts')).setRoleCommand(opts));
  admin
    .command('remove-user')
    .description('remove a portal user; their sessions end at once')
    .requiredOption('--email <email>', "the user's email")
    .option('--platform <id>', 'the Platform (plt_…) when the email has accounts on several')
    .action(async (opts: { email: string; platform?: string }) => (await import('./admin.ts')).removeUserCommand(opts));
  admin
    .command('reset-password')
    .description('print a single-use link (an hour) where a portal user chooses a new password; their sessions end when they do')
    .requiredOption('--email <email>', "the user's email")
    .option('--platform <id>', 'the Platform (plt_…) when the email has accounts on several')
    .option('--json', 'print one JSON object')
    .action(async (opts: { email: string; platform?: string; json?: boolean }) => (await import('./admin.ts')).resetPasswordCommand(opts));
  admin
    .command('reset-two-factor')
    .description(
      'turn two-factor sign-in off for a user who lost their device and recovery codes (they set it up again at next sign-in if required)',
    )
    .requiredOption('--email <email>', "the user's email")
    .option('--platform <id>', 'the Platform (plt_…) when the email has accounts on several')
    .action(async (opts: { email: string; platform?: string }) => (await import('./admin.ts')).resetTwoFactorCommand(opts));
  admin
    .command('create-key')
    .description('create another API key for a Platform (printed once)')
    .requiredOption('--platform <id>', 'Platform id (plt_…)')
    .addOption(new Option('--environment <env>', 'key environment').choices(['live', 'sandbox']).makeOptionMandatory())
    .option('--json', 'print one JSON object')
    .action(async (opts: { platform: string; environment: 'live' | 'sandbox'; json?: boolean }) =>
      (await import('./admin.ts')).createKeyCommand(opts),
    );
  admin
    .command('list-platforms')
    .description('list the Platforms: id, name, creation time and unrevoked keys per environment')
    .option('--json', 'print one JSON array')
    .action(async (opts: { json?: boolean }) => (await import('./admin.ts')).listPlatformsCommand(opts));
  admin
    .command('list-keys')
    .description('list API keys by id and prefix (never the key: only its hash is stored), with revocation times')
    .option('--platform <id>', 'only this Platform (plt_…)')
    .option('--json', 'print one JSON array')
    .action(async (opts: { platform?: string; json?: boolean }) => (await import('./admin.ts')).listKeysCommand(opts));
  admin
    .command('revoke-key')
    .description('revoke an API key by id (key_…), full key, or its 12-character prefix (sk_live_AbCd)')
    .argument('<key>', 'key id, key, or key prefix')
    .action(async (idOrPrefix: string) => (await import('./admin.ts')).revokeKeyCommand(idOrPrefix));
  return program;
}

/** The underlying error's stack, for PAYHOOKS_LOG_LEVEL=debug or trace only. */
function debugDetail(err: unknown): string {
  const level = process.env.PAYHOOKS_LOG_LEVEL;
  if (level !== 'debug' && level !== 'trace') return '';
  const cause = err instanceof Error && err.cause !== undefined ? err.cause : err;
  const db = describeDbError(cause);
  // A database error's text may carry query parameters: its summary only, as in the logs.
  const text = db ? db.message : cause instanceof Error ? (cause.stack ?? cause.message) : String(cause);
  return `payhooks: (debug) ${text}\n`;
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
    // A start that can't go on (a setting, the database, the address): one line saying what to
    // do, exit 1; the stack only at debug level.
    if (err instanceof ConfigError) {
      process.stderr.write(`payhooks: ${err.message}\n${debugDetail(err)}`);
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

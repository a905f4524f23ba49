import { loadConfig } from '../config.ts';
import { ConfigError } from '../errors.ts';
import { openRuntime } from '../runtime.ts';
import { buildApp, listeningUrl } from '../api/app.ts';
import { devBanner, devInternalToken, ensureDevPlatform } from './dev-bootstrap.ts';
import { onStopSignal } from './stop-signal.ts';
import { startBackgroundJobs } from './background-jobs.ts';
import { describeListenError, listenSource, probeListen } from './listen-address.ts';

export interface ServeOptions {
  dev?: boolean;
  port?: string;
  host?: string;
  worker?: boolean;
}

/** `payhooks serve`: the HTTP API, and unless `--no-worker` the delivery worker and periodic jobs. */
export async function serve(options: ServeOptions): Promise<void> {
  const flags = {
    ...(options.port !== undefined ? { port: { flag: '--port', value: options.port } } : {}),
    ...(options.host !== undefined ? { host: { flag: '--host', value: options.host } } : {}),
  };
  const cfg = loadConfig(process.env, options.dev ? { dev: true } : {}, flags);
  if (options.worker === false && !cfg.databaseUrl) {
    throw new ConfigError(
      'serve --no-worker needs PostgreSQL: the embedded database can be opened by this process only, so no worker could ever deliver its events. Drop --no-worker, or set DATABASE_URL and run `payhooks worker` beside it.',
    );
  }
  const source = listenSource(options, process.env);
  // A port in use or an address this host doesn't have is reported before the database is
  // opened or migrated: a start that can't serve changes nothing.
  await probeListen(cfg.host, cfg.port, source);
  if (cfg.dev && !cfg.internalToken) cfg.internalToken = devInternalToken(cfg.dataDir);
  let app: Awaited<ReturnType<typeof buildApp>> | undefined;
  // Links this process makes point where it listens unless PAYHOOKS_PUBLIC_URL says otherwise.
  const runtime = await openRuntime({ config: cfg, listeningAt: () => (app ? listeningUrl(app) : undefined) });
  const { ctx } = runtime;
  const worker = options.worker === false ? null : ctx.createWorker();
  let address: string;
  let dev: Awaited<ReturnType<typeof ensureDevPlatform>> | null;
  try {
    app = await buildApp(ctx);
    dev = cfg.dev ? await ensureDevPlatform(ctx) : null;
    try {
      address = await app.listen({ port: cfg.port, host: cfg.host });
    } catch (err) {
      // Another process took the port after the check above.
      throw describeListenError(err, cfg.host, cfg.port, source) ?? err;
    }
  } catch (err) {
    await runtime.close().catch(() => {});
    throw err;
  }
  await worker?.start();
  // The sweeps beside the workers (expiry, auto-disable, retention) run wherever workers do.
  const jobs = worker ? startBackgroundJobs(ctx, runtime) : null;
  onStopSignal(ctx.logger, async () => {
    await app.close(); // stop taking requests first
    await jobs?.stop();
    await worker?.stop(); // then let in-flight attempts finish and be recorded
    await runtime.close();
  });
  if (dev) process.stdout.write(`${devBanner(address, dev.platform, ctx)}\n`);
  ctx.logger.info({ url: address, database: ctx.database.kind, dev: cfg.dev, worker: worker !== null }, 'payhooks listening');
}

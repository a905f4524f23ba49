import { createServer } from 'node:net';
import { ConfigError } from '../errors.ts';

/** Where the host and port came from, to name in an error: the flag, the variable, or the default. */
export interface ListenSource {
  host: string;
  port: string;
}

export function listenSource(flags: { host?: string; port?: string }, env: NodeJS.ProcessEnv): ListenSource {
  const name = (flag: string, variable: string, value: string | undefined) =>
    value !== undefined
      ? `${flag} ${value}`
      : env[variable]
        ? `${variable}=${env[variable]}`
        : `the default; change it with ${flag} or ${variable}`;
  return { host: name('--host', 'PAYHOOKS_HOST', flags.host), port: name('--port', 'PAYHOOKS_PORT', flags.port) };
}

/**
 * The listen failure as one line saying which setting to change, or undefined when `err` is not
 * one this knows (it is then reported as it is).
 */
export function describeListenError(err: unknown, host: string, port: number, source: ListenSource): ConfigError | undefined {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const where = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  const cause = { cause: err };
  switch (code) {
    case 'EADDRINUSE':
      return new ConfigError(
        `Port ${port} (${source.port}) is already in use on ${host}: stop the process using it, or choose another port.`,
        cause,
      );
    case 'EADDRNOTAVAIL':
      return new ConfigError(
        `Address ${host} (${source.host}) is not an address of this machine, so payhooks can't listen on ${where}: use 127.0.0.1, 0.0.0.0 or one of this host's addresses.`,
        cause,
      );
    case 'EACCES':
      return new ConfigError(
        `Listening on ${where} (${source.port}) is not permitted: ports below 1024 need privileges; choose a port from 1024 up.`,
        cause,
      );
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
      return new ConfigError(`Host name ${host} (${source.host}) does not resolve: give an address such as 127.0.0.1 or 0.0.0.0.`, cause);
    default:
      return undefined;
  }
}

/**
 * Binds `host:port` and releases it at once, so a port in use or an address this machine doesn't
 * have fails the start before anything else (the database is neither opened nor migrated). Port 0
 * (any free port) can't be in use and is not probed beyond the address.
 */
export async function probeListen(host: string, port: number, source: ListenSource): Promise<void> {
  const server = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host, port, exclusive: true }, () => resolve());
    });
  } catch (err) {
    throw describeListenError(err, host, port, source) ?? err;
  }
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

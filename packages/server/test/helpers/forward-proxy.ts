import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, until } from './wait.ts';

/**
 * A real forward proxy for egress tests: Debian's tinyproxy, started with its own configuration
 * file on a free port of 127.0.0.1 (not the system service), logging every request it is asked.
 */
export interface ForwardProxy {
  url: string;
  port: number;
  /** The request lines the proxy was asked (`CONNECT 127.0.0.1:443 HTTP/1.1`, `POST http://…`). */
  requests(): string[];
  /** The whole log, for a failure message. */
  log(): string;
  stop(): Promise<void>;
}

/** `connectPorts`: the only ports CONNECT may reach (tinyproxy answers others with 403). */
export async function startForwardProxy(options: { connectPorts?: number[] } = {}): Promise<ForwardProxy> {
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-proxy-'));
  // tinyproxy drops root for nobody, which must still write its log here.
  chmodSync(dir, 0o777);
  const port = await freePort();
  const logFile = join(dir, 'tinyproxy.log');
  const config = [
    ...(process.getuid?.() === 0 ? ['User nobody', 'Group nogroup'] : []),
    `Port ${port}`,
    'Listen 127.0.0.1',
    'Timeout 30',
    `LogFile "${logFile}"`,
    'LogLevel Connect',
    'MaxClients 50',
    'Allow 127.0.0.1',
    ...(options.connectPorts ?? []).map((p) => `ConnectPort ${p}`),
  ];
  writeFileSync(join(dir, 'tinyproxy.conf'), `${config.join('\n')}\n`);
  const child: ChildProcess = spawn('tinyproxy', ['-d', '-c', join(dir, 'tinyproxy.conf')], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const log = () => {
    try {
      return readFileSync(logFile, 'utf8');
    } catch {
      return '';
    }
  };
  await until(
    () =>
      new Promise<boolean>((resolve) => {
        const s = connect(port, '127.0.0.1');
        s.once('connect', () => {
          s.destroy();
          resolve(true);
        });
        s.once('error', () => resolve(false));
      }),
    { message: () => `tinyproxy listening on ${port}\n${log()}` },
  );
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    log,
    requests: () => [...log().matchAll(/Request \(file descriptor \d+\): (.*)$/gm)].map((m) => m[1]!),
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { watched } from './spawn.ts';
import { freePort } from './wait.ts';

/**
 * Brokers that require a client certificate, started for a test from the machine's own Debian
 * packages (RabbitMQ and nats-server, which `.ci/run` installs): each its own process on free
 * ports, with its data in `dir`, stopped with `stop()`. The certificates are PEM files in `dir`
 * (test/helpers/certificates.ts makes them).
 */
export interface TlsBroker {
  port: number;
  stop(): Promise<void>;
}

function stopper(child: ChildProcess): () => Promise<void> {
  return async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    // The whole group: rabbitmq-server's script starts the Erlang VM as a child.
    process.kill(-child.pid!, 'SIGTERM');
    await exited;
  };
}

/**
 * A RabbitMQ node of its own with only an AMQPS listener that requires a client certificate of
 * `ca` (and the guest user, allowed from anywhere). About five seconds to start.
 */
export async function startTlsRabbit(dir: string, files: { ca: string; cert: string; key: string }): Promise<TlsBroker> {
  const home = join(dir, 'rabbit');
  mkdirSync(home, { recursive: true });
  const [port, distPort] = [await freePort(), await freePort()];
  writeFileSync(
    join(home, 'rabbitmq.conf'),
    [
      'listeners.tcp = none',
      `listeners.ssl.default = ${port}`,
      `ssl_options.cacertfile = ${files.ca}`,
      `ssl_options.certfile = ${files.cert}`,
      `ssl_options.keyfile = ${files.key}`,
      'ssl_options.verify = verify_peer',
      'ssl_options.fail_if_no_peer_cert = true',
      'loopback_users = none',
      '',
    ].join('\n'),
  );
  writeFileSync(join(home, 'enabled_plugins'), '[].\n');
  const child = spawn('/usr/lib/rabbitmq/bin/rabbitmq-server', [], {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      HOME: home,
      RABBITMQ_NODENAME: `payhooks-tls-${process.pid}-${port}@localhost`,
      RABBITMQ_NODE_PORT: String(port),
      RABBITMQ_DIST_PORT: String(distPort),
      RABBITMQ_CONFIG_FILE: join(home, 'rabbitmq'),
      RABBITMQ_MNESIA_BASE: join(home, 'mnesia'),
      RABBITMQ_LOG_BASE: join(home, 'log'),
      RABBITMQ_ENABLED_PLUGINS_FILE: join(home, 'enabled_plugins'),
      RABBITMQ_PLUGINS_EXPAND_DIR: join(home, 'plugins-expand'),
    },
  });
  const stop = stopper(child);
  try {
    await watched(child).waitFor(/Starting broker\.\.\. completed/, 60_000);
  } catch (err) {
    await stop();
    throw err;
  }
  return { port, stop };
}

/** A NATS server with JetStream whose only listener requires TLS and a client certificate of `ca`. */
export async function startTlsNats(dir: string, files: { ca: string; cert: string; key: string }): Promise<TlsBroker> {
  const store = join(dir, 'nats');
  mkdirSync(store, { recursive: true });
  const port = await freePort();
  const child = spawn(
    'nats-server',
    [
      '-a',
      '127.0.0.1',
      '-p',
      String(port),
      '-js',
      '-sd',
      store,
      '--tlsverify',
      '--tlscert',
      files.cert,
      '--tlskey',
      files.key,
      '--tlscacert',
      files.ca,
    ],
    { detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const stop = stopper(child);
  try {
    await watched(child).waitFor(/Server is ready/, 30_000);
  } catch (err) {
    await stop();
    throw err;
  }
  return { port, stop };
}

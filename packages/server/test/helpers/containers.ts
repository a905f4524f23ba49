import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/**
 * Debian's podman as this kind of machine runs it (runc, cgroupfs, explicit ulimits; the
 * defaults are refused here), for the tests of the container image and the compose stack.
 */
const run = promisify(execFile);
export const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const GLOBAL = ['--runtime', 'runc', '--cgroup-manager', 'cgroupfs'];
export const LIMITS = ['--ulimit', 'nofile=4096:4096', '--ulimit', 'nproc=2000:2000'];

export async function podman(args: string[], options: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): Promise<string> {
  const { stdout } = await run('podman', [...GLOBAL, ...args], {
    timeout: options.timeoutMs ?? 120_000,
    maxBuffer: 64 * 1024 * 1024,
    env: options.env ?? process.env,
  });
  return stdout.trim();
}

/** The script's last line of output (the image tag it made). */
export async function script(name: string, args: string[] = [], env: Record<string, string> = {}, timeoutMs = 300_000): Promise<string> {
  const { stdout } = await run('bash', [`scripts/${name}`, ...args], {
    cwd: ROOT,
    timeout: timeoutMs,
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, ...env },
  });
  return stdout.trim().split('\n').at(-1)!;
}

/** The Node 20 base made from Debian's packages (once per machine) and the image built on it from the packed packages. */
export async function buildImage(tag: string): Promise<{ base: string; image: string }> {
  const base = await script('container-base.sh');
  const image = await script('build-image.sh', [tag], { NODE_IMAGE: base, PACKED: '1', CONTAINER_ENGINE: 'podman' });
  return { base, image };
}

/** podman-compose on deploy/compose/compose.yaml as project `project` (its settings from `env`, as from a .env). */
export async function compose(project: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const { stdout } = await run(
    'podman-compose',
    ['--podman-args', GLOBAL.join(' '), '-f', `${ROOT}deploy/compose/compose.yaml`, '-p', project, ...args],
    { timeout: 300_000, maxBuffer: 64 * 1024 * 1024, env },
  );
  return stdout;
}

/** SIGTERM/SIGINT: run `shutdown` once (drain), then exit 0. A second signal exits at once. */
export function onStopSignal(logger: { info: (o: object, m: string) => void }, shutdown: () => Promise<void>): void {
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

import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in front of the real PostgreSQL, for tests that watch or change what the server
 * sends. Client -> server bytes are piped as they are; `onConnection` decides what reaches the
 * client from `upstream` (SSL is not negotiated through it).
 */
export interface PgProxy {
  /** `databaseUrl` pointed at the proxy. */
  url: string;
  close(): Promise<void>;
}

export async function pgProxy(
  databaseUrl: string,
  onConnection: (client: Socket, upstream: Socket, index: number) => void,
): Promise<PgProxy> {
  const target = new URL(databaseUrl);
  const sockets = new Set<Socket>();
  let connections = 0;
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    sockets.add(client).add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    onConnection(client, upstream, connections++);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as { port: number }).port);
  return {
    url: url.toString(),
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Cuts the server's byte stream into whole messages (a type byte, then an int32 length that
 * counts itself), however the reads split them.
 */
export class ServerMessages {
  private pending: Buffer = Buffer.alloc(0);

  /** The messages this read completes, each as its bytes. */
  push(chunk: Buffer): Buffer[] {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    const out: Buffer[] = [];
    let at = 0;
    while (this.pending.length - at >= 5) {
      const end = at + 1 + this.pending.readInt32BE(at + 1);
      if (this.pending.length < end) break;
      out.push(this.pending.subarray(at, end));
      at = end;
    }
    this.pending = this.pending.subarray(at);
    return out;
  }
}

/** A message's type letter ('Z' ReadyForQuery, 'E' ErrorResponse, ...). */
export const typeOf = (message: Buffer): string => String.fromCharCode(message[0]!);

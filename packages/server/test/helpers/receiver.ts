import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';

export interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The headers with their names as sent (`headers` lower-cases them); a repeated name keeps its last value. */
  rawHeaders: Record<string, string>;
  /** The exact bytes received. */
  raw: Buffer;
  at: number;
}

/** What the receiver does with a request: answer, wait first, or cut the connection. */
export type Behaviour =
  | {
      status: number;
      body?: string;
      delayMs?: number;
      headers?: Record<string, string>;
      /** Answer only once this settles: holds an attempt open for as long as a test needs. */
      until?: Promise<unknown>;
    }
  | 'reset';

/**
 * A real HTTP receiver on 127.0.0.1:0 that records every request byte for byte, for end-to-end
 * delivery tests (no HTTP mocks).
 */
export interface TestReceiver {
  url: string;
  port: number;
  requests: Received[];
  behave(fn: (req: Received, index: number) => Behaviour): void;
  /** Resolves when `n` requests have arrived. */
  waitFor(n: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startReceiver(
  initial: (req: Received, index: number) => Behaviour = () => ({ status: 200, body: 'ok' }),
): Promise<TestReceiver> {
  let behaviour = initial;
  const requests: Received[] = [];
  const waiters: Array<{ n: number; resolve: () => void }> = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const received: Received = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        rawHeaders: Object.fromEntries(req.rawHeaders.flatMap((v, i, all) => (i % 2 === 0 ? [[v, all[i + 1]!]] : []))),
        raw: Buffer.concat(chunks),
        at: Date.now(),
      };
      const index = requests.length;
      requests.push(received);
      for (const w of waiters.filter((w) => requests.length >= w.n)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
      const b = behaviour(received, index);
      if (b === 'reset') {
        req.socket.destroy();
        return;
      }
      const answer = () => {
        if (res.destroyed) return;
        res.writeHead(b.status, b.headers ?? {});
        res.end(b.body ?? '');
      };
      if (b.until) void b.until.finally(answer);
      else if (b.delayMs) setTimeout(answer, b.delayMs);
      else answer();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/webhooks`,
    port,
    requests,
    behave(fn) {
      behaviour = fn;
    },
    waitFor(n, timeoutMs = 20_000) {
      if (requests.length >= n) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`receiver got ${requests.length} of ${n} requests in ${timeoutMs} ms`)), timeoutMs);
        waiters.push({
          n,
          resolve: () => {
            clearTimeout(t);
            resolve();
          },
        });
      });
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** A raw TCP server that answers every request with `response` bytes, then keeps the socket open. */
export async function startRawServer(response: string): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createTcpServer((s) => {
    sockets.add(s);
    s.once('data', () => s.write(response));
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/raw`,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** A port on 127.0.0.1 with nothing listening (bound, then closed). */
export async function closedPort(): Promise<number> {
  const server = createTcpServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

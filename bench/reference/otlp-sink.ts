import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A collector stand-in for the tracing figure: takes OTLP/HTTP posts on /v1/traces, answers 200
 * and keeps only a count of the bytes, so what the bench measures is the worker's side.
 */
export async function startOtlpSink(): Promise<{ url: string; spans: () => { posts: number; bytes: number }; close: () => Promise<void> }> {
  let posts = 0;
  let bytes = 0;
  const server = createServer((req, res) => {
    req.on('data', (c: Buffer) => {
      bytes += c.length;
    });
    req.on('end', () => {
      posts++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans: () => ({ posts, bytes }),
    close: () => new Promise((r) => server.close(() => r())),
  };
}

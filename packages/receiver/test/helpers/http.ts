import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export async function listen(listener: RequestListener): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((e) => (e ? reject(e) : resolve()));
      }),
  };
}

/** A minimal bridge from node:http to a Fetch-API handler, as @hono/node-server or Next.js do it. */
export function fetchBridge(handler: (request: Request) => Promise<Response>): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) {
        if (typeof value === 'string') headers.set(name, value);
        else if (Array.isArray(value)) for (const v of value) headers.append(name, v);
      }
      const method = req.method ?? 'GET';
      const request = new Request(`http://${req.headers.host}${req.url}`, {
        method,
        headers,
        body: method === 'GET' || method === 'HEAD' ? undefined : Buffer.concat(chunks),
      });
      const response = await handler(request);
      res.statusCode = response.status;
      response.headers.forEach((v, k) => {
        res.setHeader(k, v);
      });
      res.end(Buffer.from(await response.arrayBuffer()));
    });
  };
}

export async function post(url: string, body: string | Uint8Array, headers: Record<string, string>) {
  const response = await fetch(url, { method: 'POST', body, headers });
  const text = await response.text();
  return { status: response.status, body: text, json: () => JSON.parse(text) as Record<string, unknown> };
}

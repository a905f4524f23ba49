import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Sender } from '../../src/delivery/sender.ts';
import { RESPONSE_BODY_LIMIT } from '../../src/delivery/destinations/http.ts';
import { closedPort, startRawServer } from '../helpers/receiver.ts';

// The Sender against real sockets: what one attempt reports when the receiver answers, stalls
// before the status, stalls in the body, sends too much, or breaks off. A short deadline keeps
// these quick; nothing here asserts how long anything took.
const TIMEOUT_MS = 1500;
let sender: Sender;
const servers: Array<{ close(): Promise<void> }> = [];

beforeAll(() => {
  sender = new Sender({ timeoutMs: TIMEOUT_MS, allowPrivate: true, connectionsPerOrigin: 50, now: () => new Date() });
});
afterAll(async () => {
  await sender.close();
  for (const s of servers) await s.close();
});

async function raw(response: string): Promise<string> {
  const s = await startRawServer(response);
  servers.push(s);
  return s.url;
}

/** An HTTP server that answers each request with `handle`. */
async function http(handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server: Server = createServer(handle);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push({
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
}

const send = (url: string, eventId = 'evt_1') => sender.send({ url, body: '{"id":"evt_1"}', eventId, secrets: ['whsec_test'] });

describe('one attempt (spec 3.2, 8: a 2xx within 10 s acknowledges)', () => {
  it('spec 3.2: a 2xx is a success with the body kept for the log; a 500 is an http_status failure with its body', async () => {
    const ok = await send(await http((_req, res) => res.writeHead(200).end('thanks')));
    expect(ok).toMatchObject({ succeeded: true, statusCode: 200, responseBody: 'thanks', errorKind: null });
    const bad = await send(await http((_req, res) => res.writeHead(500).end('boom')));
    expect(bad).toMatchObject({ succeeded: false, statusCode: 500, responseBody: 'boom', errorKind: 'http_status' });
  });

  it('spec 8: no status within the deadline is a timeout, and a later answer on a fresh attempt still counts', async () => {
    const hang = await send(await raw(''));
    expect(hang).toMatchObject({ succeeded: false, statusCode: null, errorKind: 'timeout' });
    expect(hang.durationMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    // The shared deadline timer re-arms for attempts made after one expired.
    const again = await send(await raw(''));
    expect(again.errorKind).toBe('timeout');
    const ok = await send(await http((_req, res) => res.writeHead(204).end()));
    expect(ok).toMatchObject({ succeeded: true, statusCode: 204, responseBody: '' });
  });

  it('spec 8: concurrent attempts each get their own deadline: a stalled one times out, the others answer', async () => {
    const stalled = await raw('');
    const fast = await http((_req, res) => res.writeHead(200).end('ok'));
    const results = await Promise.all([send(stalled), send(fast), send(fast), send(stalled), send(fast)]);
    expect(results.map((r) => r.errorKind ?? r.statusCode)).toEqual(['timeout', 200, 200, 'timeout', 200]);
  });

  it('spec 3.2: a 2xx whose body never ends is still a success, logged with the bytes that arrived', async () => {
    const url = await raw('HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npartial');
    const r = await send(url);
    expect(r).toMatchObject({ succeeded: true, statusCode: 200, responseBody: 'partial', errorKind: null });
  });

  it('spec 2.4: at most 16 KiB of the body is kept, even when the receiver keeps sending', async () => {
    const url = await http((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('a'.repeat(RESPONSE_BODY_LIMIT + 1000));
      // ... and never ends the response.
    });
    const r = await send(url);
    expect(r.succeeded).toBe(true);
    expect(r.responseBody).toBe('a'.repeat(RESPONSE_BODY_LIMIT));
  });

  it('spec 3.2: a body that breaks off after the status keeps the answer and the bytes read', async () => {
    const url = await http((_req, res) => {
      res.writeHead(503, { 'content-length': '100' });
      res.write('down for');
      setTimeout(() => res.socket?.destroy(), 50);
    });
    const r = await send(url);
    expect(r).toMatchObject({ succeeded: false, statusCode: 503, responseBody: 'down for', errorKind: 'http_status' });
  });

  it('spec 3.2: a 1xx alone is no answer (timeout); redirects are not followed (a 3xx fails)', async () => {
    const info = await send(await raw('HTTP/1.1 102 Processing\r\n\r\n'));
    expect(info).toMatchObject({ succeeded: false, statusCode: null, errorKind: 'timeout' });
    const moved = await send(await http((_req, res) => res.writeHead(301, { location: 'http://127.0.0.1:1/elsewhere' }).end()));
    expect(moved).toMatchObject({ succeeded: false, statusCode: 301, errorKind: 'http_status' });
  });

  it('spec 7: refused and reset connections are classified', async () => {
    expect((await send(`http://127.0.0.1:${await closedPort()}/h`)).errorKind).toBe('connection_refused');
    const reset = await http((req) => req.socket.destroy());
    expect((await send(reset)).errorKind).toBe('connection_reset');
  });

  it('sends the stored bytes with the event id, a signature and a JSON content type', async () => {
    let seen: { headers: Record<string, unknown>; body: string } | null = null;
    const url = await http((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen = { headers: req.headers, body };
        res.writeHead(200).end();
      });
    });
    await send(`${url}?q=1`, 'evt_headers');
    expect(seen!.body).toBe('{"id":"evt_1"}');
    expect(seen!.headers).toMatchObject({ 'content-type': 'application/json', 'service-event-id': 'evt_headers' });
    expect(String(seen!.headers['service-signature'])).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
  });
});

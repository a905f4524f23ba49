import { STATUS_CODES } from 'node:http';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../errors.ts';
import { REQUEST_ID_HEADER, newRequestId } from './request-id.ts';

/**
 * Requests Node's HTTP parser refuses before Fastify sees them (bad framing, oversized headers,
 * an invalid method or request line, a client too slow to send its headers) still get our
 * error shape, with a documented status:
 * - 431 `headers_too_large`: the request line and headers exceed Node's 16 KiB limit;
 * - 408 `request_timeout`: the headers did not arrive in time;
 * - 400 `malformed_http`: anything else the parser refuses (Content-Length and
 *   Transfer-Encoding together or invalid, a space in the path, an invalid method or version).
 * The connection is closed afterwards: after a framing error the byte stream can't be trusted.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  // The client went away (or the socket is already finished): nobody to answer.
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const appError =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? new AppError(
          'headers_too_large',
          'headers_too_large',
          'The request line and headers are too large (over 16 KiB); send fewer or shorter headers.',
        )
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new AppError('request_timeout', 'request_timeout', 'The request headers did not arrive in time; retry.')
        : new AppError(
            'invalid_request',
            'malformed_http',
            `The request is not valid HTTP/1.1 (${err.code ?? 'parse error'}); check the request line, Content-Length and Transfer-Encoding.`,
          );
  answerAndClose(socket, appError);
}

/** Writes `error` as a whole HTTP/1.1 response on a raw socket, then closes it. */
function answerAndClose(socket: Duplex, error: AppError, extraHeaders = ''): void {
  const status = error.status;
  const reason = STATUS_CODES[status] ?? 'Bad Request';
  const body = JSON.stringify(error.toBody());
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extraHeaders}${REQUEST_ID_HEADER}: ${newRequestId()}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/**
 * `CONNECT` never reaches a route: Node hands it to the server's 'connect' listener, and without
 * one closes the connection with no answer. payhooks is not a proxy: 405 with our error shape.
 */
export function connectHandler(_req: IncomingMessage, socket: Duplex): void {
  socket.on('error', () => socket.destroy());
  answerAndClose(
    socket,
    new AppError('method_not_allowed', 'method_not_allowed', 'CONNECT is not supported: payhooks is not a proxy.'),
    'Allow: GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS\r\n',
  );
}

/**
 * HTTP/1.1 requires a Host header. Node's own check answers an empty 400, so it is turned off
 * (`requireHostHeader: false`) and this hook gives the same refusal our error shape.
 */
export async function requireHost(req: FastifyRequest): Promise<void> {
  if (req.raw.httpVersion === '1.1' && !req.headers.host) {
    throw new AppError('invalid_request', 'host_required', 'HTTP/1.1 requests must carry a Host header naming this server.');
  }
}

/**
 * Normalising what frameworks hand us: headers in their various shapes and the raw body.
 * Runtime-agnostic (no Node built-ins), so the `fetch` entry can use it on edge runtimes.
 */

/** The raw request body, byte for byte as received. A parsed object is refused (spec 5.1.4). */
export type RawBody = string | Uint8Array | ArrayBuffer;

/**
 * Request headers: a WHATWG `Headers` (fetch, Hono, Next.js), Node's `IncomingHttpHeaders`
 * (node:http, Express, Fastify) or any plain object. Names are matched case-insensitively.
 */
export type HeadersInput = { get(name: string): string | null | undefined } | Record<string, string | readonly string[] | undefined>;

export type HeaderValue = { kind: 'absent' } | { kind: 'value'; value: string } | { kind: 'multiple' };

/** Reads one header. Several values (a repeated header) are reported as `multiple`. */
export function readHeader(headers: HeadersInput, name: string): HeaderValue {
  let raw: unknown;
  if (typeof (headers as { get?: unknown }).get === 'function' && !isPlainRecord(headers)) {
    raw = (headers as { get(name: string): string | null | undefined }).get(name);
  } else {
    const record = headers as Record<string, unknown>;
    const lower = name.toLowerCase();
    raw = record[lower];
    if (raw === undefined) {
      for (const key of Object.keys(record)) {
        if (key.toLowerCase() === lower) {
          raw = record[key];
          break;
        }
      }
    }
  }
  if (Array.isArray(raw)) {
    if (raw.length === 0) return { kind: 'absent' };
    if (raw.length > 1) return { kind: 'multiple' };
    raw = raw[0];
  }
  if (typeof raw !== 'string' || raw === '') return { kind: 'absent' };
  return { kind: 'value', value: raw };
}

function isPlainRecord(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

const encoder = new TextEncoder();

/**
 * The raw body as bytes. Throws a TypeError (a programming error, not a bad delivery) when the body
 * was already parsed: the signature covers the exact bytes, which a parsed object no longer has.
 */
export function rawBodyBytes(body: unknown): Uint8Array {
  if (typeof body === 'string') return encoder.encode(body);
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  throw new TypeError(
    body === undefined || body === null
      ? 'payhooks: no request body. Pass the raw body (Buffer, Uint8Array, ArrayBuffer or string) exactly as received.'
      : 'payhooks: the request body was already parsed (got ' +
          (Array.isArray(body) ? 'an array' : typeof body) +
          '). The signature covers the raw bytes (spec 5.1.4): pass the raw body (Buffer, Uint8Array, ArrayBuffer or ' +
          'string), e.g. register the webhook route before app.use(express.json()).',
  );
}

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { computeSignature, isEventType, parseSignatureHeader, signaturesEqual } from '@payhooks/contract';

/**
 * Hand-written receivers, each correct but for one deliberate fault, for testing
 * `payhooks check-receiver`. `null` is the correct one.
 */
export type Fault =
  | null
  /** Verifies JSON.stringify(JSON.parse(body)) instead of the raw bytes. */
  | 'reparses_body'
  /** Never checks the timestamp. */
  | 'no_timestamp_check'
  /** Checks only that t is not too old (now - t > 300), not |now - t|. */
  | 'past_only_tolerance'
  /** Compares only the first v1 value of the header. */
  | 'first_v1_only'
  /** Answers 400 to event types outside the catalog. */
  | 'rejects_unknown_type'
  /** Answers 409 to an event id already seen. */
  | 'conflict_on_duplicate'
  /** Answers 401 instead of 400 to every failed verification. */
  | 'answers_401'
  /** Crashes (500) on a malformed signature header. */
  | 'crashes_on_malformed_header';

export async function startBrokenReceiver(secret: string, fault: Fault, delayMs = 0): Promise<{ url: string; close(): Promise<void> }> {
  const seen = new Set<string>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const reply = (status: number, body: string) =>
        setTimeout(() => res.writeHead(status, { 'content-type': 'text/plain' }).end(body), delayMs);
      const refuse = (why: string) => reply(fault === 'answers_401' ? 401 : 400, why);
      const raw = Buffer.concat(chunks).toString('utf8');
      const header = req.headers['service-signature'];
      if (typeof header !== 'string') return refuse('missing header');
      let parsed = parseSignatureHeader(header);
      if (!parsed) {
        if (fault === 'crashes_on_malformed_header') return reply(500, 'TypeError: cannot read properties of undefined');
        return refuse('malformed header');
      }
      if (fault === 'first_v1_only') parsed = { ...parsed, signatures: parsed.signatures.slice(0, 1) };
      const signedBytes = fault === 'reparses_body' ? JSON.stringify(JSON.parse(raw)) : raw;
      const expected = computeSignature(secret, parsed.timestamp, signedBytes);
      if (!parsed.signatures.some((s) => signaturesEqual(expected, s))) return refuse('bad signature');
      const age = Date.now() / 1000 - parsed.timestamp;
      if (fault === 'past_only_tolerance' ? age > 300 : fault !== 'no_timestamp_check' && Math.abs(age) > 300) return refuse('stale');
      const event = JSON.parse(raw) as { id: string; type: string };
      if (fault === 'rejects_unknown_type' && !isEventType(event.type)) return reply(400, 'unknown type');
      if (seen.has(event.id)) return reply(fault === 'conflict_on_duplicate' ? 409 : 200, 'duplicate');
      seen.add(event.id);
      reply(200, 'ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/webhooks`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

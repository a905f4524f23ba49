import { randomBytes } from 'node:crypto';
import { request, type Dispatcher } from 'undici';
import {
  ACK_DEADLINE_MS,
  API_VERSION,
  EVENT_ID_HEADER,
  SIGNATURE_HEADER,
  SIGNATURE_TOLERANCE_SECONDS,
  computeSignature,
  formatEventTimestamp,
  formatSignatureHeader,
  signPayload,
  type WebhookEvent,
} from '@payhooks/contract';

/**
 * `payhooks check-receiver`: a conformance battery for a merchant's receiver. It sends signed and
 * mis-signed deliveries, exactly as payhooks builds them (the contract's signing code), and reports
 * each duty the receiver has (spec 4.2, 5.1, 6.1 rule 1, 6.2) as held or not, with how to fix it.
 *
 * The deliveries are sandbox `payment.succeeded` events for made-up payments (`pay_check_…`, with
 * `metadata.payhooks_check = true`): point it at a development receiver, never at production.
 */
export interface CheckOptions {
  url: string;
  secret: string;
  /** Acknowledgement deadline (spec 8: 10 s). Lower only in tests. */
  deadlineMs?: number;
  /** Above this, an acknowledgement is slow (a warning, not a failure). Default 2 s. */
  slowMs?: number;
  now?: () => number;
  /**
   * How the deliveries are POSTed: through the delivery engine's HTTP transport when the CLI is
   * given an egress proxy (HttpDestination.post); undici's own request otherwise.
   */
  transport?: {
    request(url: string, headers: Record<string, string>, body: string, signal: AbortSignal): Promise<Dispatcher.ResponseData>;
  };
  /** The `Authorization` header an endpoint with `authentication` sends (Basic), on every check. */
  authorization?: string | undefined;
}

export interface DutyResult {
  id: string;
  title: string;
  /** The spec sections the duty comes from. */
  spec: string;
  ok: boolean;
  /** A duty that holds but deserves attention (a slow acknowledgement). */
  warning: string | null;
  /** What the receiver did. */
  observed: string;
  /** How to fix it; null when the duty holds. */
  fix: string | null;
}

export interface CheckReport {
  url: string;
  ok: boolean;
  /**
   * Set when nothing answered at the URL (connection refused, DNS, TLS): the duties were not
   * checked, since every one would fail for the same reason. Says what happened.
   */
  unreachable?: string;
  duties: DutyResult[];
}

interface Sent {
  status: number | null;
  durationMs: number;
  error: string | null;
  /** The socket-level error code (ECONNREFUSED, ENOTFOUND, a TLS code) when there was no answer. */
  code?: string | undefined;
}

/** Why nothing answered, in words, for a connection-level failure; null for anything else. */
export function unreachableReason(code: string | undefined): string | null {
  if (!code) return null;
  if (code === 'ECONNREFUSED') return 'connection refused: nothing listens at that address and port';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME') return 'DNS lookup failed: the host name does not resolve';
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return 'no route to the host';
  if (code === 'ECONNRESET') return 'the connection was reset before any answer';
  if (/^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|ERR_OSSL)/.test(code) || code === 'EPROTO')
    return 'TLS handshake failed: is it an https URL for a plain-http server, or is its certificate untrusted?';
  return null;
}

interface Delivery {
  body: string;
  headers: Record<string, string>;
}

const TOLERANCE_PROBE_S = SIGNATURE_TOLERANCE_SECONDS + 10; // clearly outside, whatever the clock skew

function newEvent(type = 'payment.succeeded', now = Date.now()): WebhookEvent {
  const suffix = randomBytes(12).toString('hex');
  return {
    id: `evt_check_${suffix}`,
    object: 'event',
    type,
    api_version: API_VERSION,
    environment: 'sandbox',
    merchant_id: 'mch_check',
    created_at: formatEventTimestamp(new Date(now)),
    data: {
      object: {
        id: `pay_check_${suffix}`,
        object: 'payment',
        status: 'succeeded',
        amount: '10.00',
        asset_code: 'USDC.ETH',
        metadata: { payhooks_check: true, note: 'Zoë / 🚀 <check>' },
      },
    },
  };
}

function signed(body: string, eventId: string, signature: string | null): Delivery {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'payhooks-check-receiver',
    [EVENT_ID_HEADER]: eventId,
  };
  if (signature !== null) headers[SIGNATURE_HEADER] = signature;
  return { body, headers };
}

export async function checkReceiver(options: CheckOptions): Promise<CheckReport> {
  const deadlineMs = options.deadlineMs ?? ACK_DEADLINE_MS;
  const slowMs = options.slowMs ?? 2000;
  const nowMs = options.now ?? Date.now;
  const nowS = () => Math.floor(nowMs() / 1000);
  const { secret, url } = options;
  const wrongSecret = `whsec_${randomBytes(32).toString('base64url')}`;

  const send = async (d: Delivery): Promise<Sent> => {
    const started = performance.now();
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), deadlineMs);
    try {
      const headers = options.authorization ? { ...d.headers, authorization: options.authorization } : d.headers;
      const res = options.transport
        ? await options.transport.request(url, headers, d.body, controller.signal)
        : await request(url, {
            method: 'POST',
            headers,
            body: d.body,
            signal: controller.signal,
            maxRedirections: 0,
          } as Parameters<typeof request>[1]);
      await res.body.dump().catch(() => {});
      return { status: res.statusCode, durationMs: Math.round(performance.now() - started), error: null };
    } catch (err) {
      const durationMs = Math.round(performance.now() - started);
      if (controller.signal.aborted) return { status: null, durationMs, error: `no answer within ${deadlineMs} ms` };
      const e = err as Error & { code?: string; cause?: Error & { code?: string } };
      const code = e.cause?.code ?? e.code;
      return { status: null, durationMs, error: `${e.cause?.message ?? e.message}${code ? ` (${code})` : ''}`, code };
    } finally {
      clearTimeout(timer);
    }
  };

  const valid = (event = newEvent(undefined, nowMs()), body = JSON.stringify(event)) =>
    signed(body, event.id, signPayload(secret, nowS(), body));
  const is2xx = (s: Sent) => s.status !== null && s.status >= 200 && s.status < 300;
  const describe = (s: Sent) => (s.status !== null ? `answered ${s.status} in ${s.durationMs} ms` : s.error!);

  const duties: DutyResult[] = [];
  const duty = (id: string, title: string, spec: string, ok: boolean, observed: string, fix: string, warning: string | null = null) =>
    duties.push({ id, title, spec, ok, warning: ok ? warning : null, observed, fix: ok ? null : fix });

  /** A delivery that must be acknowledged with any 2xx. */
  const mustAccept = async (id: string, title: string, spec: string, d: Delivery, fix: string) => {
    const r = await send(d);
    duty(id, title, spec, is2xx(r), describe(r), fix);
  };
  /** A delivery that must be refused with 400 (spec 5.1.7, 7). */
  const mustReject = async (id: string, title: string, spec: string, d: Delivery, fix: string) => {
    const r = await send(d);
    const ok = r.status === 400;
    const extra =
      r.status !== null && is2xx(r)
        ? ' (accepted: this delivery would have been processed)'
        : r.status !== null
          ? '; a failed verification is answered 400 exactly'
          : '';
    duty(id, title, spec, ok, describe(r) + (ok ? '' : extra), fix);
  };

  // 1. A valid event is acknowledged within the deadline; how fast. When nothing answers at all,
  // stop: the other duties would all fail for that one reason.
  {
    const r = await send(valid());
    const reason = r.status === null ? unreachableReason(r.code) : null;
    if (reason) return { url, ok: false, unreachable: `${reason} (${r.error})`, duties: [] };
    const ok = is2xx(r);
    duty(
      'acknowledges_valid_event',
      'a valid, correctly signed event is acknowledged with a 2xx within 10 s',
      '4.2, 8',
      ok,
      describe(r),
      r.status === 400
        ? "A correctly signed delivery was refused: check that the receiver uses this endpoint's whsec_ secret whole (prefix included) as the HMAC key, over the raw body bytes."
        : r.status === null
          ? 'Answer within 10 s: acknowledge first (any 2xx) and do the work afterwards, from a queue.'
          : 'Answer any 2xx to a delivery you accepted; other statuses are failures and are retried.',
      ok && r.durationMs > slowMs
        ? `acknowledged after ${r.durationMs} ms: answer first and queue the work (spec 6.2.2), the deadline is 10 s`
        : null,
    );
  }
  // 2. Bytes that JSON.stringify would not produce: a receiver verifying a re-parsed body fails.
  {
    const event = newEvent(undefined, nowMs());
    const pretty = JSON.stringify(event, null, 2)
      .replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
      .replace(/\//g, '\\/');
    await mustAccept(
      'verifies_raw_bytes',
      'a valid event whose bytes are not what JSON.stringify makes of it (indented, escaped characters) is acknowledged',
      '5.1.3, 5.1.4',
      valid(event, pretty),
      "Compute the HMAC over the request body exactly as received (raw bytes), before any JSON parsing; never over JSON.stringify(JSON.parse(body)) or a framework's parsed body.",
    );
  }
  // 3-8. Deliveries that must be refused with 400.
  {
    const event = newEvent(undefined, nowMs());
    const body = JSON.stringify(event);
    await mustReject(
      'rejects_wrong_signature',
      'a delivery signed with another secret is refused with 400',
      '5.1.3, 5.1.7',
      signed(body, event.id, signPayload(wrongSecret, nowS(), body)),
      'Compare the v1 value with HMAC-SHA256(secret, "<t>.<raw body>") and answer 400 when none matches.',
    );
  }
  {
    const event = newEvent(undefined, nowMs());
    const body = JSON.stringify(event);
    const t = nowS();
    const tampered = body.replace('"amount":"10.00"', '"amount":"99999.00"');
    await mustReject(
      'rejects_tampered_body',
      'a body changed after signing is refused with 400',
      '5.1.4, 5.1.7',
      signed(tampered, event.id, signPayload(secret, t, body)),
      'Verify the signature over the body you received, and answer 400 when it does not match.',
    );
  }
  {
    const event = newEvent(undefined, nowMs());
    const body = JSON.stringify(event);
    await mustReject(
      'rejects_old_timestamp',
      `a correctly signed delivery with t ${TOLERANCE_PROBE_S} s in the past is refused with 400`,
      '5.1.6, 8',
      signed(body, event.id, signPayload(secret, nowS() - TOLERANCE_PROBE_S, body)),
      'After the signature matches, refuse with 400 when |now - t| > 300 s: this blocks replays of captured deliveries.',
    );
  }
  {
    const event = newEvent(undefined, nowMs());
    const body = JSON.stringify(event);
    await mustReject(
      'rejects_future_timestamp',
      `a correctly signed delivery with t ${TOLERANCE_PROBE_S} s in the future is refused with 400`,
      '5.1.6, 8',
      signed(body, event.id, signPayload(secret, nowS() + TOLERANCE_PROBE_S, body)),
      'The tolerance is an absolute difference: refuse t more than 300 s ahead of your clock too (|now - t| > 300).',
    );
  }
  {
    const event = newEvent(undefined, nowMs());
    await mustReject(
      'rejects_missing_header',
      `a delivery without ${SIGNATURE_HEADER} is refused with 400`,
      '4.2, 5.1.7',
      signed(JSON.stringify(event), event.id, null),
      `Refuse with 400 a delivery that has no ${SIGNATURE_HEADER} header: the signature is the only authentication of the route.`,
    );
  }
  {
    const event = newEvent(undefined, nowMs());
    await mustReject(
      'rejects_malformed_header',
      `a delivery whose ${SIGNATURE_HEADER} is malformed is refused with 400`,
      '4.2, 5.1.2, 5.1.7',
      signed(JSON.stringify(event), event.id, 't=soon,v1=not-hex'),
      `Parse ${SIGNATURE_HEADER} as t=<integer seconds>,v1=<hex>[,v1=<hex>…] and answer 400 (not 500) to anything else.`,
    );
  }
  // 9. Unknown types are acknowledged (the catalog grows).
  await mustAccept(
    'acknowledges_unknown_type',
    'a correctly signed event of a type the receiver does not know is acknowledged',
    '6.1 rule 1',
    valid(newEvent('payhooks_check.unknown_type', nowMs())),
    'Acknowledge (2xx) and ignore event types you do not handle: new types are added to the catalog over time, and a non-2xx is retried for days.',
  );
  // 10-11. Duplicates are acknowledged.
  {
    const d = valid();
    const first = await send(d);
    const second = await send({ ...d, headers: { ...d.headers, [SIGNATURE_HEADER]: signPayload(secret, nowS(), d.body) } });
    duty(
      'acknowledges_duplicate_in_sequence',
      'the same event delivered twice, one after the other, is acknowledged both times',
      '6.2.1',
      is2xx(first) && is2xx(second),
      `first ${describe(first)}, second ${describe(second)}`,
      'Deduplicate on the evt_ id (insert-or-ignore) and answer 2xx to an id already seen: deliveries are at-least-once.',
    );
  }
  {
    const d = valid();
    const [a, b] = await Promise.all([send(d), send(d)]);
    duty(
      'acknowledges_duplicate_concurrently',
      'the same event delivered twice at the same time is acknowledged both times',
      '6.2.1',
      is2xx(a!) && is2xx(b!),
      `${describe(a!)}, ${describe(b!)}`,
      'Record the evt_ id atomically (a unique key with ON CONFLICT DO NOTHING, SET NX) and answer 2xx to the copy that finds it taken, even while the first is being processed.',
    );
  }
  // 12-13. Several v1 values (secret rotation): one right, in either position.
  for (const [position, id] of [
    ['first', 'accepts_second_v1_wrong'],
    ['second', 'accepts_first_v1_wrong'],
  ] as const) {
    const event = newEvent(undefined, nowMs());
    const body = JSON.stringify(event);
    const t = nowS();
    const right = computeSignature(secret, t, body);
    const wrong = computeSignature(wrongSecret, t, body);
    const header = formatSignatureHeader(t, position === 'first' ? [right, wrong] : [wrong, right]);
    await mustAccept(
      id,
      `a header with two v1 values, the right one ${position}, is accepted`,
      '5.1.3, 5.1.6',
      signed(body, event.id, header),
      'Accept the delivery when any v1 value in the header matches: during a secret rotation payhooks signs with both secrets.',
    );
  }
  return { url, ok: duties.every((d) => d.ok), duties };
}

/** The human-readable report: one line per duty, a fix under each failure, a summary. */
export function formatReport(report: CheckReport): string {
  if (report.unreachable) return `Nothing answers at ${report.url}: ${report.unreachable}. Start your receiver, or check the URL.`;
  const lines = [`Checking ${report.url}`];
  for (const d of report.duties) {
    lines.push(`${d.ok ? (d.warning ? 'WARN' : 'PASS') : 'FAIL'}  ${d.title} (spec ${d.spec}): ${d.observed}`);
    if (d.warning) lines.push(`      ${d.warning}`);
    if (d.fix) lines.push(`      fix: ${d.fix}`);
  }
  const failed = report.duties.filter((d) => !d.ok).length;
  lines.push(failed === 0 ? `All ${report.duties.length} duties hold.` : `${failed} of ${report.duties.length} duties fail.`);
  return lines.join('\n');
}

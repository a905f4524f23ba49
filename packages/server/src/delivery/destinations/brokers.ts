import { EVENT_ID_HEADER, SIGNATURE_HEADER } from '@payhooks/contract';
import { BrokerUrlError, parseBrokerUrl, type BrokerKind } from '../../endpoint-urls/broker-url.ts';
import type { DeadlineQueue, Deadline } from '../deadlines.ts';
import type { Resolver } from '../safe-lookup.ts';
import {
  addEndpointHeaders,
  classify,
  failed,
  noteEndpointHeaders,
  signAttempt,
  signStandardAttempt,
  type AttemptResult,
  type Destination,
  type SendRequest,
} from './attempt.ts';
import { BrokerRefusal, type BrokerDestination, type DialOptions } from './broker.ts';

/** Broker connections idle this long are closed (the next attempt dials again). */
export const BROKER_IDLE_MS = 60_000;

export interface BrokersOptions {
  timeoutMs: number;
  allowPrivate: boolean;
  resolver?: Resolver | undefined;
  /** A broker connection unused this long is closed. */
  idleMs?: number | undefined;
  /** The attempt deadline queue HTTP attempts use too (one timer for all attempts). */
  deadlines: DeadlineQueue;
}

/**
 * Every broker URL (amqp(s)://, nats://, tls://): the same bytes and signature as an HTTP POST,
 * the two headers as message headers (and, when the endpoint asks, the Standard Webhooks headers
 * and its own headers, as message headers too). Success is the broker's confirmation within the attempt's
 * deadline; anything else fails the attempt, with the broker's words in the log.
 */
export class BrokerDestinations implements Destination {
  /** Loaded on the first broker URL: an HTTP-only deployment never loads a broker client. */
  private kinds: Promise<Record<BrokerKind, BrokerDestination>> | null = null;

  constructor(private readonly options: BrokersOptions) {}

  async send(req: SendRequest, startedAt: Date, t0: number): Promise<AttemptResult> {
    const elapsed = () => Math.round(performance.now() - t0);
    let target: ReturnType<typeof parseBrokerUrl>;
    try {
      target = parseBrokerUrl(new URL(req.url));
    } catch (err) {
      const why = err instanceof BrokerUrlError ? err.message : 'it does not parse as a URL';
      return failed(startedAt, elapsed(), 'invalid_url', `The endpoint URL is not valid: ${why}`);
    }
    const bytes = Buffer.from(req.body, 'utf8');
    const signature = signAttempt(req, startedAt, bytes);
    const webhookSignature = signStandardAttempt(req, startedAt, bytes);
    const headers: Record<string, string> = { [EVENT_ID_HEADER]: req.eventId, [SIGNATURE_HEADER]: signature };
    if (req.traceparent) headers.traceparent = req.traceparent;
    addEndpointHeaders(headers, req, startedAt, webhookSignature);
    let broker: BrokerDestination;
    try {
      broker = (await this.load())[target.kind];
    } catch (err) {
      this.kinds = null;
      return failed(startedAt, elapsed(), 'network', `The ${target.kind} client could not be loaded: ${(err as Error).message}`);
    }
    let timeUp: Deadline | undefined;
    const deadline = new Promise<AttemptResult>((resolve) => {
      timeUp = this.options.deadlines.add(() =>
        resolve(
          failed(startedAt, elapsed(), 'timeout', `The broker did not confirm within ${this.options.timeoutMs} ms (spec 8: within 10 s).`),
        ),
      );
    });
    const tls = { trustedCas: req.trustedCas, clientCertificate: req.clientCertificate };
    const attempt = broker.publish(target, req.credentials ?? null, { body: bytes, headers, eventId: req.eventId }, tls).then(
      (detail): AttemptResult => ({
        succeeded: true,
        startedAt,
        durationMs: elapsed(),
        statusCode: null,
        responseBody: detail,
        errorKind: null,
        errorMessage: null,
      }),
      (err: unknown) =>
        err instanceof BrokerRefusal
          ? failed(startedAt, elapsed(), err.kind, err.message)
          : classify(err, (kind, message) => failed(startedAt, elapsed(), kind, message)),
    );
    const result = await Promise.race([attempt, deadline]);
    timeUp?.cancel();
    result.requestSignature = signature;
    result.broker = target.kind;
    if (req.traceparent) result.traceparent = req.traceparent;
    noteEndpointHeaders(result, req, webhookSignature);
    return result;
  }

  /** Connections open now, by kind (none before the first broker attempt). */
  async openConnections(): Promise<Record<string, number>> {
    if (!this.kinds) return {};
    const kinds = await this.kinds;
    return Object.fromEntries(Object.entries(kinds).map(([kind, b]) => [kind, b.openConnections]));
  }

  async close(): Promise<void> {
    if (this.kinds) await Promise.all(Object.values(await this.kinds).map((b) => b.close()));
  }

  private load(): Promise<Record<BrokerKind, BrokerDestination>> {
    const options: DialOptions = {
      allowPrivate: this.options.allowPrivate,
      resolver: this.options.resolver,
      connectTimeoutMs: this.options.timeoutMs,
      idleMs: this.options.idleMs ?? BROKER_IDLE_MS,
    };
    this.kinds ??= Promise.all([import('./amqp.ts'), import('./nats.ts')]).then(([{ AmqpDestination }, { NatsDestination }]) => ({
      amqp: new AmqpDestination(options),
      nats: new NatsDestination(options),
    }));
    return this.kinds;
  }
}

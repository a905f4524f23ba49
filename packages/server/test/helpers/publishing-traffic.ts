import { expect } from 'vitest';
import { payment } from './publish.ts';

/**
 * Publishers as a payment core runs them: each event under its own idempotency key, through
 * `POST /internal/v1/events` of one of the API processes, retried with the same key after a 503
 * (which must carry Retry-After) or a dropped connection until it gets its 201. For the failover
 * tests: what got a 201 must be delivered, whatever happened to the database meanwhile.
 */
export interface PublishingTraffic {
  /** Event id -> idempotency key and the time of its 201. */
  acknowledged: Map<string, { key: string; at: number }>;
  /** Answers by status code (or error name). */
  statuses: Map<number | string, number>;
  /** Publishes that got a 503 or lost their connection first, then a 201 under the same key. */
  retriedThroughFailure(): number;
  /** The first 201 received after `since` (ms since the epoch), or undefined. */
  firstAckAfter(since: number): number | undefined;
  /** Stops once `total` events are acknowledged; resolves when every publisher has stopped. */
  stopAt(total: number): Promise<void>;
}

export function startPublishing(options: { apis: string[]; token: string; merchantId: string; publishers: number }): PublishingTraffic {
  const acknowledged = new Map<string, { key: string; at: number }>();
  const statuses = new Map<number | string, number>();
  let retried = 0;
  let next = 0;
  let limit = Number.POSITIVE_INFINITY;
  const publisher = async (n: number) => {
    const api = options.apis[n % options.apis.length]!;
    while (acknowledged.size < limit) {
      const key = `traffic-${next++}`;
      let failedFirst = false;
      for (;;) {
        let status: number | string;
        let body: { id?: string } = {};
        try {
          const res = await fetch(`${api}/internal/v1/events`, {
            method: 'POST',
            headers: { authorization: `Bearer ${options.token}`, 'content-type': 'application/json' },
            body: JSON.stringify({
              type: 'payment.succeeded',
              merchant_id: options.merchantId,
              environment: 'sandbox',
              idempotency_key: key,
              data: { object: payment({ id: `pay_${key.replace('-', '')}` }) },
            }),
            signal: AbortSignal.timeout(30_000),
          });
          status = res.status;
          body = (await res.json()) as { id?: string };
          if (status === 503) expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
        } catch (err) {
          status = (err as Error).name;
        }
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        if (status === 201) {
          if (failedFirst) retried++;
          acknowledged.set(body.id!, { key, at: Date.now() });
          // Paced, so the traffic leaves the machine's cores to the tests running beside it.
          await new Promise((r) => setTimeout(r, 10));
          break;
        }
        // Only "the database is away" is expected; anything else is a bug.
        expect(status === 503 || typeof status === 'string', `publish answered ${status}: ${JSON.stringify(body)}`).toBe(true);
        failedFirst = true;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };
  const running = Promise.all(Array.from({ length: options.publishers }, (_, n) => publisher(n)));
  return {
    acknowledged,
    statuses,
    retriedThroughFailure: () => retried,
    firstAckAfter(since) {
      let first: number | undefined;
      for (const { at } of acknowledged.values()) if (at > since && (first === undefined || at < first)) first = at;
      return first;
    },
    async stopAt(total) {
      limit = total;
      await running;
    },
  };
}

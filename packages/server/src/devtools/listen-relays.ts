import type { Logger } from 'pino';
import { runAlone, statement } from '../db/statement.ts';
import type { Database } from '../db/client.ts';
import type { Scope } from '../scope.ts';
import type { ForwardRequest, ForwardResult } from './listen-sessions.ts';

/** A relay row's id and its session's: `<endpoint id> <forward id>`. Holders LISTEN here. */
const RELAY_CHANNEL = 'payhooks_listen';
/** A relay's forward id, once its result is in the row. The process waiting to answer LISTENs here. */
const DONE_CHANNEL = 'payhooks_listen_done';
/** Relay rows older than this lost the process that waited on them; the sweep removes them. */
const KEPT_MS = 120_000;

const INSERT = statement<
  {
    id: string;
    endpoint_id: string;
    platform_id: string;
    environment: string;
    event_id: string;
    event_type: string;
    signature: string;
    body: string;
    created_at: Date;
    notify: boolean;
  },
  never
>(
  'listen_relay_insert',
  `WITH r AS (
  INSERT INTO listen_relays (id, endpoint_id, platform_id, environment, event_id, event_type, signature, body, created_at)
  VALUES (:id, :endpoint_id, :platform_id, :environment, :event_id, :event_type, :signature, :body, :created_at)
  RETURNING id, endpoint_id
)
SELECT pg_notify('${RELAY_CHANNEL}', r.endpoint_id || ' ' || r.id) FROM r WHERE :notify::boolean`,
);

const RESULT = statement<{ id: string; endpoint_id: string; platform_id: string; environment: string; result: string }, unknown>(
  'listen_relay_result',
  `WITH u AS (
  UPDATE listen_relays SET result = :result
  WHERE id = :id AND endpoint_id = :endpoint_id AND platform_id = :platform_id AND environment = :environment AND result IS NULL
  RETURNING id
)
SELECT pg_notify('${DONE_CHANNEL}', u.id) FROM u`,
);

const END = statement<{ endpoint_id: string; result: string }, never>(
  'listen_relay_end',
  `WITH u AS (UPDATE listen_relays SET result = :result WHERE endpoint_id = :endpoint_id AND result IS NULL RETURNING id)
SELECT pg_notify('${DONE_CHANNEL}', u.id) FROM u`,
);

const LOOKUP = statement<
  { endpoint_id: string; lease_cutoff: Date },
  { secret_ciphertext: string; platform_id: string; environment: string }
>(
  'listen_session_lookup',
  `SELECT secret_ciphertext, platform_id, environment FROM webhook_endpoints
   WHERE id = :endpoint_id AND listen_session AND deleted_at IS NULL AND updated_at > :lease_cutoff`,
);
const DELETE_RELAY = statement<{ id: string }, never>('listen_relay_delete', 'DELETE FROM listen_relays WHERE id = :id');
const SWEEP = statement<{ before: Date }, never>('listen_relay_sweep', 'DELETE FROM listen_relays WHERE created_at < :before');
const RELAY_COLUMNS = 'id, endpoint_id, event_id, event_type, signature, body';
const RESCAN = statement<{ endpoint_ids: string[] }, RelayRow>(
  'listen_relay_rescan',
  `SELECT ${RELAY_COLUMNS} FROM listen_relays WHERE endpoint_id = ANY(:endpoint_ids) AND result IS NULL`,
);
const READ = statement<{ id: string }, RelayRow>(
  'listen_relay_read',
  `SELECT ${RELAY_COLUMNS} FROM listen_relays WHERE id = :id AND result IS NULL`,
);
const DONE = statement<{ ids: string[] }, { id: string; result: ForwardResult | string }>(
  'listen_relay_done',
  'SELECT id, result FROM listen_relays WHERE id = ANY(:ids) AND result IS NOT NULL',
);

interface RelayRow {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  signature: string;
  body: string;
}

interface Waiter {
  endpointId: string;
  platformId: string;
  environment: string;
  finish(result: ForwardResult): void;
}

/** A hand-over that got no answer from the local receiver, with the reason. */
export const noResult = (error: string, durationMs = 0): ForwardResult => ({ status_code: null, body: '', duration_ms: durationMs, error });

/**
 * The `payhooks listen` hand-over between API processes, through PostgreSQL. The process that
 * gets the worker's request stores it in `listen_relays` and NOTIFYs `payhooks_listen` with the
 * row's id (a NOTIFY carries 8000 bytes at most; a delivery's body may be 64 KiB); the process
 * holding the session's stream reads the row and pushes it to the CLI. The CLI posts its result
 * to any process, which writes it into the row and NOTIFYs `payhooks_listen_done`; the waiting
 * process reads it and answers the worker. When the receiving process holds the stream itself,
 * it pushes at once (the row is still written, for the result's way back). A lost LISTEN
 * connection is made up for when it returns: holders look for rows they have not pushed, waiters
 * for results they missed.
 */
export class SharedRelays {
  private readonly waiting = new Map<string, Waiter>();
  /** Forward ids this process handed to a CLI, so a re-scan after a reconnect never pushes one twice. */
  private readonly pushed = new Set<string>();
  private readonly unlisten: Array<() => Promise<void>> = [];

  constructor(
    private readonly database: Database,
    private readonly logger: Logger,
    /** Pushes to the CLI of a session this process holds; false when it holds none by that id. */
    private readonly push: (endpointId: string, request: ForwardRequest) => boolean,
    /** The sessions this process holds. */
    private readonly held: () => string[],
    private readonly waitMs: number,
  ) {}

  async start(): Promise<void> {
    this.unlisten.push(await this.database.listen(RELAY_CHANNEL, (payload) => void this.onRelay(payload)));
    this.unlisten.push(await this.database.listen(DONE_CHANNEL, (payload) => void this.onDone(payload)));
  }

  async stop(): Promise<void> {
    for (const waiter of this.waiting.values()) waiter.finish(noResult('the server is shutting down'));
    await Promise.all(this.unlisten.splice(0).map((u) => u()));
  }

  /** The stored session a relay may go to: a live listen-kind endpoint whose lease is newer than `leaseCutoff`. */
  async session(
    endpointId: string,
    leaseCutoff: Date,
  ): Promise<{ secret_ciphertext: string; platform_id: string; environment: string } | undefined> {
    const [row] = await runAlone(this.database, LOOKUP, { endpoint_id: endpointId, lease_cutoff: leaseCutoff });
    return row;
  }

  forward(options: {
    forwardId: string;
    endpointId: string;
    platformId: string;
    environment: string;
    request: Omit<ForwardRequest, 'forward_id'>;
    /** The session's push when this process holds it. */
    local: ((request: ForwardRequest) => void) | null;
  }): Promise<ForwardResult> {
    const { forwardId, request } = options;
    const done = new Promise<ForwardResult>((resolve) => {
      const timer = setTimeout(
        () => finish(noResult(`the payhooks listen CLI sent no result within ${this.waitMs} ms`, this.waitMs)),
        this.waitMs,
      );
      const finish = (result: ForwardResult) => {
        clearTimeout(timer);
        this.waiting.delete(forwardId);
        resolve(result);
      };
      this.waiting.set(forwardId, {
        endpointId: options.endpointId,
        platformId: options.platformId,
        environment: options.environment,
        finish,
      });
    });
    const stored = runAlone(this.database, INSERT, {
      id: forwardId,
      endpoint_id: options.endpointId,
      platform_id: options.platformId,
      environment: options.environment,
      event_id: request.event_id,
      event_type: request.event_type,
      signature: request.signature,
      body: request.body,
      created_at: new Date(),
      notify: options.local === null,
    }).then(
      () => {
        if (!options.local) return;
        this.pushed.add(forwardId);
        options.local({ forward_id: forwardId, ...request });
      },
      (err: unknown) => {
        this.logger.warn({ err }, 'a listen relay could not be handed over');
        this.waiting.get(forwardId)?.finish(noResult('the hand-over to the listen session failed (database unavailable)'));
      },
    );
    return stored
      .then(() => done)
      .finally(() => {
        this.pushed.delete(forwardId);
        void runAlone(this.database, DELETE_RELAY, { id: forwardId }).catch(() => {});
      });
  }

  /** The CLI's result, posted to this process: to the waiter if it is here, else through the row. */
  async complete(endpointId: string, scope: Scope, forwardId: string, result: ForwardResult): Promise<boolean> {
    const here = this.waiting.get(forwardId);
    if (here) {
      if (here.endpointId !== endpointId || here.platformId !== scope.platformId || here.environment !== scope.environment) return false;
      here.finish(result);
      return true;
    }
    const rows = await runAlone(this.database, RESULT, {
      id: forwardId,
      endpoint_id: endpointId,
      platform_id: scope.platformId,
      environment: scope.environment,
      result: JSON.stringify(result),
    });
    return rows.length > 0;
  }

  /** A session ended: relays waiting on it, in any process, are answered with `result`. */
  async endSession(endpointId: string, result: ForwardResult): Promise<void> {
    await runAlone(this.database, END, { endpoint_id: endpointId, result: JSON.stringify(result) }).catch(() => {});
  }

  async sweep(now: Date): Promise<void> {
    await runAlone(this.database, SWEEP, { before: new Date(now.getTime() - KEPT_MS) });
  }

  /** A relay for some session; pushed if this process holds it. '' (after a reconnect): every relay of the held sessions. */
  private async onRelay(payload: string): Promise<void> {
    try {
      let rows: RelayRow[];
      if (payload === '') {
        const held = this.held();
        if (held.length === 0) return;
        rows = await runAlone(this.database, RESCAN, { endpoint_ids: held });
      } else {
        const [endpointId, forwardId] = payload.split(' ');
        if (!endpointId || !forwardId || !this.held().includes(endpointId)) return;
        rows = await runAlone(this.database, READ, { id: forwardId });
      }
      for (const r of rows) {
        if (this.pushed.has(r.id)) continue;
        const request: ForwardRequest = {
          forward_id: r.id,
          event_id: r.event_id,
          event_type: r.event_type,
          signature: r.signature,
          body: r.body,
        };
        if (this.push(r.endpoint_id, request)) this.pushed.add(r.id);
      }
    } catch (err) {
      this.logger.warn({ err }, 'reading a listen relay failed; the worker will retry the delivery');
    }
  }

  /** A result is in; '' (after a reconnect): look for every result this process waits for. */
  private async onDone(payload: string): Promise<void> {
    const ids = payload === '' ? [...this.waiting.keys()] : this.waiting.has(payload) ? [payload] : [];
    if (ids.length === 0) return;
    try {
      const rows = await runAlone(this.database, DONE, { ids });
      for (const r of rows) {
        const result = typeof r.result === 'string' ? (JSON.parse(r.result) as ForwardResult) : r.result;
        this.waiting.get(r.id)?.finish(result);
      }
    } catch (err) {
      this.logger.warn({ err }, 'reading a listen result failed; the relay answers when its wait ends');
    }
  }
}

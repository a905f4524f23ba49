import { randomBytes } from 'node:crypto';
import { and, eq, isNull, lt } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { Database, Db } from '../db/client.ts';
import { webhookEndpoints } from '../db/schema.ts';
import { newId, newSigningSecret } from '../ids.ts';
import type { SecretBox } from '../security/encryption.ts';
import type { Scope } from '../scope.ts';
import type { Clock } from '../clock.ts';
import type { AuditTrail } from '../audit/trail.ts';
import { cancelEndpointDeliveries } from '../delivery/parking.ts';
import { SharedRelays, noResult } from './listen-relays.ts';

/**
 * `payhooks listen` sessions (docs/decisions/developer-tools.md). A session is a sandbox
 * webhook endpoint of the listen kind (`listen_session`, a column no API writes), URL
 * `<public url>/listen/<endpoint id>` (this service's own relay), subscribed to the CLI's
 * `--events`. The delivery engine treats it like any other endpoint: it claims, signs and POSTs
 * each delivery to the relay, and records the attempt. The relay hands the request to the CLI
 * over the session's event stream and answers the worker with what the developer's local
 * receiver answered (status and body), so the attempt in the log is the local receiver's.
 *
 * The session lives while the CLI's stream is open: closing it (Ctrl-C, a killed CLI, a dropped
 * connection) deletes the endpoint. The stream's process renews a lease (`updated_at`) every
 * {@link HEARTBEAT_MS}; sessions whose lease is older than {@link LEASE_MS} (their process died)
 * are deleted by any API process's sweep.
 *
 * With several API processes (PostgreSQL), the worker's request and the CLI's result may each
 * reach any of them: the hand-over goes through the database (listen-relays.ts). On the embedded
 * database there is one process, and it stays in memory.
 */
/**
 * The marker the previous release recognised sessions by. Still written, for one release, so that
 * processes of that release sweep the sessions this one opens during a rolling upgrade; never
 * read (a merchant can set it on any endpoint).
 */
export const LISTEN_METADATA_KEY = 'payhooks_listen_session';
export const HEARTBEAT_MS = 15_000;
export const LEASE_MS = 60_000;
/** How long the relay waits for the CLI's result: under the worker's deadline. */
export const RELAY_WAIT_MS = 9_500;

export interface ForwardRequest {
  /** Id of this hand-over, echoed back with the result. */
  forward_id: string;
  event_id: string;
  event_type: string;
  /** The `Service-Signature` header the worker made, passed through unchanged. */
  signature: string;
  /** The exact bytes the worker sent (UTF-8). */
  body: string;
}

export interface ForwardResult {
  /** The local receiver's status, or null when it could not be reached. */
  status_code: number | null;
  body: string;
  duration_ms: number;
  error: string | null;
}

interface LiveSession {
  scope: Scope;
  secret: string;
  push(request: ForwardRequest): void;
  waiting: Map<string, (result: ForwardResult) => void>;
}

/** A session the relay may hand a delivery to: held here, or (PostgreSQL) by another process. */
export interface RelayTarget {
  secret: string;
  platformId: string;
  environment: string;
}

/** The sessions whose stream this process holds, by endpoint id. */
export class ListenHub {
  private readonly live = new Map<string, LiveSession>();
  private sweeper: NodeJS.Timeout | null = null;
  private readonly db: Db;
  /** The hand-over between processes, on PostgreSQL only. */
  private readonly shared: SharedRelays | null;

  constructor(
    database: Database,
    private readonly secrets: SecretBox,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly audit: AuditTrail,
  ) {
    this.db = database.db;
    this.shared =
      database.kind === 'postgres'
        ? new SharedRelays(
            database,
            logger,
            (endpointId, request) => {
              const session = this.live.get(endpointId);
              session?.push(request);
              return session !== undefined;
            },
            () => [...this.live.keys()],
            RELAY_WAIT_MS,
          )
        : null;
  }

  /** Sweeps sessions left by dead processes now and every heartbeat; listens for other processes' hand-overs. */
  async start(): Promise<void> {
    await this.shared?.start();
    void this.sweep();
    this.sweeper = setInterval(() => void this.sweep(), HEARTBEAT_MS);
    this.sweeper.unref();
  }

  async stop(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
    await Promise.all([...this.live.entries()].map(([id, s]) => this.end(id, s.scope)));
    await this.shared?.stop();
  }

  /** Creates the session's endpoint; `push` receives the deliveries to forward. */
  async open(
    scope: Scope,
    options: { enabledEvents: string[]; publicUrl: string; push: (r: ForwardRequest) => void },
  ): Promise<{ id: string; secret: string; url: string }> {
    const id = newId('webhookEndpoint');
    const secret = newSigningSecret();
    const now = this.clock.now();
    const url = `${options.publicUrl.replace(/\/+$/, '')}/listen/${id}`;
    await this.db.transaction(async (tx) => {
      await tx.insert(webhookEndpoints).values({
        id,
        platformId: scope.platformId,
        environment: scope.environment,
        url,
        enabledEvents: options.enabledEvents,
        description: 'payhooks listen session (exists while the CLI is connected)',
        metadata: { [LISTEN_METADATA_KEY]: 'true' },
        listenSession: true,
        status: 'enabled',
        secretCiphertext: this.secrets.encrypt(secret, id),
        createdAt: now,
        updatedAt: now,
      });
      await this.audit.record(tx, scope, {
        action: 'listen_session.open',
        resourceType: 'webhook_endpoint',
        resourceId: id,
        changes: { enabled_events: options.enabledEvents },
      });
    });
    this.live.set(id, { scope, secret, push: options.push, waiting: new Map() });
    return { id, secret, url };
  }

  /** Renews the session's lease. */
  async heartbeat(id: string): Promise<void> {
    await this.db
      .update(webhookEndpoints)
      .set({ updatedAt: this.clock.now() })
      .where(and(eq(webhookEndpoints.id, id), isNull(webhookEndpoints.deletedAt)));
  }

  /**
   * Ends a session: its endpoint is deleted (its log stays readable) and its unfinished deliveries
   * end `cancelled` like any deleted endpoint's; waiting relays answer 503.
   */
  async end(id: string, scope: Scope): Promise<void> {
    const session = this.live.get(id);
    this.live.delete(id);
    for (const resolve of session?.waiting.values() ?? []) resolve(noResult('the listen session ended'));
    await this.shared?.endSession(id, noResult('the listen session ended'));
    await this.db.transaction(async (tx) => {
      const rows = await tx
        .update(webhookEndpoints)
        .set({ deletedAt: this.clock.now(), updatedAt: this.clock.now() })
        .where(and(eq(webhookEndpoints.id, id), eq(webhookEndpoints.platformId, scope.platformId), isNull(webhookEndpoints.deletedAt)))
        .returning({ id: webhookEndpoints.id });
      if (rows.length) await cancelEndpointDeliveries(tx, id, this.clock.now());
    });
  }

  /** Deletes sessions whose lease ran out (the process holding their stream died). */
  async sweep(): Promise<void> {
    try {
      const cutoff = new Date(this.clock.now().getTime() - LEASE_MS);
      await this.db.transaction(async (tx) => {
        const rows = await tx
          .update(webhookEndpoints)
          .set({ deletedAt: this.clock.now() })
          .where(and(eq(webhookEndpoints.listenSession, true), isNull(webhookEndpoints.deletedAt), lt(webhookEndpoints.updatedAt, cutoff)))
          .returning({ id: webhookEndpoints.id });
        for (const r of rows) {
          this.live.delete(r.id);
          await cancelEndpointDeliveries(tx, r.id, this.clock.now());
        }
        if (rows.length) this.logger.info({ sessions: rows.map((r) => r.id) }, 'listen sessions whose lease expired were deleted');
      });
      await this.shared?.sweep(this.clock.now());
    } catch (err) {
      this.logger.warn({ err }, 'sweeping expired listen sessions failed; next try in 15 s');
    }
  }

  /**
   * The session a relay request is for: held by this process, or on PostgreSQL a live session
   * (lease not run out) that another process holds. Undefined: no such session anywhere.
   */
  async target(id: string): Promise<RelayTarget | undefined> {
    const live = this.live.get(id);
    if (live) return { secret: live.secret, platformId: live.scope.platformId, environment: live.scope.environment };
    if (!this.shared) return undefined;
    const row = await this.shared.session(id, new Date(this.clock.now().getTime() - LEASE_MS));
    return row
      ? { secret: this.secrets.decrypt(row.secret_ciphertext, id), platformId: row.platform_id, environment: row.environment }
      : undefined;
  }

  /**
   * Hands a delivery to the CLI and waits for its result (or RELAY_WAIT_MS): in this process
   * when it holds the session, else through the database to the process that does; the result
   * comes back here whichever process the CLI posts it to.
   */
  forward(id: string, target: RelayTarget, request: Omit<ForwardRequest, 'forward_id'>): Promise<ForwardResult> {
    const forwardId = `fwd_${randomBytes(9).toString('base64url')}`;
    const session = this.live.get(id);
    if (this.shared) {
      return this.shared.forward({ forwardId, endpointId: id, ...target, request, local: session ? (r) => session.push(r) : null });
    }
    if (!session) return Promise.resolve(noResult('no listen session'));
    return new Promise<ForwardResult>((resolve) => {
      const timer = setTimeout(() => {
        session.waiting.delete(forwardId);
        resolve(noResult(`the payhooks listen CLI sent no result within ${RELAY_WAIT_MS} ms`, RELAY_WAIT_MS));
      }, RELAY_WAIT_MS);
      session.waiting.set(forwardId, (result) => {
        clearTimeout(timer);
        session.waiting.delete(forwardId);
        resolve(result);
      });
      session.push({ forward_id: forwardId, ...request });
    });
  }

  /** The CLI's result for one hand-over; false when the session or the hand-over is unknown (or another tenant's). */
  async complete(id: string, scope: Scope, forwardId: string, result: ForwardResult): Promise<boolean> {
    if (this.shared) return this.shared.complete(id, scope, forwardId, result);
    const session = this.live.get(id);
    if (!session || session.scope.platformId !== scope.platformId || session.scope.environment !== scope.environment) return false;
    const resolve = session.waiting.get(forwardId);
    if (!resolve) return false;
    resolve(result);
    return true;
  }
}

import { credentialsAad, decodeCredentials } from '../endpoint-urls/broker-url.ts';
import type { SecretBox } from '../security/encryption.ts';
import { AuthorizationHeaders, clientCertificates, CustomHeaderSets, oauthClients } from './custom-headers-cache.ts';
import type { ReceiverAuthType } from '../db/schema.ts';
import type { SendRequest } from './destinations/attempt.ts';
import { SigningKeys, webhookKeysOf } from './signing-keys.ts';

/**
 * What an attempt reads to build its request, automatic (the worker's claim, claim.ts) or manual
 * (a replay or resend, service.ts): one row type, one column list, one builder. A new
 * per-endpoint sending setting is a column in `SENDABLE_COLUMNS`, a field here and a line in
 * `RequestBuilder.build` (docs/architecture.md, "Extending").
 */
export interface SendableRow {
  id: string;
  event_id: string;
  endpoint_id: string;
  /** Attempts logged so far: this one is number `attempt_count + 1`. */
  attempt_count: number;
  /** The event's type, for the attempt log line and span. */
  event_type: string;
  body: string;
  /** The traceparent of the span that published the event (only while tracing), else null. */
  trace_parent: string | null;
  url: string;
  /** A broker URL's sealed `user:password` (endpoint-urls/broker-url.ts), else null. */
  url_credentials_ciphertext: string | null;
  secret_ciphertext: string;
  /** The replaced secret while it still signs (rotation, its expiry checked by the statement), else null. */
  previous_secret_ciphertext: string | null;
  /** The sealed ed25519 private key while asymmetric signing is on, else null. */
  signing_key_ciphertext: string | null;
  /** The rotated-out private key while it still signs (flag on, expiry checked by the statement), else null. */
  previous_signing_key_ciphertext: string | null;
  /** The endpoint asks for the Standard Webhooks headers too (migration 0023). */
  standard_webhooks: boolean;
  /** The endpoint's custom headers as JSON text (`headers::text`: parsed once per text), else null. */
  custom_headers: string | null;
  /** How it authenticates to the receiver (migration 0037), else null; its sealed credentials. */
  authentication_type: ReceiverAuthType | null;
  authentication_ciphertext: string | null;
  /** The replaced client certificate while its overlap lasts (migration 0039; expiry checked by the statement), else null. */
  previous_client_certificate_ciphertext: string | null;
  /** Certificate authorities the endpoint trusts beside the public ones (PEM, migration 0038), else null. */
  tls_ca_certificates: string | null;
}

/**
 * The event and endpoint columns of `SendableRow`, for a statement that names the event `e`, the
 * endpoint `w` and the current time `:now` (db/statement.ts).
 * Secrets whose overlap has ended are left out here, so no caller checks an expiry.
 */
export const SENDABLE_COLUMNS = `e.type AS event_type, e.body, e.trace_parent,
       w.url, w.url_credentials_ciphertext, w.secret_ciphertext,
       CASE WHEN w.previous_secret_expires_at > :now THEN w.previous_secret_ciphertext END AS previous_secret_ciphertext,
       CASE WHEN w.asymmetric_signature THEN w.signing_key_ciphertext END AS signing_key_ciphertext,
       CASE WHEN w.asymmetric_signature AND w.previous_signing_key_expires_at > :now THEN w.previous_signing_key_ciphertext END
         AS previous_signing_key_ciphertext,
       w.standard_webhooks, w.headers::text AS custom_headers, w.authentication_type, w.authentication_ciphertext,
       CASE WHEN w.previous_client_certificate_expires_at > :now THEN w.previous_client_certificate_ciphertext END
         AS previous_client_certificate_ciphertext,
       w.tls_ca_certificates`;

/**
 * Joins a delivery (`alias`, with its event_id, created_at and endpoint_id) to its event `e` and
 * endpoint `w`. The event by its full primary key, in a LATERAL subquery that can't be flattened
 * (LIMIT 1): as a plain join, PostgreSQL could look it up by created_at alone (equal to the
 * delivery's), scanning the week's whole index for every row while the partition was small
 * enough for that to look cheap, and keep that plan as the statement's generic plan.
 */
export const sendableJoins = (alias: string) => `CROSS JOIN LATERAL (
  SELECT ev.type, ev.body, ev.trace_parent FROM events ev WHERE ev.id = ${alias}.event_id AND ev.created_at = ${alias}.created_at LIMIT 1
) e
JOIN webhook_endpoints w ON w.id = ${alias}.endpoint_id`;

/**
 * Builds an attempt's request from its row: secrets decrypted (through a cache, so an attempt
 * doesn't pay an AES-GCM decryption for a secret opened a moment ago), custom headers parsed
 * once per distinct set. One per worker and one per API process.
 */
export class RequestBuilder {
  /** Signing secrets decrypted by earlier attempts (a new ciphertext after a rotation is a miss). */
  readonly keys: SigningKeys;
  /** Endpoints' custom headers, parsed once per distinct set. */
  private readonly headerSets = new CustomHeaderSets();
  /** Receivers' Authorization headers, opened once per sealed credentials. */
  private readonly authorizations: AuthorizationHeaders;
  /** Receivers' client certificates (mutual TLS), opened once per sealed value. */
  private readonly clientCertificates: ReturnType<typeof clientCertificates>;
  /** Receivers' OAuth 2.0 clients, opened once per sealed value. */
  private readonly oauthClients: ReturnType<typeof oauthClients>;

  constructor(secrets: SecretBox) {
    this.keys = new SigningKeys(secrets);
    const decrypt = (box: string, aad: string) => this.keys.decrypt(box, aad);
    this.authorizations = new AuthorizationHeaders(decrypt);
    this.clientCertificates = clientCertificates(decrypt);
    this.oauthClients = oauthClients(decrypt);
  }

  /** The request; throws like `SecretBox.decrypt` when a secret can't be decrypted (a wrong PAYHOOKS_ENCRYPTION_KEY). */
  build(row: SendableRow): SendRequest {
    const { keys } = this;
    const current = keys.open(row.secret_ciphertext, row.endpoint_id);
    const previous = row.previous_secret_ciphertext ? keys.open(row.previous_secret_ciphertext, row.endpoint_id) : null;
    const request: SendRequest = {
      url: row.url,
      body: row.body,
      eventId: row.event_id,
      secrets: previous ? [current.secret, previous.secret] : [current.secret],
      credentials: row.url_credentials_ciphertext
        ? decodeCredentials(keys.decrypt(row.url_credentials_ciphertext, credentialsAad(row.endpoint_id)))
        : null,
      webhookKeys: row.standard_webhooks ? webhookKeysOf(current, previous) : null,
      headers: row.custom_headers === null ? null : this.headerSets.get(row.custom_headers),
    };
    if (row.tls_ca_certificates !== null) request.trustedCas = row.tls_ca_certificates;
    const sealed = row.authentication_ciphertext;
    if (sealed !== null && row.authentication_type === 'mtls') {
      request.clientCertificate = this.clientCertificates.get(sealed, row.endpoint_id);
      const previous = row.previous_client_certificate_ciphertext;
      if (previous !== null) request.previousClientCertificate = this.clientCertificates.get(previous, row.endpoint_id);
    } else if (sealed !== null && row.authentication_type === 'basic')
      request.headers = this.authorizations.with(request.headers ?? null, sealed, row.endpoint_id, 'basic');
    else if (sealed !== null && row.authentication_type === 'oauth2_client_credentials') {
      request.oauth2 = this.oauthClients.get(sealed, row.endpoint_id);
      request.headers = this.authorizations.with(request.headers ?? null, sealed, row.endpoint_id, 'bearer');
    }
    // Only endpoints signing with ed25519 pay for it: the others' rows carry null here.
    if (row.signing_key_ciphertext) {
      const privateKeys = [keys.privateKey(row.signing_key_ciphertext, row.endpoint_id)];
      if (row.previous_signing_key_ciphertext) privateKeys.push(keys.privateKey(row.previous_signing_key_ciphertext, row.endpoint_id));
      request.privateKeys = privateKeys;
    }
    return request;
  }
}

import type { ReceiverAuthType } from '../db/schema.ts';
import { basicAuthorization, openReceiverCredentials, REDACTED_AUTHORIZATION } from '../security/receiver-credentials.ts';
import type { ClientCertificate, CustomHeaders } from './destinations/attempt.ts';

/** Distinct custom-header sets one worker keeps parsed; all are dropped when full. */
export const CUSTOM_HEADER_SETS = 10_000;

/** An endpoint's custom headers as the claim reads them (`headers::text`), ready to send. */
export function parseCustomHeaders(json: string): CustomHeaders {
  const flat: string[] = [];
  // The endpoint service stored an object of strings; anything else in the column is skipped.
  for (const [name, value] of Object.entries(JSON.parse(json) as Record<string, unknown>))
    if (typeof value === 'string') flat.push(name, value);
  return { json, flat };
}

/**
 * Parsed custom headers by their JSON text, so an attempt to an endpoint with headers parses
 * nothing the worker parsed before. Keyed by the text itself: a change to the headers is a new
 * text, found (and parsed) on the next claim, with nothing to invalidate.
 */
export class CustomHeaderSets {
  private readonly parsed = new Map<string, CustomHeaders>();

  constructor(private readonly capacity = CUSTOM_HEADER_SETS) {}

  get(json: string): CustomHeaders {
    let headers = this.parsed.get(json);
    if (headers === undefined) {
      headers = parseCustomHeaders(json);
      if (this.parsed.size >= this.capacity) this.parsed.clear();
      this.parsed.set(json, headers);
    }
    return headers;
  }
}

/**
 * An endpoint's headers with its receiver's `Authorization` added (Basic), by the sealed
 * credentials and the custom headers' text: opened once, and a change to either is a new key.
 * What the delivery log keeps (`json`) names the scheme only: `Authorization: Basic [redacted]`.
 */
export class AuthorizationHeaders {
  private readonly made = new Map<string, CustomHeaders>();

  constructor(
    private readonly decrypt: (box: string, aad: string) => string,
    private readonly capacity = CUSTOM_HEADER_SETS,
  ) {}

  with(custom: CustomHeaders | null, type: ReceiverAuthType, box: string, endpointId: string): CustomHeaders {
    const key = `${box}\n${custom?.json ?? ''}`;
    let headers = this.made.get(key);
    if (headers === undefined) {
      const credentials = openReceiverCredentials(this.decrypt, type, box, endpointId);
      if (credentials.type !== 'basic') throw new Error(`endpoint ${endpointId}: ${type} credentials make no Authorization header`);
      const value = basicAuthorization(credentials);
      const shown: Record<string, string> = custom ? (JSON.parse(custom.json) as Record<string, string>) : {};
      shown.Authorization = REDACTED_AUTHORIZATION[type];
      headers = { json: JSON.stringify(shown), flat: [...(custom?.flat ?? []), 'authorization', value] };
      if (this.made.size >= this.capacity) this.made.clear();
      this.made.set(key, headers);
    }
    return headers;
  }
}

/**
 * Endpoints' client certificates (mutual TLS), opened once per sealed value. Its `id` (the sealed
 * text, unique per upload) names the connections made with it (destinations/http.ts).
 */
export class ClientCertificates {
  private readonly opened = new Map<string, ClientCertificate>();

  constructor(
    private readonly decrypt: (box: string, aad: string) => string,
    private readonly capacity = CUSTOM_HEADER_SETS,
  ) {}

  get(box: string, endpointId: string): ClientCertificate {
    let cert = this.opened.get(box);
    if (cert === undefined) {
      const credentials = openReceiverCredentials(this.decrypt, 'mtls', box, endpointId);
      if (credentials.type !== 'mtls') throw new Error(`endpoint ${endpointId}: its credentials are not a client certificate`);
      cert = { id: box, cert: credentials.certificate, key: credentials.private_key };
      if (this.opened.size >= this.capacity) this.opened.clear();
      this.opened.set(box, cert);
    }
    return cert;
  }
}

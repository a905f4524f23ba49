import {
  basicAuthorization,
  openReceiverCredentials,
  REDACTED_AUTHORIZATION,
  type ReceiverCredentials,
} from '../security/receiver-credentials.ts';
import type { OAuthClient } from './destinations/access-tokens.ts';
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
 * Values made once per key (a header set's text, a sealed credential), in a bounded map that is
 * emptied when full: the keys change only when the endpoint does, so a miss is rare.
 */
class MadeOnce<V> {
  private readonly made = new Map<string, V>();

  constructor(private readonly capacity: number) {}

  get(key: string, make: () => V): V {
    let value = this.made.get(key);
    if (value === undefined) {
      value = make();
      if (this.made.size >= this.capacity) this.made.clear();
      this.made.set(key, value);
    }
    return value;
  }
}

/**
 * Parsed custom headers by their JSON text, so an attempt to an endpoint with headers parses
 * nothing the worker parsed before. Keyed by the text itself: a change to the headers is a new
 * text, found (and parsed) on the next claim, with nothing to invalidate.
 */
export class CustomHeaderSets {
  private readonly parsed: MadeOnce<CustomHeaders>;

  constructor(capacity = CUSTOM_HEADER_SETS) {
    this.parsed = new MadeOnce(capacity);
  }

  get(json: string): CustomHeaders {
    return this.parsed.get(json, () => parseCustomHeaders(json));
  }
}

/**
 * An endpoint's headers with its receiver's `Authorization`, by the sealed credentials and the
 * custom headers' text: opened once, and a change to either is a new key. Basic is added here;
 * a Bearer token is added by the HTTP destination, which holds the tokens. What the delivery log
 * keeps (`json`) names the scheme only: `Authorization: Basic [redacted]` or `Bearer [redacted]`.
 */
export class AuthorizationHeaders {
  private readonly made = new MadeOnce<CustomHeaders>(CUSTOM_HEADER_SETS);

  constructor(private readonly decrypt: (box: string, aad: string) => string) {}

  with(custom: CustomHeaders | null, box: string, endpointId: string, scheme: 'basic' | 'bearer'): CustomHeaders {
    return this.made.get(`${box}\n${custom?.json ?? ''}`, () => {
      const shown: Record<string, string> = custom ? (JSON.parse(custom.json) as Record<string, string>) : {};
      shown.Authorization = REDACTED_AUTHORIZATION[scheme];
      const flat = [...(custom?.flat ?? [])];
      if (scheme === 'basic')
        flat.push('authorization', basicAuthorization(openReceiverCredentials(this.decrypt, 'basic', box, endpointId)));
      return { json: JSON.stringify(shown), flat };
    });
  }
}

/**
 * Receiver credentials of one type, opened once per sealed value and shaped for sending by
 * `shape` (given the sealed text, which keys what is made from them: a client certificate's
 * connections in destinations/http.ts, an OAuth 2.0 client's token).
 */
export class OpenedCredentials<T extends ReceiverCredentials['type'], V> {
  private readonly opened = new MadeOnce<V>(CUSTOM_HEADER_SETS);

  constructor(
    private readonly decrypt: (box: string, aad: string) => string,
    private readonly type: T,
    private readonly shape: (credentials: Extract<ReceiverCredentials, { type: T }>, box: string) => V,
  ) {}

  get(box: string, endpointId: string): V {
    return this.opened.get(box, () => this.shape(openReceiverCredentials(this.decrypt, this.type, box, endpointId), box));
  }
}

/** Endpoints' client certificates (mutual TLS). */
export const clientCertificates = (decrypt: (box: string, aad: string) => string) =>
  new OpenedCredentials(decrypt, 'mtls', (c, box): ClientCertificate => ({ id: box, cert: c.certificate, key: c.private_key }));

/** Endpoints' OAuth 2.0 clients. */
export const oauthClients = (decrypt: (box: string, aad: string) => string) =>
  new OpenedCredentials(
    decrypt,
    'oauth2_client_credentials',
    (c, box): OAuthClient => ({
      id: box,
      tokenUrl: c.token_url,
      clientId: c.client_id,
      clientSecret: c.client_secret,
      scope: c.scope,
      audience: c.audience,
      method: c.client_auth_method,
    }),
  );

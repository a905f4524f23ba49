import type { SecretBox } from './encryption.ts';

/**
 * The secret part of an endpoint's receiver authentication, sealed to the endpoint: the
 * endpoint service seals it (endpoints/receiver-auth.ts), the attempt's request builder opens it
 * (delivery/attempt-request.ts). Bound to the endpoint and the purpose, so it decrypts neither
 * on another endpoint nor as a signing secret.
 */
export interface BasicCredentials {
  type: 'basic';
  username: string;
  password: string;
}

/** A client certificate chain and its private key (PEM), for a receiver that requires mutual TLS. */
export interface ClientCertificate {
  type: 'mtls';
  certificate: string;
  private_key: string;
}

/** How a client authenticates at an OAuth 2.0 token endpoint (RFC 6749 section 2.3.1). */
export type ClientAuthMethod = 'client_secret_basic' | 'client_secret_post';

/** An OAuth 2.0 client (RFC 6749 section 4.4) whose access tokens a receiver's gateway accepts. */
export interface OAuthClientCredentials {
  type: 'oauth2_client_credentials';
  token_url: string;
  client_id: string;
  client_secret: string;
  scope: string | null;
  audience: string | null;
  client_auth_method: ClientAuthMethod;
}

export type ReceiverCredentials = BasicCredentials | ClientCertificate | OAuthClientCredentials;

const aad = (endpointId: string) => `receiver-auth:${endpointId}`;

export function sealReceiverCredentials(secrets: SecretBox, endpointId: string, credentials: ReceiverCredentials): string {
  return secrets.encrypt(JSON.stringify(credentials), aad(endpointId));
}

/** Throws like `SecretBox.decrypt` when it can't be decrypted (a wrong key, another endpoint's) or is of another type. */
export function openReceiverCredentials<T extends ReceiverCredentials['type']>(
  decrypt: (box: string, aad: string) => string,
  type: T,
  box: string,
  endpointId: string,
): Extract<ReceiverCredentials, { type: T }> {
  const opened = JSON.parse(decrypt(box, aad(endpointId))) as ReceiverCredentials;
  if (opened.type !== type) throw new Error(`endpoint ${endpointId}: its receiver credentials are not of type ${type}`);
  return opened as Extract<ReceiverCredentials, { type: T }>;
}

/** The `Authorization` value for Basic (RFC 7617, UTF-8). */
export function basicAuthorization(c: BasicCredentials): string {
  return `Basic ${Buffer.from(`${c.username}:${c.password}`, 'utf8').toString('base64')}`;
}

/** What the delivery log shows instead: the scheme, never the credentials. */
export const REDACTED_AUTHORIZATION = { basic: 'Basic [redacted]', bearer: 'Bearer [redacted]' } as const;

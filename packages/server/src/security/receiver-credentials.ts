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

export type ReceiverCredentials = BasicCredentials | ClientCertificate;

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
export const REDACTED_AUTHORIZATION = { basic: 'Basic [redacted]' } as const;

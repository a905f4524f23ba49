import { createPrivateKey, X509Certificate } from 'node:crypto';
import type { Environment, ReceiverAuthType } from '../db/schema.ts';
import { BROKER_PROTOCOLS, isBrokerProtocol } from '../endpoint-urls/broker-url.ts';
import { AppError } from '../errors.ts';
import type { SecretBox } from '../security/encryption.ts';
import { sealReceiverCredentials, type ClientAuthMethod } from '../security/receiver-credentials.ts';
import { validateEndpointUrl, type UrlPolicy } from '../security/url-policy.ts';

/**
 * An endpoint's `authentication`: how payhooks proves itself to the receiver beside the
 * signature, for receivers behind a gateway that wants its own credentials
 * (docs/decisions/receiver-authentication.md). Written whole (`null` removes it); what is shown
 * of it never holds a secret, and the secret part is sealed to the endpoint.
 */
export type AuthenticationInput =
  | { type: 'basic'; username: string; password: string }
  | { type: 'mtls'; certificate: string; private_key: string; expire_previous_in?: number | undefined }
  | {
      type: 'oauth2_client_credentials';
      token_url: string;
      client_id: string;
      client_secret: string;
      scope?: string | null | undefined;
      audience?: string | null | undefined;
      client_auth_method?: ClientAuthMethod | undefined;
    };

/** What the API shows: the type and the fields that are not secret. */
export type AuthenticationView =
  | { type: 'basic'; username: string }
  | (CertificateView & { type: 'mtls'; previous: (CertificateView & { expires_at: string }) | null })
  | {
      type: 'oauth2_client_credentials';
      token_url: string;
      client_id: string;
      scope: string | null;
      audience: string | null;
      client_auth_method: ClientAuthMethod;
    };

/** What is shown of a client certificate. */
export interface CertificateView {
  subject: string;
  issuer: string;
  fingerprint: string;
  not_after: string;
}

/** Where the endpoint is (its environment), the outbound URL rules (a token URL follows the endpoint's) and the time. */
export interface AuthenticationPlace {
  environment: Environment;
  urlPolicy: UrlPolicy;
  /** The clock's time: a client certificate must not have expired by then. */
  now: Date;
}

/** The columns of an endpoint's authentication (all null: none). */
export interface AuthenticationColumns {
  authenticationType: ReceiverAuthType | null;
  authenticationShown: Record<string, string> | null;
  authenticationCiphertext: string | null;
}

/** A replaced client certificate's columns, kept for the overlap (all null: none). */
export interface PreviousCertificateColumns {
  previousClientCertificateCiphertext: string | null;
  previousClientCertificateShown: Record<string, string> | null;
  previousClientCertificateExpiresAt: Date | null;
}

/** How long a replaced client certificate is still presented, unless the request says otherwise (like a signing secret's). */
export const DEFAULT_CERTIFICATE_OVERLAP_S = 86_400;

const NO_PREVIOUS: PreviousCertificateColumns = {
  previousClientCertificateCiphertext: null,
  previousClientCertificateShown: null,
  previousClientCertificateExpiresAt: null,
};

/**
 * When a client certificate replaces another, the replaced one is kept for `expire_previous_in`
 * seconds (default a day; 0: not kept): attempts present the new one and, when the receiver
 * refuses its handshake, the previous one, so the merchant's gateway can be taught to trust the
 * new certificate at any time in between. Any other change drops it.
 */
export function previousCertificateColumns(
  current: AuthenticationColumns,
  input: AuthenticationInput | null,
  now: Date,
): PreviousCertificateColumns {
  if (input?.type !== 'mtls' || current.authenticationType !== 'mtls' || current.authenticationCiphertext === null) return NO_PREVIOUS;
  const overlapS = input.expire_previous_in ?? DEFAULT_CERTIFICATE_OVERLAP_S;
  if (overlapS <= 0) return NO_PREVIOUS;
  return {
    previousClientCertificateCiphertext: current.authenticationCiphertext,
    previousClientCertificateShown: current.authenticationShown,
    previousClientCertificateExpiresAt: new Date(now.getTime() + overlapS * 1000),
  };
}

const NONE: AuthenticationColumns = { authenticationType: null, authenticationShown: null, authenticationCiphertext: null };

/** Control characters would end or corrupt the header; a colon ends a Basic user-id (RFC 7617). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it refuses
const CONTROL = /[\u0000-\u001f\u007f]/;

const invalid = (param: string, message: string) => new AppError('invalid_request', 'parameter_invalid', message, { param });

/** The columns for what a request gave, checked; the password only ever leaves sealed. */
export function authenticationColumns(
  secrets: SecretBox,
  endpointId: string,
  input: AuthenticationInput | null,
  place: AuthenticationPlace,
): AuthenticationColumns {
  if (input === null) return NONE;
  if (input.type === 'mtls') return clientCertificateColumns(secrets, endpointId, input, place.now);
  if (input.type === 'oauth2_client_credentials') return oauthClientColumns(secrets, endpointId, input, place);
  // The API's schema admits only the types built so far; this is for in-process callers.
  if (input.type !== 'basic')
    throw new AppError(
      'invalid_request',
      'parameter_invalid',
      `authentication.type '${String((input as { type: unknown }).type)}' is not supported: use basic, mtls or oauth2_client_credentials.`,
      { param: 'authentication[type]' },
    );
  if (input.username.includes(':') || CONTROL.test(input.username))
    throw invalid(
      'authentication[username]',
      "Invalid 'authentication[username]': no colon (Basic ends the user-id at the first one) and no control character.",
    );
  if (CONTROL.test(input.password))
    throw invalid('authentication[password]', "Invalid 'authentication[password]': no control character (CR, LF, NUL and the like).");
  return {
    authenticationType: 'basic',
    authenticationShown: { username: input.username },
    authenticationCiphertext: sealReceiverCredentials(secrets, endpointId, {
      type: 'basic',
      username: input.username,
      password: input.password,
    }),
  };
}

const certificateView = (shown: Record<string, string>): CertificateView => ({
  subject: shown.subject ?? '',
  issuer: shown.issuer ?? '',
  fingerprint: shown.fingerprint ?? '',
  not_after: shown.not_after ?? '',
});

/** `now` decides whether a replaced client certificate is still presented. */
export function authenticationView(row: AuthenticationColumns & PreviousCertificateColumns, now: Date): AuthenticationView | null {
  const shown = row.authenticationShown ?? {};
  if (row.authenticationType === 'mtls') {
    const until = row.previousClientCertificateExpiresAt;
    const previous =
      until !== null && until > now && row.previousClientCertificateShown !== null
        ? { ...certificateView(row.previousClientCertificateShown), expires_at: `${until.toISOString().slice(0, 19)}Z` }
        : null;
    return { type: 'mtls', ...certificateView(shown), previous };
  }
  if (row.authenticationType === 'oauth2_client_credentials')
    return {
      type: 'oauth2_client_credentials',
      token_url: shown.token_url ?? '',
      client_id: shown.client_id ?? '',
      scope: shown.scope ?? null,
      audience: shown.audience ?? null,
      client_auth_method: shown.client_auth_method === 'client_secret_post' ? 'client_secret_post' : 'client_secret_basic',
    };
  if (row.authenticationType !== 'basic') return null;
  return { type: 'basic', username: row.authenticationShown?.username ?? '' };
}

/**
 * What can't go with authentication: a broker URL (a broker takes its credentials in the URL)
 * and a custom `Authorization` header (the receiver would get two). Checked on the endpoint as
 * it will be after the change.
 */
export function checkAuthenticationFits(
  url: string,
  headers: Record<string, string> | null,
  type: ReceiverAuthType | null,
  trustedCas: string | null = null,
): void {
  // The URL was validated already (security/url-policy.ts): http, https or a broker's scheme.
  const { protocol } = new URL(url);
  const broker = isBrokerProtocol(protocol);
  // https, or a broker over TLS (amqps://, tls://): where a handshake can use them.
  const withTls = protocol === 'https:' || (broker && BROKER_PROTOCOLS[protocol]!.tls);
  const refuse = (code: string, param: string, message: string) => new AppError('invalid_request', code, message, { param });
  // (An http endpoint may have them: its OAuth 2.0 token URL is https.)
  if (trustedCas !== null && broker && !withTls)
    throw refuse('tls_not_supported', 'tls', 'tls.ca_certificates is for connections over TLS: on a broker, amqps:// or tls:// (NATS).');
  if (type === null) return;
  if (type === 'mtls' && !withTls)
    throw refuse(
      'authentication_not_supported',
      'authentication',
      'A client certificate is presented in the TLS handshake: the endpoint URL must be https, amqps:// or tls:// (NATS).',
    );
  if (broker && type !== 'mtls')
    throw refuse(
      'authentication_not_supported',
      'authentication',
      'A broker takes its credentials in the URL (user:password@), and a client certificate as authentication {"type": "mtls"}; Basic and OAuth 2.0 are for HTTP endpoints.',
    );
  const custom = Object.keys(headers ?? {}).find((name) => name.toLowerCase() === 'authorization');
  if (custom !== undefined)
    throw refuse(
      'header_conflicts_with_authentication',
      `headers[${custom}]`,
      `The endpoint has both authentication and a custom '${custom}' header: remove the header (authentication sends Authorization itself).`,
    );
}

/** What an endpoint's `tls` takes: certificate authorities to trust beside the public ones. */
export type TlsInput = { ca_certificates: string };

/** Most certificates and bytes an endpoint's own authorities may hold. */
export const MAX_TRUSTED_CAS = 10;
export const MAX_TRUSTED_CA_BYTES = 64 * 1024;

const PEM_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * The PEM to store for what a request gave (null removes it): every block a certificate Node can
 * read, nothing else in the text, at most MAX_TRUSTED_CAS of them. Verification stays on whatever
 * is given: these are trusted in addition to the public authorities, never instead of checking.
 */
export function trustedCasOf(input: TlsInput | null): string | null {
  if (input === null) return null;
  const param = 'tls[ca_certificates]';
  const text = input.ca_certificates;
  if (Buffer.byteLength(text) > MAX_TRUSTED_CA_BYTES)
    throw invalid(param, `Invalid '${param}': at most ${MAX_TRUSTED_CA_BYTES} bytes of PEM.`);
  const blocks = text.match(PEM_BLOCK) ?? [];
  if (blocks.length === 0 || text.replace(PEM_BLOCK, '').trim() !== '')
    throw invalid(param, `Invalid '${param}': give PEM certificates only (-----BEGIN CERTIFICATE----- … -----END CERTIFICATE-----).`);
  if (blocks.length > MAX_TRUSTED_CAS) throw invalid(param, `Invalid '${param}': at most ${MAX_TRUSTED_CAS} certificates.`);
  blocks.forEach((block, i) => {
    try {
      new X509Certificate(block);
    } catch {
      throw invalid(param, `Invalid '${param}': certificate ${i + 1} is not a readable X.509 certificate.`);
    }
  });
  return `${blocks.join('\n')}\n`;
}

/**
 * A client certificate: the chain's first certificate is the client's, the key must be its, and
 * it must not have expired (the health mail warns 30 and 7 days before it does:
 * certificate-expiry.ts). The key leaves only sealed; the endpoint shows the certificate's
 * subject, issuer, SHA-256 fingerprint and expiry.
 */
function clientCertificateColumns(
  secrets: SecretBox,
  endpointId: string,
  input: { certificate: string; private_key: string },
  now: Date,
): AuthenticationColumns {
  const certParam = 'authentication[certificate]';
  const keyParam = 'authentication[private_key]';
  const blocks = input.certificate.match(PEM_BLOCK) ?? [];
  if (blocks.length === 0 || input.certificate.replace(PEM_BLOCK, '').trim() !== '')
    throw invalid(certParam, `Invalid '${certParam}': give the client certificate, then its chain, as PEM certificates only.`);
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(blocks[0]!);
    for (const block of blocks.slice(1)) new X509Certificate(block);
  } catch {
    throw invalid(certParam, `Invalid '${certParam}': a certificate is not a readable X.509 certificate.`);
  }
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey(input.private_key);
  } catch {
    // Never the key's text: it is a secret, right or wrong.
    throw invalid(keyParam, `Invalid '${keyParam}': not a readable, unencrypted PEM private key.`);
  }
  if (!cert.checkPrivateKey(key)) throw invalid(keyParam, `Invalid '${keyParam}': it is not the key of the certificate given.`);
  const notAfter = new Date(cert.validTo);
  if (!(notAfter > now))
    throw invalid(certParam, `Invalid '${certParam}': the certificate expired on ${notAfter.toISOString()}; give a current one.`);
  return {
    authenticationType: 'mtls',
    authenticationShown: {
      subject: cert.subject.replace(/\n/g, ', '),
      issuer: cert.issuer.replace(/\n/g, ', '),
      fingerprint: cert.fingerprint256,
      not_after: `${notAfter.toISOString().slice(0, 19)}Z`,
    },
    authenticationCiphertext: sealReceiverCredentials(secrets, endpointId, {
      type: 'mtls',
      certificate: `${blocks.join('\n')}\n`,
      private_key: key.export({ type: 'pkcs8', format: 'pem' }).toString(),
    }),
  };
}

/**
 * An OAuth 2.0 client (RFC 6749 section 4.4): the token URL is held to the endpoint's own URL
 * rules (environment, private addresses) and must be https, since the client secret travels to
 * it; at send time it is reached through the same SSRF guard and egress proxy as the receiver.
 * The client secret leaves only sealed; everything else is shown.
 */
function oauthClientColumns(
  secrets: SecretBox,
  endpointId: string,
  input: Extract<AuthenticationInput, { type: 'oauth2_client_credentials' }>,
  place: AuthenticationPlace,
): AuthenticationColumns {
  const param = 'authentication[token_url]';
  let tokenUrl: string;
  try {
    tokenUrl = validateEndpointUrl(input.token_url, place.environment, place.urlPolicy).url;
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    throw new AppError(err.kind, err.code, err.message.replace(/^url\b/, 'authentication.token_url'), { param });
  }
  const parsed = new URL(tokenUrl);
  if (parsed.protocol !== 'https:')
    throw invalid(param, `Invalid '${param}': the token endpoint must be https (the client secret is sent to it).`);
  if (parsed.search !== '')
    throw invalid(param, `Invalid '${param}': no query string (the token request sends its parameters in the body).`);
  for (const field of ['client_id', 'client_secret', 'scope', 'audience'] as const) {
    const value = input[field];
    if (typeof value === 'string' && CONTROL.test(value))
      throw invalid(`authentication[${field}]`, `Invalid 'authentication[${field}]': no control character (CR, LF, NUL and the like).`);
  }
  const scope = input.scope ?? null;
  const audience = input.audience ?? null;
  const method: ClientAuthMethod = input.client_auth_method ?? 'client_secret_basic';
  const shown: Record<string, string> = { token_url: tokenUrl, client_id: input.client_id, client_auth_method: method };
  if (scope !== null) shown.scope = scope;
  if (audience !== null) shown.audience = audience;
  return {
    authenticationType: 'oauth2_client_credentials',
    authenticationShown: shown,
    authenticationCiphertext: sealReceiverCredentials(secrets, endpointId, {
      type: 'oauth2_client_credentials',
      token_url: tokenUrl,
      client_id: input.client_id,
      client_secret: input.client_secret,
      scope,
      audience,
      client_auth_method: method,
    }),
  };
}

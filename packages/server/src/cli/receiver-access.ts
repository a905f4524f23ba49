import { readFileSync } from 'node:fs';
import { rootCertificates, type ConnectionOptions } from 'node:tls';
import { ACK_DEADLINE_MS } from '@payhooks/contract';
import { ConfigError } from '../errors.ts';
import { DeadlineQueue } from '../delivery/deadlines.ts';
import { AccessTokens, type OAuthClient, type TokenEndpointError } from '../delivery/destinations/access-tokens.ts';
import { HttpDestination } from '../delivery/destinations/http.ts';
import { basicAuthorization, type ClientAuthMethod } from '../security/receiver-credentials.ts';
import type { ReceiverAuthFlags } from './receiver-auth-flags.ts';

/** A receiver reached as an endpoint with `authentication` and `tls` reaches it (the flags in receiver-auth-flags.ts). */
export interface ReceiverAccess {
  /** The transport to send with, or undefined for a plain request. */
  transport: HttpDestination | undefined;
  /** The Authorization value to send now (an OAuth 2.0 token is asked for when none is held), or null. */
  authorization(): Promise<string | null>;
  /** The receiver answered 401 to `authorization`: the next one is a new token. */
  refused(authorization: string): void;
  close(): Promise<void>;
}

function readPem(file: string, flag: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`${flag} ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}; give a readable PEM file.`);
  }
}

/** What the flags ask for, checked; `proxy` is PAYHOOKS_EGRESS_PROXY when the requests leave through it. */
export function receiverAccess(flags: ReceiverAuthFlags, proxy?: string): ReceiverAccess {
  const mtls = flags.clientCert !== undefined || flags.clientKey !== undefined;
  const oauth = flags.tokenUrl !== undefined || flags.clientId !== undefined;
  if ([flags.basic === true, mtls, oauth].filter(Boolean).length > 1)
    throw new ConfigError('Give one kind of receiver authentication: --basic, --client-cert/--client-key, or --token-url/--client-id.');
  if (mtls && (flags.clientCert === undefined || flags.clientKey === undefined))
    throw new ConfigError('--client-cert and --client-key go together: the certificate and its private key, both PEM files.');
  const tls: ConnectionOptions = {};
  if (flags.ca !== undefined) tls.ca = [...rootCertificates, readPem(flags.ca, '--ca')];
  if (mtls) Object.assign(tls, { cert: readPem(flags.clientCert!, '--client-cert'), key: readPem(flags.clientKey!, '--client-key') });
  const client = oauth ? oauthClient(flags) : null;
  const basic = flags.basic ? basicFromEnvironment() : null;
  const transport =
    proxy !== undefined || flags.ca !== undefined || mtls || client !== null
      ? new HttpDestination({
          timeoutMs: ACK_DEADLINE_MS,
          // The receiver's URL is the developer's own: private addresses are theirs to reach.
          allowPrivate: true,
          connectionsPerOrigin: 2,
          deadlines: new DeadlineQueue(ACK_DEADLINE_MS),
          proxy: proxy === undefined ? undefined : new URL(proxy),
          tls,
        })
      : undefined;
  const tokens = new AccessTokens(Date.now);
  return {
    transport,
    async authorization() {
      if (basic !== null) return basic;
      if (client === null || transport === undefined) return null;
      try {
        const token = await tokens.get(client, (url, headers, body) =>
          transport.request(url, headers, body, AbortSignal.timeout(ACK_DEADLINE_MS)),
        );
        return `Bearer ${token}`;
      } catch (err) {
        // AccessTokens rejects with TokenEndpointError alone: words fit for the terminal.
        throw new ConfigError((err as TokenEndpointError).message);
      }
    },
    refused(authorization) {
      if (client !== null && authorization.startsWith('Bearer ')) tokens.refused(client, authorization.slice(7));
    },
    close: async () => transport?.close(),
  };
}

function oauthClient(flags: ReceiverAuthFlags): OAuthClient {
  if (flags.tokenUrl === undefined || flags.clientId === undefined)
    throw new ConfigError('--token-url and --client-id go together (the client secret is read from PAYHOOKS_RECEIVER_CLIENT_SECRET).');
  let url: URL;
  try {
    url = new URL(flags.tokenUrl);
  } catch {
    throw new ConfigError(`--token-url '${flags.tokenUrl}' is not a URL.`);
  }
  if (url.protocol !== 'https:') throw new ConfigError('--token-url must be https: the client secret is sent to it.');
  const secret = process.env.PAYHOOKS_RECEIVER_CLIENT_SECRET ?? '';
  if (secret === '')
    throw new ConfigError("--token-url reads the client secret from PAYHOOKS_RECEIVER_CLIENT_SECRET (the endpoint's authentication).");
  const method = (flags.clientAuthMethod ?? 'client_secret_basic') as ClientAuthMethod;
  if (method !== 'client_secret_basic' && method !== 'client_secret_post')
    throw new ConfigError('--client-auth-method must be client_secret_basic or client_secret_post.');
  return {
    id: 'cli',
    tokenUrl: url.href,
    clientId: flags.clientId,
    clientSecret: secret,
    scope: flags.scope ?? null,
    audience: flags.audience ?? null,
    method,
  };
}

/**
 * `--basic`: the credentials of an endpoint's Basic authentication, from PAYHOOKS_RECEIVER_BASIC
 * (`username:password`) rather than an argument.
 */
function basicFromEnvironment(): string {
  const value = process.env.PAYHOOKS_RECEIVER_BASIC ?? '';
  const colon = value.indexOf(':');
  if (colon <= 0)
    throw new ConfigError(
      "--basic reads the credentials from PAYHOOKS_RECEIVER_BASIC as username:password (the endpoint's authentication).",
    );
  return basicAuthorization({ type: 'basic', username: value.slice(0, colon), password: value.slice(colon + 1) });
}

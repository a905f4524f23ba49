import { createServer as createHttpServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import { issue, makeCa } from './certificates.ts';

/**
 * A real OAuth 2.0 authorization server (oidc-provider, client credentials) over HTTPS with a
 * certificate of a CA made in `dir`, and a gateway in front of a receiver that lets in only the
 * tokens that server issued and has not revoked, as a bank's API gateway does.
 */
export interface AuthorizationServer {
  tokenUrl: string;
  /** The CA of the server's certificate (PEM): what an endpoint's `tls.ca_certificates` trusts. */
  caPem: string;
  provider: Provider;
  /** Requests to the token endpoint so far. */
  tokenRequests(): number;
  /** `down`: the token endpoint answers 503 temporarily_unavailable. */
  setDown(down: boolean): void;
  close(): Promise<void>;
}

export interface OAuthClientConfig {
  client_id: string;
  client_secret: string;
  scope?: string;
  token_endpoint_auth_method?: 'client_secret_basic' | 'client_secret_post';
}

export async function startAuthorizationServer(dir: string, clients: OAuthClientConfig[], tokenTtlS = 600): Promise<AuthorizationServer> {
  const caPem = makeCa(dir, 'idp-ca');
  const cert = issue(dir, 'idp-ca', 'idp', 'subjectAltName=IP:127.0.0.1');
  let callback: ((req: IncomingMessage, res: ServerResponse) => void) | null = null;
  let requests = 0;
  let down = false;
  const server = createHttpsServer(cert, (req, res) => {
    if (req.url?.startsWith('/token')) requests++;
    if (down) {
      req.resume();
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"temporarily_unavailable"}');
      return;
    }
    callback!(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const issuer = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(issuer, {
    clients: clients.map((c) => ({ ...c, grant_types: ['client_credentials'], redirect_uris: [], response_types: [] })),
    scopes: [...new Set(clients.flatMap((c) => c.scope?.split(' ') ?? []))],
    features: { clientCredentials: { enabled: true }, devInteractions: { enabled: false } },
    ttl: { ClientCredentials: tokenTtlS },
    cookies: { keys: ['test-cookie-key'] },
  });
  callback = provider.callback();
  return {
    tokenUrl: `${issuer}/token`,
    caPem,
    provider,
    tokenRequests: () => requests,
    setDown: (d) => {
      down = d;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

export interface Admitted {
  status: number;
  token: string | null;
  clientId?: string;
  scope?: string | undefined;
}

/**
 * An HTTP server that answers 401 to any request without a Bearer token `auth` issued (and that
 * `refuse` doesn't turn down), and passes the others to `inner` (or answers 200). `seen` records
 * every request's outcome.
 */
export async function startTokenGateway(
  auth: AuthorizationServer,
  options: { refuse?: (token: string) => boolean; inner?: RequestListener } = {},
): Promise<{ url: string; seen: Admitted[]; server: Server; close(): Promise<void> }> {
  const seen: Admitted[] = [];
  const server = createHttpServer(async (req, res) => {
    const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1] ?? null;
    const found = token !== null && !options.refuse?.(token) ? await auth.provider.ClientCredentials.find(token) : undefined;
    if (!found) {
      req.resume();
      seen.push({ status: 401, token });
      res.writeHead(401, { 'www-authenticate': 'Bearer error="invalid_token"' }).end();
      return;
    }
    seen.push({ status: 200, token, clientId: found.clientId, scope: found.scope });
    if (options.inner) options.inner(req, res);
    else {
      req.resume();
      res.end('ok');
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`,
    seen,
    server,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

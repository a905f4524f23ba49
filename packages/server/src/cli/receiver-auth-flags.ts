import type { Command } from 'commander';

/**
 * The developer tools' (`check-receiver`, `listen`) way to reach a receiver the way an endpoint
 * with `authentication` and `tls` does: Basic, a client certificate, an OAuth 2.0 access token,
 * a private CA. Secrets come from the environment, never from arguments that shell history and
 * `ps` keep. With any of them the requests go through the delivery engine's own transport.
 */
export interface ReceiverAuthFlags {
  basic?: boolean;
  clientCert?: string;
  clientKey?: string;
  ca?: string;
  tokenUrl?: string;
  clientId?: string;
  scope?: string;
  audience?: string;
  clientAuthMethod?: string;
}

/** Adds the flags to a command. */
export function withReceiverAuthFlags(command: Command): Command {
  return command
    .option('--basic', "send the endpoint's Basic authentication, read from PAYHOOKS_RECEIVER_BASIC (username:password)")
    .option('--client-cert <file>', 'present this client certificate (PEM, then its chain) in the TLS handshake (mutual TLS)')
    .option('--client-key <file>', "the client certificate's private key (PEM)")
    .option('--ca <file>', 'trust this certificate authority (PEM) beside the public ones, for a receiver on a private PKI')
    .option('--token-url <url>', 'get an OAuth 2.0 access token (client credentials) here and send it as Bearer')
    .option('--client-id <id>', 'the OAuth 2.0 client; its secret is read from PAYHOOKS_RECEIVER_CLIENT_SECRET')
    .option('--scope <scope>', 'the OAuth 2.0 scope to ask for')
    .option('--audience <audience>', 'the OAuth 2.0 audience to ask for')
    .option('--client-auth-method <method>', 'client_secret_basic (default) or client_secret_post');
}

import { ACK_DEADLINE_MS, SECRET_PREFIX } from '@payhooks/contract';
import { ConfigError } from '../errors.ts';
import { checkReceiver, formatReport, type CheckReport } from '../devtools/check-receiver.ts';
import { readSetting } from '../config.ts';
import { HttpDestination } from '../delivery/destinations/http.ts';
import { DeadlineQueue } from '../delivery/deadlines.ts';
import { basicAuthorization } from '../security/receiver-credentials.ts';

/** Exit codes: 0 every duty holds, 1 a duty fails (or bad input), 3 nothing answers at the URL. */
export const EXIT_UNREACHABLE = 3;

/** `payhooks check-receiver <url> --secret whsec_…`: exit code 1 unless every duty holds. */
export async function checkReceiverCommand(url: string, opts: { secret: string; json?: boolean; basic?: boolean }): Promise<void> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError(`'${url}' is not a URL; give your receiver's full address, e.g. http://localhost:3000/webhooks.`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new ConfigError(`The receiver URL must be http or https, not ${parsed.protocol}`);
  if (!opts.secret.startsWith(SECRET_PREFIX) || opts.secret.length <= SECRET_PREFIX.length)
    throw new ConfigError(`--secret must be the endpoint's signing secret, which starts with ${SECRET_PREFIX}.`);
  const authorization = opts.basic ? basicFromEnvironment() : undefined;
  // With PAYHOOKS_EGRESS_PROXY set, the checks leave as deliveries do: through the proxy, by the
  // delivery engine's own transport. Private addresses stay allowed: the URL is the operator's.
  const proxy = readSetting('egressProxy');
  const transport = proxy
    ? new HttpDestination({
        timeoutMs: ACK_DEADLINE_MS,
        allowPrivate: true,
        connectionsPerOrigin: 2,
        deadlines: new DeadlineQueue(ACK_DEADLINE_MS),
        proxy: new URL(proxy),
      })
    : undefined;
  let report: CheckReport;
  try {
    report = await checkReceiver({ url: parsed.href, secret: opts.secret, transport, authorization });
  } finally {
    await transport?.close();
  }
  process.stdout.write(`${opts.json ? JSON.stringify(report) : formatReport(report)}\n`);
  if (!report.ok) process.exitCode = report.unreachable ? EXIT_UNREACHABLE : 1;
}

/**
 * `--basic`: the credentials of an endpoint's Basic authentication, from PAYHOOKS_RECEIVER_BASIC
 * (`username:password`) rather than an argument, which shell history and `ps` would keep.
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

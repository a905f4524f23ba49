import { SECRET_PREFIX } from '@payhooks/contract';
import { ConfigError } from '../errors.ts';
import { checkReceiver, formatReport, type CheckReport } from '../devtools/check-receiver.ts';
import { readSetting } from '../config.ts';
import { receiverAccess } from './receiver-access.ts';
import type { ReceiverAuthFlags } from './receiver-auth-flags.ts';

/** Exit codes: 0 every duty holds, 1 a duty fails (or bad input), 3 nothing answers at the URL. */
export const EXIT_UNREACHABLE = 3;

/** `payhooks check-receiver <url> --secret whsec_…`: exit code 1 unless every duty holds. */
export async function checkReceiverCommand(url: string, opts: { secret: string; json?: boolean } & ReceiverAuthFlags): Promise<void> {
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
  // With PAYHOOKS_EGRESS_PROXY set, the checks leave as deliveries do: through the proxy, by the
  // delivery engine's own transport; so do they with a client certificate, a CA or OAuth 2.0.
  const access = receiverAccess(opts, readSetting('egressProxy'));
  let report: CheckReport;
  try {
    const authorization = (await access.authorization()) ?? undefined;
    report = await checkReceiver({ url: parsed.href, secret: opts.secret, transport: access.transport, authorization });
  } finally {
    await access.close();
  }
  process.stdout.write(`${opts.json ? JSON.stringify(report) : formatReport(report)}\n`);
  if (!report.ok) process.exitCode = report.unreachable ? EXIT_UNREACHABLE : 1;
}

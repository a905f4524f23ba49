import { AppError } from '../errors.ts';
import { normaliseEmail } from '../accounts/users.ts';

/**
 * Who is mailed about a Platform's endpoint health, per environment (alerts/health-mail.ts): its
 * developers and admins (each can turn it off under Account) and the addresses here; set by a
 * Platform admin (Settings) or the payment service (internal API). A payment service that alerts
 * through its own channels turns payhooks' mail off and takes the operational events instead.
 */
export interface AlertSettings {
  /** Mail about live endpoints (default on). */
  mail_live: boolean;
  /** Mail about sandbox endpoints (default off). */
  mail_sandbox: boolean;
  /** More recipients than the team: an on-call address, a shared inbox. */
  emails: string[];
  /**
   * The endpoint's page in the payment service's own portal, for an embedded portal: an http(s)
   * URL with `{endpoint_id}`; null links to payhooks' portal.
   */
  endpoint_link_template: string | null;
}

export const DEFAULT_ALERT_SETTINGS: AlertSettings = { mail_live: true, mail_sandbox: false, emails: [], endpoint_link_template: null };
export const MAX_ALERT_EMAILS = 20;

export function alertSettingsOf(stored: object | null | undefined): AlertSettings {
  return { ...DEFAULT_ALERT_SETTINGS, ...(stored ?? {}) } as AlertSettings;
}

const invalid = (param: string, message: string) =>
  new AppError('invalid_request', 'parameter_invalid', `Invalid '${param}': ${message}`, { param });

/** `current` with `change` applied, every value checked (a 400 naming the field otherwise). */
export function mergeAlertSettings(
  current: AlertSettings,
  change: Partial<Record<keyof AlertSettings, unknown>> | undefined,
): AlertSettings {
  if (change === undefined) return current;
  const next = { ...current };
  for (const key of ['mail_live', 'mail_sandbox'] as const) {
    const v = change[key];
    if (v === undefined) continue;
    if (typeof v !== 'boolean') throw invalid(`alerts[${key}]`, 'send true or false.');
    next[key] = v;
  }
  if (change.emails !== undefined) {
    if (!Array.isArray(change.emails)) throw invalid('alerts[emails]', 'send a list of email addresses ([] for none).');
    if (change.emails.length > MAX_ALERT_EMAILS) throw invalid('alerts[emails]', `at most ${MAX_ALERT_EMAILS} addresses.`);
    const emails = change.emails.map((e, i) => {
      if (typeof e !== 'string') throw invalid(`alerts[emails][${i}]`, 'send an email address.');
      try {
        return normaliseEmail(e);
      } catch {
        throw invalid(`alerts[emails][${i}]`, `'${e.slice(0, 100)}' is not an email address.`);
      }
    });
    next.emails = [...new Set(emails)];
  }
  if (change.endpoint_link_template !== undefined) next.endpoint_link_template = linkTemplate(change.endpoint_link_template);
  return next;
}

function linkTemplate(value: unknown): string | null {
  if (value === null) return null;
  const param = 'alerts[endpoint_link_template]';
  if (typeof value !== 'string' || value.length > 500)
    throw invalid(param, 'send an http(s) URL of at most 500 characters with {endpoint_id}, or null.');
  if (!value.includes('{endpoint_id}')) throw invalid(param, 'the URL must contain {endpoint_id}, where the endpoint id goes.');
  let url: URL;
  try {
    url = new URL(value.replaceAll('{endpoint_id}', 'we_x'));
  } catch {
    throw invalid(param, 'send an absolute http(s) URL, such as https://dashboard.example.com/webhooks/endpoints/{endpoint_id}.');
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password)
    throw invalid(param, 'send an absolute http(s) URL without credentials.');
  return value;
}

/** The link to an endpoint in a mail: the payment service's page when it set one, else payhooks' portal. */
export function endpointLink(settings: AlertSettings, publicUrl: string, endpointId: string): string {
  return settings.endpoint_link_template
    ? settings.endpoint_link_template.replaceAll('{endpoint_id}', endpointId)
    : `${publicUrl}/portal/webhooks/endpoints/${endpointId}`;
}

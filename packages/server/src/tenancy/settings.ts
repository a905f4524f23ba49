import { asc, eq } from 'drizzle-orm';
import type { AuditTrail, PlatformSubject } from '../audit/trail.ts';
import type { Db } from '../db/client.ts';
import { merchants, platforms } from '../db/schema.ts';
import { AppError } from '../errors.ts';
import { alertSettingsOf, mergeAlertSettings, type AlertSettings } from '../alerts/settings.ts';

/**
 * How the portal looks inside the payment service's portal: its accent colour, the name or logo
 * in its corner, light or dark (or the viewer's system setting). Every value is checked here,
 * so the page can apply it as a CSS value and an image without further thought.
 */
export interface PortalTheme {
  accent_color: string | null;
  /** Shown where payhooks' name would be; null: the Platform's name. */
  name: string | null;
  /** A PNG, JPEG or WebP logo as a data: URL (at most 64 KiB), shown instead of the name. */
  logo: string | null;
  mode: 'light' | 'dark' | 'auto';
}

/** The Platform's settings in the portal (admins only). */
export interface PlatformSettings {
  object: 'platform_settings';
  /** The name customers see on the hosted checkout page; null shows `platform_name`. */
  display_name: string | null;
  platform_name: string;
  /** Every portal user must sign in with a second factor (TOTP); users without one set it up at their next sign-in. */
  require_two_factor: boolean;
  /** Endpoints created without `asymmetric_signature` sign with ed25519 too; existing endpoints keep theirs. */
  asymmetric_signature_default: boolean;
  theme: PortalTheme;
  /** Mail about endpoint health (alerts/settings.ts). */
  alerts: AlertSettings;
}

export interface SettingsChange {
  display_name?: unknown;
  require_two_factor?: boolean | undefined;
  asymmetric_signature_default?: boolean | undefined;
  theme?: Partial<Record<keyof PortalTheme, unknown>> | undefined;
  alerts?: Partial<Record<keyof AlertSettings, unknown>> | undefined;
}

export const DISPLAY_NAME_MAX = 100;
export const THEME_NAME_MAX = 60;
export const LOGO_MAX_BYTES = 64 * 1024;
const DEFAULT_THEME: PortalTheme = { accent_color: null, name: null, logo: null, mode: 'auto' };

const invalid = (param: string, message: string) =>
  new AppError('invalid_request', 'parameter_invalid', `Invalid '${param}': ${message}`, { param });

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
const CONTROL = /[\u0000-\u001f\u007f]/;

function text(value: unknown, param: string, max: number, nullMeans: string): string | null {
  if (value === null) return null;
  if (typeof value !== 'string') throw invalid(param, `send a string, or null for ${nullMeans}.`);
  const trimmed = value.trim();
  if ([...trimmed].length > max) throw invalid(param, `at most ${max} characters.`);
  if (CONTROL.test(trimmed)) throw invalid(param, 'control characters are not allowed.');
  return trimmed.length ? trimmed : null;
}

/** The image's own first bytes must say what its data: URL says. */
const MAGIC: Record<string, (b: Buffer) => boolean> = {
  'image/png': (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
  'image/jpeg': (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff,
  'image/webp': (b) => b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP',
};

function logo(value: unknown): string | null {
  if (value === null) return null;
  const param = 'theme[logo]';
  if (typeof value !== 'string') throw invalid(param, 'send a data: URL of a PNG, JPEG or WebP image, or null.');
  const m = /^data:(image\/(?:png|jpeg|webp));base64,([A-Za-z0-9+/]+={0,2})$/.exec(value);
  // SVG is refused: it is a document that can carry script, not just a picture.
  if (!m) throw invalid(param, 'send a data: URL of a PNG, JPEG or WebP image (data:image/png;base64,…); SVG is not accepted.');
  const bytes = Buffer.from(m[2]!, 'base64');
  if (bytes.length > LOGO_MAX_BYTES) throw invalid(param, `the image is ${bytes.length} bytes; at most ${LOGO_MAX_BYTES}.`);
  if (!MAGIC[m[1]!]!(bytes)) throw invalid(param, `the data is not a ${m[1]} image.`);
  return value;
}

/** `current` with `change` applied, every value checked (400 naming the field otherwise). */
export function mergeTheme(current: PortalTheme, change: SettingsChange['theme']): PortalTheme {
  if (change === undefined) return current;
  const next = { ...current };
  if (change.accent_color !== undefined) {
    if (change.accent_color !== null && (typeof change.accent_color !== 'string' || !/^#[0-9a-fA-F]{6}$/.test(change.accent_color)))
      throw invalid('theme[accent_color]', 'send a colour as #RRGGBB (such as #635bff), or null for the default.');
    next.accent_color = change.accent_color === null ? null : change.accent_color.toLowerCase();
  }
  if (change.name !== undefined) next.name = text(change.name, 'theme[name]', THEME_NAME_MAX, "the Platform's name");
  if (change.logo !== undefined) next.logo = logo(change.logo);
  if (change.mode !== undefined) {
    if (change.mode !== 'light' && change.mode !== 'dark' && change.mode !== 'auto')
      throw invalid('theme[mode]', 'send light, dark or auto (the viewer’s system setting).');
    next.mode = change.mode;
  }
  return next;
}

export function themeOf(stored: object | null | undefined): PortalTheme {
  return { ...DEFAULT_THEME, ...(stored ?? {}) } as PortalTheme;
}

/** The Platform's merchant (today each Platform has exactly one: its first) and the Platform. */
async function rows(db: Db, platformId: string) {
  const [row] = await db
    .select({
      merchantId: merchants.id,
      displayName: merchants.displayName,
      platformName: platforms.name,
      requireTwoFactor: platforms.requireTwoFactor,
      asymmetricSignatureDefault: platforms.asymmetricSignatureDefault,
      theme: platforms.portalTheme,
      alerts: platforms.alertSettings,
    })
    .from(merchants)
    .innerJoin(platforms, eq(platforms.id, merchants.platformId))
    .where(eq(merchants.platformId, platformId))
    .orderBy(asc(merchants.createdAt), asc(merchants.id))
    .limit(1);
  if (!row) throw new AppError('invalid_state', 'merchant_missing', 'This Platform has no merchant; ask the operator to create one.');
  return row;
}

const view = (r: Awaited<ReturnType<typeof rows>>): PlatformSettings => ({
  object: 'platform_settings',
  display_name: r.displayName,
  platform_name: r.platformName,
  require_two_factor: r.requireTwoFactor,
  asymmetric_signature_default: r.asymmetricSignatureDefault,
  theme: themeOf(r.theme),
  alerts: alertSettingsOf(r.alerts),
});

export async function getPlatformSettings(db: Db, platformId: string): Promise<PlatformSettings> {
  return view(await rows(db, platformId));
}

/** Only the fields sent change; the audit entry names each changed field and its new value. */
export async function updatePlatformSettings(
  db: Db,
  audit: AuditTrail,
  subject: PlatformSubject,
  change: SettingsChange,
): Promise<PlatformSettings> {
  const current = await rows(db, subject.platformId);
  const next = {
    displayName:
      change.display_name === undefined
        ? current.displayName
        : text(change.display_name, 'display_name', DISPLAY_NAME_MAX, 'the Platform name'),
    requireTwoFactor: change.require_two_factor ?? current.requireTwoFactor,
    asymmetricSignatureDefault: change.asymmetric_signature_default ?? current.asymmetricSignatureDefault,
    theme: mergeTheme(themeOf(current.theme), change.theme),
    alerts: mergeAlertSettings(alertSettingsOf(current.alerts), change.alerts),
  };
  const changes: Record<string, unknown> = {};
  if (next.displayName !== current.displayName) changes.display_name = next.displayName;
  if (next.requireTwoFactor !== current.requireTwoFactor) changes.require_two_factor = next.requireTwoFactor;
  if (next.asymmetricSignatureDefault !== current.asymmetricSignatureDefault)
    changes.asymmetric_signature_default = next.asymmetricSignatureDefault;
  const before = themeOf(current.theme);
  for (const key of Object.keys(next.theme) as (keyof PortalTheme)[]) {
    // A logo is named by its size, not copied into the trail.
    if (next.theme[key] !== before[key])
      changes[`theme.${key}`] = key === 'logo' && next.theme.logo ? `(${next.theme.logo.length} characters)` : next.theme[key];
  }
  const alertsBefore = alertSettingsOf(current.alerts);
  for (const key of Object.keys(next.alerts) as (keyof AlertSettings)[])
    if (JSON.stringify(next.alerts[key]) !== JSON.stringify(alertsBefore[key])) changes[`alerts.${key}`] = next.alerts[key];
  await db.transaction(async (tx) => {
    await tx.update(merchants).set({ displayName: next.displayName }).where(eq(merchants.id, current.merchantId));
    await tx
      .update(platforms)
      .set({
        requireTwoFactor: next.requireTwoFactor,
        asymmetricSignatureDefault: next.asymmetricSignatureDefault,
        portalTheme: next.theme,
        alertSettings: next.alerts,
      })
      .where(eq(platforms.id, subject.platformId));
    await audit.record(tx, subject, { action: 'settings.update', resourceType: 'platform', resourceId: subject.platformId, changes });
  });
  return view({
    ...current,
    displayName: next.displayName,
    requireTwoFactor: next.requireTwoFactor,
    asymmetricSignatureDefault: next.asymmetricSignatureDefault,
    theme: next.theme,
    alerts: next.alerts,
  });
}

/** The theme alone (every page load reads it with the session). */
export async function getPortalTheme(db: Db, platformId: string): Promise<PortalTheme> {
  const [row] = await db.select({ theme: platforms.portalTheme }).from(platforms).where(eq(platforms.id, platformId));
  return themeOf(row?.theme);
}

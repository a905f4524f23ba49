import { type ChangeEvent, type FormEvent, useCallback, useEffect, useState } from 'react';
import { api, type SettingsChange, type ShopSettings, type Theme } from '../api.ts';
import { useSession } from '../session.tsx';
import { LOGO_DATA_URL } from '../theme.ts';
import { Crumbs, ErrorBox, Loading, Notice } from '../ui.tsx';

/** The server's limit for a logo (PNG, JPEG or WebP). */
export const LOGO_MAX_BYTES = 64 * 1024;
const LOGO_TYPES = ['image/png', 'image/jpeg', 'image/webp'];
const LOGO_RULE = 'The logo must be a PNG, JPEG or WebP image of at most 64 KiB.';
/** The accent colour the page uses when the Platform has none (styles.css's --accent). */
const DEFAULT_ACCENT = '#4f46e5';

/** A file chosen for the logo, as a data: URL, or why it can't be used. */
export function readLogo(file: File): Promise<string> {
  if (!LOGO_TYPES.includes(file.type)) return Promise.reject(new Error(`${LOGO_RULE} This file is ${file.type || 'of an unknown type'}.`));
  if (file.size > LOGO_MAX_BYTES)
    return Promise.reject(new Error(`${LOGO_RULE} This one is ${Math.ceil(file.size / 1024)} KiB: make it smaller first.`));
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => {
      const url = String(reader.result);
      if (LOGO_DATA_URL.test(url)) resolve(url);
      else reject(new Error(LOGO_RULE));
    };
    reader.onerror = () => reject(new Error('The file could not be read.'));
    reader.readAsDataURL(file);
  });
}

/**
 * The Platform's settings (admins): the shop's name on the hosted checkout page, whether the
 * team must use two-factor sign-in, and the portal's look (accent colour, name or logo, light or
 * dark), inside the payment service's portal and here.
 */
export function Settings() {
  const { session, onThemeChange } = useSession();
  const [settings, setSettings] = useState<ShopSettings | null>(null);
  const [name, setName] = useState('');
  const [requireTwoFactor, setRequireTwoFactor] = useState(false);
  const [asymmetricDefault, setAsymmetricDefault] = useState(false);
  const [theme, setTheme] = useState<Theme>(session.theme);
  const [mailLive, setMailLive] = useState(true);
  const [mailSandbox, setMailSandbox] = useState(false);
  const [alertEmails, setAlertEmails] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [logoError, setLogoError] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  const [busy, setBusy] = useState(false);

  const show = useCallback((s: ShopSettings) => {
    setSettings(s);
    setName(s.display_name ?? '');
    setRequireTwoFactor(s.require_two_factor);
    setAsymmetricDefault(s.asymmetric_signature_default);
    setTheme(s.theme);
    setMailLive(s.alerts.mail_live);
    setMailSandbox(s.alerts.mail_sandbox);
    setAlertEmails(s.alerts.emails.join('\n'));
  }, []);
  useEffect(() => {
    api.settings().then(show, setError);
  }, [show]);

  const edit = (change: () => void) => {
    change();
    setSaved(false);
  };

  /** Only what differs from what was read is sent (the logo is the bulk of a request). */
  const changes = (s: ShopSettings): SettingsChange => {
    const c: SettingsChange = {};
    const displayName = name.trim() === '' ? null : name.trim();
    if (displayName !== s.display_name) c.display_name = displayName;
    if (requireTwoFactor !== s.require_two_factor) c.require_two_factor = requireTwoFactor;
    if (asymmetricDefault !== s.asymmetric_signature_default) c.asymmetric_signature_default = asymmetricDefault;
    const t: NonNullable<SettingsChange['theme']> = {};
    if (theme.accent_color !== s.theme.accent_color) t.accent_color = theme.accent_color;
    const themeName = theme.name?.trim() ? theme.name.trim() : null;
    if (themeName !== s.theme.name) t.name = themeName;
    if (theme.logo !== s.theme.logo) t.logo = theme.logo;
    if (theme.mode !== s.theme.mode) t.mode = theme.mode;
    if (Object.keys(t).length) c.theme = t;
    const a: NonNullable<SettingsChange['alerts']> = {};
    if (mailLive !== s.alerts.mail_live) a.mail_live = mailLive;
    if (mailSandbox !== s.alerts.mail_sandbox) a.mail_sandbox = mailSandbox;
    const emails = alertEmails
      .split(/[\s,]+/)
      .map((x) => x.trim())
      .filter(Boolean);
    if (emails.join(',') !== s.alerts.emails.join(',')) a.emails = emails;
    if (Object.keys(a).length) c.alerts = a;
    return c;
  };

  const save = async (e: FormEvent) => {
    e.preventDefault();
    if (!settings) return;
    setBusy(true);
    setError(null);
    setSaved(false);
    try {
      const s = await api.updateSettings(changes(settings));
      show(s);
      onThemeChange(s.theme);
      setSaved(true);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  const chooseLogo = async (e: ChangeEvent<HTMLInputElement>) => {
    const file = e.target.files?.[0];
    e.target.value = '';
    if (!file) return;
    setLogoError(null);
    try {
      const logo = await readLogo(file);
      edit(() => setTheme({ ...theme, logo }));
    } catch (err) {
      setLogoError(err instanceof Error ? err.message : LOGO_RULE);
    }
  };

  if (!settings) return error ? <ErrorBox error={error} /> : <Loading />;
  return (
    <section>
      <Crumbs items={[{ label: 'Webhooks', to: '/webhooks' }, { label: 'Settings' }]} />
      <h1>Settings</h1>
      <form className="settings" onSubmit={(e) => void save(e)} aria-label="Shop settings">
        <div className="card form">
          <h2>Checkout page</h2>
          <label htmlFor="display-name">Shop name shown to customers</label>
          <input
            id="display-name"
            type="text"
            maxLength={100}
            value={name}
            placeholder={settings.platform_name}
            onChange={(e) => edit(() => setName(e.target.value))}
          />
          <p className="muted small">Leave it empty to show “{settings.platform_name}”, your Platform’s name.</p>
        </div>

        {session.password_sign_in && (
          <div className="card form">
            <h2>Sign-in</h2>
            <label className="check">
              <input type="checkbox" checked={requireTwoFactor} onChange={(e) => edit(() => setRequireTwoFactor(e.target.checked))} />{' '}
              Require two-factor sign-in for everyone
            </label>
            <p className="muted small">
              Each portal user then signs in with a code from an authenticator app too. Those without it set it up at their next sign-in,
              before anything else.
            </p>
          </div>
        )}

        <div className="card form">
          <h2>Webhook signatures</h2>
          <label className="check">
            <input type="checkbox" checked={asymmetricDefault} onChange={(e) => edit(() => setAsymmetricDefault(e.target.checked))} /> Sign
            new endpoints with ed25519 too
          </label>
          <p className="muted small">
            Endpoints added from now on (unless added with it off) also carry a signature receivers verify with a public key, listed in your
            Platform’s JWKS document at <code>/platforms/{session.platform.id}/jwks.json</code>. Existing endpoints keep their setting.
          </p>
        </div>

        <div className="card form">
          <h2>Endpoint health mail</h2>
          <label className="check">
            <input type="checkbox" checked={mailLive} onChange={(e) => edit(() => setMailLive(e.target.checked))} /> Mail the team about
            live endpoints
          </label>
          <label className="check">
            <input type="checkbox" checked={mailSandbox} onChange={(e) => edit(() => setMailSandbox(e.target.checked))} /> Mail the team
            about sandbox endpoints
          </label>
          <label htmlFor="alert-emails">Also mail these addresses (one a line)</label>
          <textarea id="alert-emails" rows={3} value={alertEmails} onChange={(e) => edit(() => setAlertEmails(e.target.value))} />
          <p className="muted small">
            When an endpoint starts failing, is about to be disabled, is disabled or recovers, its developers and admins get one mail (each
            can turn it off under Account), and so do these addresses.
          </p>
        </div>

        <fieldset className="card form theme-fields">
          <legend>
            <h2>Look</h2>
          </legend>
          <p className="muted small">How the portal looks to your team, here and inside your payment service’s dashboard.</p>
          <label htmlFor="accent-color">Accent colour</label>
          <div className="inline-form">
            <input
              id="accent-color"
              type="color"
              value={theme.accent_color ?? DEFAULT_ACCENT}
              onChange={(e) => edit(() => setTheme({ ...theme, accent_color: e.target.value.toLowerCase() }))}
              aria-describedby="accent-hint"
            />
            <span className="mono small" id="accent-hint">
              {theme.accent_color ?? `${DEFAULT_ACCENT} (default)`}
            </span>
            {theme.accent_color && (
              <button type="button" onClick={() => edit(() => setTheme({ ...theme, accent_color: null }))}>
                Use the default colour
              </button>
            )}
          </div>
          <label htmlFor="theme-name">Brand name</label>
          <input
            id="theme-name"
            type="text"
            maxLength={60}
            value={theme.name ?? ''}
            placeholder={settings.platform_name}
            onChange={(e) => edit(() => setTheme({ ...theme, name: e.target.value }))}
          />
          <p className="muted small">Shown in the portal’s corner when there is no logo; empty shows “{settings.platform_name}”.</p>
          <label htmlFor="theme-logo">Logo</label>
          <div className="inline-form">
            {theme.logo && LOGO_DATA_URL.test(theme.logo) && (
              <img className="logo-preview" src={theme.logo} alt={`Logo of ${theme.name?.trim() || settings.platform_name}`} />
            )}
            <input
              id="theme-logo"
              type="file"
              accept={LOGO_TYPES.join(',')}
              aria-describedby="logo-hint"
              onChange={(e) => void chooseLogo(e)}
            />
            {theme.logo && (
              <button type="button" onClick={() => edit(() => setTheme({ ...theme, logo: null }))}>
                Remove logo
              </button>
            )}
          </div>
          <p className="muted small" id="logo-hint">
            PNG, JPEG or WebP, at most 64 KiB; about 32 pixels high is shown.
          </p>
          {logoError && (
            <p className="field-error" role="alert">
              {logoError}
            </p>
          )}
          <label htmlFor="theme-mode">Colour mode</label>
          <select
            id="theme-mode"
            value={theme.mode}
            onChange={(e) => edit(() => setTheme({ ...theme, mode: e.target.value as Theme['mode'] }))}
          >
            <option value="auto">Follow the viewer’s system setting</option>
            <option value="light">Light</option>
            <option value="dark">Dark</option>
          </select>
        </fieldset>

        <ErrorBox error={error} />
        {saved && <Notice kind="success">Saved: the checkout page shows “{settings.display_name ?? settings.platform_name}”.</Notice>}
        <div className="actions">
          <button type="submit" className="primary" disabled={busy}>
            Save
          </button>
        </div>
      </form>
    </section>
  );
}

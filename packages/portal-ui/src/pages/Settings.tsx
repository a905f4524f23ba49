import { type FormEvent, useEffect, useState } from 'react';
import { api, type ShopSettings } from '../api.ts';
import { ErrorBox, Loading, Notice } from '../ui.tsx';

/** The shop's settings: today its name on the hosted checkout page. */
export function Settings() {
  const [settings, setSettings] = useState<ShopSettings | null>(null);
  const [name, setName] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [saved, setSaved] = useState(false);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    api.settings().then((s) => {
      setSettings(s);
      setName(s.display_name ?? '');
    }, setError);
  }, []);

  const save = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setSaved(false);
    try {
      const s = await api.updateSettings(name.trim() === '' ? null : name.trim());
      setSettings(s);
      setName(s.display_name ?? '');
      setSaved(true);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  if (!settings) return error ? <ErrorBox error={error} /> : <Loading />;
  return (
    <section>
      <h1>Settings</h1>
      <form className="card form" onSubmit={(e) => void save(e)} aria-label="Shop settings">
        <h2>Checkout page</h2>
        <label htmlFor="display-name">Shop name shown to customers</label>
        <input
          id="display-name"
          type="text"
          maxLength={100}
          value={name}
          placeholder={settings.platform_name}
          onChange={(e) => {
            setName(e.target.value);
            setSaved(false);
          }}
        />
        <p className="muted small">Leave it empty to show “{settings.platform_name}”, your Platform’s name.</p>
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

import { useState, type FormEvent } from 'react';
import { api, type Session } from '../api.ts';
import { ErrorBox } from '../ui.tsx';

export function SignIn({ onSignedIn }: { onSignedIn: (s: Session) => void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      onSignedIn(await api.signIn(email, password));
    } catch (err) {
      setError(err);
      setPassword('');
    } finally {
      setBusy(false);
    }
  };

  return (
    <main className="center">
      <form className="card signin" onSubmit={(e) => void submit(e)}>
        <div className="brand big">payhooks</div>
        <h1>Sign in to the Merchant Portal</h1>
        <ErrorBox error={error} />
        <label htmlFor="email">Email</label>
        <input
          id="email"
          name="email"
          type="email"
          autoComplete="username"
          required
          // biome-ignore lint/a11y/noAutofocus: signing in is the page's only task, and the email field is where it starts
          autoFocus
          value={email}
          onChange={(e) => setEmail(e.target.value)}
        />
        <label htmlFor="password">Password</label>
        <input
          id="password"
          name="password"
          type="password"
          autoComplete="current-password"
          required
          value={password}
          onChange={(e) => setPassword(e.target.value)}
        />
        <button type="submit" className="primary" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        <p className="muted small">
          Accounts are created by your payhooks operator (<code>payhooks admin create-user</code>).
        </p>
      </form>
    </main>
  );
}

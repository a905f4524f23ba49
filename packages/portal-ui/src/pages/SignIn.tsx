import { useState, type FormEvent } from 'react';
import { ApiError, api, type Session, type TwoFactorChallenge } from '../api.ts';
import { ErrorBox, Notice } from '../ui.tsx';

const SIGN_IN_OFF = 'Sign-in here is turned off: open Webhooks from your dashboard.';

/**
 * Email and password; then, for a user with two-factor sign-in on, the code from their app (or
 * one of their recovery codes). `reason`: why the previous session ended, in the server's words.
 */
export function SignIn({
  reason,
  off: knownOff = false,
  onSignedIn,
}: {
  reason: string | null;
  /** Already known (from the last session): password sign-in is turned off here. */
  off?: boolean;
  onSignedIn: (s: Session) => void;
}) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [challenge, setChallenge] = useState<TwoFactorChallenge | null>(null);
  const [code, setCode] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [off, setOff] = useState(knownOff);
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const answer = await api.signIn(email, password);
      setPassword('');
      if (answer.object === 'two_factor_challenge') setChallenge(answer);
      else onSignedIn(answer);
    } catch (err) {
      if (err instanceof ApiError && err.code === 'password_sign_in_disabled') setOff(true);
      else setError(err);
      setPassword('');
    } finally {
      setBusy(false);
    }
  };

  const submitCode = async (e: FormEvent) => {
    e.preventDefault();
    if (!challenge) return;
    setBusy(true);
    setError(null);
    try {
      onSignedIn(await api.signInTwoFactor(challenge.challenge, code.trim()));
    } catch (err) {
      setCode('');
      if (err instanceof ApiError && err.code === 'two_factor_challenge_expired') {
        setChallenge(null); // start again from the password
      }
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  if (off)
    return (
      <main className="center">
        <div className="card signin">
          <div className="brand big">payhooks</div>
          <h1>Sign in to the Merchant Portal</h1>
          {reason && <Notice kind="warning">{reason}</Notice>}
          <Notice kind="info">
            <span data-testid="sign-in-off">{SIGN_IN_OFF}</span>
          </Notice>
        </div>
      </main>
    );

  if (challenge)
    return (
      <main className="center">
        <form className="card signin" onSubmit={(e) => void submitCode(e)} aria-label="Two-factor sign-in">
          <div className="brand big">payhooks</div>
          <h1>Two-factor sign-in</h1>
          <ErrorBox error={error} />
          <label htmlFor="two-factor-code">Authentication code</label>
          <input
            id="two-factor-code"
            name="code"
            type="text"
            autoComplete="one-time-code"
            autoCapitalize="none"
            spellCheck={false}
            maxLength={20}
            required
            // biome-ignore lint/a11y/noAutofocus: the code is the only thing this step asks for
            autoFocus
            aria-describedby="two-factor-hint"
            value={code}
            onChange={(e) => setCode(e.target.value)}
          />
          <p id="two-factor-hint" className="muted small">
            The 6-digit code your authenticator app shows now, or one of your recovery codes (such as abcde-fghjk).
          </p>
          <button type="submit" className="primary" disabled={busy}>
            {busy ? 'Checking…' : 'Verify'}
          </button>
          <button
            type="button"
            className="link-button"
            onClick={() => {
              setChallenge(null);
              setCode('');
              setError(null);
            }}
          >
            Start over
          </button>
        </form>
      </main>
    );

  return (
    <main className="center">
      <form className="card signin" onSubmit={(e) => void submit(e)}>
        <div className="brand big">payhooks</div>
        <h1>Sign in to the Merchant Portal</h1>
        {reason && (
          <Notice kind="warning">
            <span data-testid="session-ended-reason">{reason}</span>
          </Notice>
        )}
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
          No account yet? An admin of your team invites you, or your payhooks operator creates one (<code>payhooks admin create-user</code>
          ).
        </p>
      </form>
    </main>
  );
}

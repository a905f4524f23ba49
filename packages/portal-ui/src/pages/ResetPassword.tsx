import { useState, type FormEvent } from 'react';
import { api, type PasswordResetPreview } from '../api.ts';
import { useLinkPreview } from '../fragment.ts';
import { NewPasswordField, tooShort } from '../new-password.tsx';
import { Link } from '../router.tsx';
import { ErrorBox, Loading, Notice, Time } from '../ui.tsx';

/**
 * `/portal/reset-password#token=…`: the link an operator's reset gives a user. The page reads
 * which account it is for, then takes the new password; the user signs in with it after.
 */
export function ResetPasswordPage() {
  const { token, preview, error } = useLinkPreview<PasswordResetPreview>(
    api.inspectPasswordReset,
    'This reset link is incomplete: open the whole link again.',
  );
  const [password, setPassword] = useState('');
  const [formError, setFormError] = useState<unknown>(null);
  const [done, setDone] = useState(false);
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!token) return;
    const short = tooShort(password);
    if (short) return setFormError(short);
    setBusy(true);
    setFormError(null);
    try {
      await api.resetPassword(token, password);
      setPassword('');
      setDone(true);
    } catch (err) {
      setFormError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main className="center">
      <div className="card signin">
        <div className="brand big">payhooks</div>
        <h1>Choose a new password</h1>
        {done ? (
          <>
            <Notice kind="success">Your password is changed. Sign in with it now.</Notice>
            <Link to="/" className="button primary">
              Go to sign-in
            </Link>
          </>
        ) : !preview ? (
          error ? (
            <ErrorBox error={error} />
          ) : (
            <Loading />
          )
        ) : (
          <form className="stack" onSubmit={(e) => void submit(e)} aria-label="Password reset">
            <p>
              For <strong>{preview.email}</strong>. The link works once, until <Time iso={preview.expires_at} />.
            </p>
            <ErrorBox error={formError} />
            <input type="email" hidden readOnly value={preview.email} autoComplete="username" />
            <NewPasswordField id="new-password" label="New password" value={password} onChange={setPassword} />
            <button type="submit" className="primary" disabled={busy}>
              {busy ? 'Saving…' : 'Set new password'}
            </button>
          </form>
        )}
      </div>
    </main>
  );
}

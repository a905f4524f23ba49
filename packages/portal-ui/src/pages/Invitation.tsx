import { useState, type FormEvent } from 'react';
import { api, type InvitationPreview, type Session } from '../api.ts';
import { useLinkPreview } from '../fragment.ts';
import { ErrorBox, Loading, Time } from '../ui.tsx';
import { NewPasswordField, tooShort } from '../new-password.tsx';

/**
 * `/portal/invitation#token=…`: the link an admin's invitation sends. The page reads what it is
 * for (the email, the role, the team), then the new user chooses a password and is signed in.
 */
export function InvitationPage({ onSignedIn }: { onSignedIn: (s: Session) => void }) {
  const { token, preview, error } = useLinkPreview<InvitationPreview>(
    api.inspectInvitation,
    'This invitation link is incomplete: open the whole link again.',
  );
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const [formError, setFormError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!token) return;
    const short = tooShort(password);
    if (short) return setFormError(short);
    setBusy(true);
    setFormError(null);
    try {
      onSignedIn(await api.acceptInvitation(token, password, name.trim() || null));
    } catch (err) {
      setFormError(err);
      setBusy(false);
    }
  };

  return (
    <main className="center">
      <div className="card signin">
        <div className="brand big">payhooks</div>
        {!preview ? (
          <>
            <h1>Invitation</h1>
            {error ? <ErrorBox error={error} /> : <Loading />}
          </>
        ) : (
          <form className="stack" onSubmit={(e) => void submit(e)} aria-label="Accept the invitation">
            <h1>Join {preview.platform_name}</h1>
            <p>
              You are invited to the Webhooks section of <strong>{preview.platform_name}</strong> as <strong>{preview.role}</strong>. The
              link works once, until <Time iso={preview.expires_at} />.
            </p>
            <ErrorBox error={formError} />
            <label htmlFor="invite-email">Email</label>
            <input id="invite-email" type="email" readOnly value={preview.email} autoComplete="username" />
            <label htmlFor="invite-name">
              Your name <span className="muted">(optional)</span>
            </label>
            <input
              id="invite-name"
              type="text"
              maxLength={100}
              autoComplete="name"
              value={name}
              onChange={(e) => setName(e.target.value)}
            />
            <NewPasswordField id="invite-password" label="Choose a password" value={password} onChange={setPassword} />
            <button type="submit" className="primary" disabled={busy}>
              {busy ? 'Joining…' : 'Accept invitation'}
            </button>
          </form>
        )}
      </div>
    </main>
  );
}

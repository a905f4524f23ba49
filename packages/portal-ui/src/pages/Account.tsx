import { useEffect, useRef, useState, type FormEvent } from 'react';
import { api, type Account, type TwoFactorSetup } from '../api.ts';
import { Link } from '../router.tsx';
import { useSession } from '../session.tsx';
import { Crumbs, ErrorBox, Loading, Notice, Time } from '../ui.tsx';
import { NewPasswordField, tooShort } from '../new-password.tsx';

/** `/account` (password sessions): one's own password and two-factor sign-in. */
export function AccountPage() {
  const { session, refresh } = useSession();
  const [account, setAccount] = useState<Account | null>(null);
  const [error, setError] = useState<unknown>(null);
  const setupRequired = session.needs_two_factor_setup;

  useEffect(() => {
    api.account().then(setAccount, setError);
  }, []);

  if (!account) return error ? <ErrorBox error={error} /> : <Loading />;
  return (
    <section className="account">
      <Crumbs items={[{ label: 'Webhooks', to: '/webhooks' }, { label: 'Account' }]} />
      <h1>Account</h1>
      {setupRequired && (
        <Notice kind="warning">
          <span data-testid="two-factor-required">
            Your team requires two-factor sign-in. Set it up below to continue: the rest of the portal opens once it is on.
          </span>
        </Notice>
      )}
      <dl className="facts card">
        <div>
          <dt>Email</dt>
          <dd>{account.email}</dd>
        </div>
        {account.name && (
          <div>
            <dt>Name</dt>
            <dd>{account.name}</dd>
          </div>
        )}
        <div>
          <dt>Role</dt>
          <dd>{account.role}</dd>
        </div>
        <div>
          <dt>Password changed</dt>
          <dd>{account.password_changed_at ? <Time iso={account.password_changed_at} /> : <span className="muted">never</span>}</dd>
        </div>
      </dl>
      <TwoFactor
        account={account}
        onChange={(next) => {
          setAccount(next);
          if (setupRequired && next.two_factor.enabled) refresh();
        }}
      />
      {!setupRequired && account.role !== 'viewer' && <HealthMail account={account} onChange={setAccount} />}
      {!setupRequired && <PasswordForm onChanged={setAccount} />}
    </section>
  );
}

/** Mail when one of the Platform's endpoints starts failing, is about to be disabled, is disabled or recovers. */
function HealthMail({ account, onChange }: { account: Account; onChange: (a: Account) => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const toggle = async (on: boolean) => {
    setBusy(true);
    setError(null);
    try {
      onChange(await api.setHealthMail(on));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section className="card" aria-labelledby="health-mail-title">
      <h2 id="health-mail-title">Endpoint health mail</h2>
      <label className="inline">
        <input
          type="checkbox"
          checked={account.health_mail}
          disabled={busy}
          onChange={(e) => void toggle(e.target.checked)}
          data-testid="health-mail"
        />{' '}
        Mail me when an endpoint starts failing, is about to be disabled, is disabled or recovers
      </label>
      <ErrorBox error={error} />
    </section>
  );
}

function PasswordForm({ onChanged }: { onChanged: (a: Account) => void }) {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState(false);
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setDone(false);
    const short = tooShort(next, 'a new password');
    if (short) {
      setError(short);
      return;
    }
    setBusy(true);
    setError(null);
    try {
      onChanged(await api.changePassword(current, next));
      setDone(true);
      setCurrent('');
      setNext('');
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form className="card form" onSubmit={(e) => void submit(e)} aria-label="Change password">
      <h2>Password</h2>
      <input type="text" hidden readOnly autoComplete="username" />
      <label htmlFor="current-password">Current password</label>
      <input
        id="current-password"
        type="password"
        autoComplete="current-password"
        required
        value={current}
        onChange={(e) => setCurrent(e.target.value)}
      />
      <NewPasswordField id="account-new-password" label="New password" value={next} onChange={setNext} />
      <ErrorBox error={error} />
      {done && <Notice kind="success">Password changed. Your other sessions were signed out.</Notice>}
      <div className="actions">
        <button type="submit" className="primary" disabled={busy}>
          Change password
        </button>
      </div>
    </form>
  );
}

type Step = { kind: 'idle' } | { kind: 'setup'; setup: TwoFactorSetup } | { kind: 'password'; action: 'disable' | 'codes' };

/**
 * Two-factor sign-in: Set up shows the secret as a QR code and as text; a code from the app
 * turns it on, and the 10 recovery codes are shown once. Turning it off and new recovery codes
 * both take the password again.
 */
function TwoFactor({ account, onChange }: { account: Account; onChange: (a: Account) => void }) {
  const [step, setStep] = useState<Step>({ kind: 'idle' });
  const [codes, setCodes] = useState<string[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const tf = account.two_factor;

  const run = async (what: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    setNotice(null);
    try {
      await what();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="card" aria-labelledby="two-factor-title" data-two-factor={tf.enabled ? 'on' : 'off'}>
      <h2 id="two-factor-title">Two-factor sign-in</h2>
      <p>
        {tf.enabled ? (
          <>
            <span className="badge status-enabled">On</span> Signing in asks for a code from your authenticator app.{' '}
            <span data-testid="recovery-codes-left">
              {tf.recovery_codes_left} recovery {tf.recovery_codes_left === 1 ? 'code' : 'codes'} left.
            </span>
          </>
        ) : (
          <>
            <span className="badge status-disabled">Off</span> Add a code from an authenticator app (1Password, Google Authenticator, …) to
            your password.
          </>
        )}
      </p>
      <ErrorBox error={error} />
      {notice && <Notice kind="success">{notice}</Notice>}
      {codes && <RecoveryCodesPanel codes={codes} onDone={() => setCodes(null)} />}

      {step.kind === 'idle' && !codes && (
        <div className="actions wrap">
          {!tf.enabled && (
            <button
              type="button"
              className="primary"
              disabled={busy}
              onClick={() => void run(async () => setStep({ kind: 'setup', setup: await api.startTwoFactor() }))}
            >
              Set up
            </button>
          )}
          {tf.enabled && (
            <button type="button" disabled={busy} onClick={() => setStep({ kind: 'password', action: 'codes' })}>
              New recovery codes…
            </button>
          )}
          {tf.enabled && !tf.required && (
            <button type="button" className="danger" disabled={busy} onClick={() => setStep({ kind: 'password', action: 'disable' })}>
              Turn off…
            </button>
          )}
          {tf.enabled && tf.required && <span className="muted small">Your team requires it, so it stays on.</span>}
        </div>
      )}

      {step.kind === 'setup' && (
        <SetupForm
          setup={step.setup}
          busy={busy}
          onCancel={() => setStep({ kind: 'idle' })}
          onCode={(code) =>
            void run(async () => {
              const issued = await api.enableTwoFactor(code);
              setCodes(issued.codes);
              setStep({ kind: 'idle' });
              onChange(await api.account());
            })
          }
        />
      )}

      {step.kind === 'password' && (
        <PasswordStep
          action={step.action}
          busy={busy}
          onCancel={() => setStep({ kind: 'idle' })}
          onPassword={(password) =>
            void run(async () => {
              if (step.action === 'disable') {
                onChange(await api.disableTwoFactor(password));
                setNotice('Two-factor sign-in is off.');
              } else {
                setCodes((await api.newRecoveryCodes(password)).codes);
                onChange(await api.account());
              }
              setStep({ kind: 'idle' });
            })
          }
        />
      )}
    </section>
  );
}

function SetupForm({
  setup,
  busy,
  onCode,
  onCancel,
}: {
  setup: TwoFactorSetup;
  busy: boolean;
  onCode: (code: string) => void;
  onCancel: () => void;
}) {
  const [qr, setQr] = useState<string | null>(null);
  const [code, setCode] = useState('');
  useEffect(() => {
    let live = true;
    // A data: URL image (the CSP allows img data:), drawn here: the secret never leaves the page.
    // The encoder is loaded only by this step (its own chunk).
    import('qrcode')
      .then((qrcode) => qrcode.toDataURL(setup.otpauth_uri, { margin: 1, width: 200, errorCorrectionLevel: 'M' }))
      .then(
        (url) => live && setQr(url),
        () => live && setQr(null),
      );
    return () => {
      live = false;
    };
  }, [setup.otpauth_uri]);
  const grouped = setup.secret.replace(/(.{4})/g, '$1 ').trim();
  return (
    <form
      className="setup"
      onSubmit={(e) => {
        e.preventDefault();
        onCode(code.trim());
      }}
      aria-label="Set up two-factor sign-in"
    >
      <ol className="steps">
        <li>
          Scan this QR code with your authenticator app.
          <div className="qr">{qr ? <img src={qr} alt="QR code of your two-factor secret" width={200} height={200} /> : <Loading />}</div>
          <p className="small">
            Or enter this key by hand: <code data-testid="two-factor-secret">{grouped}</code>
          </p>
        </li>
        <li>
          <label htmlFor="enable-code">Enter the 6-digit code the app shows</label>
          <div className="inline-form">
            <input
              id="enable-code"
              type="text"
              inputMode="numeric"
              autoComplete="one-time-code"
              pattern="[0-9 ]{6,7}"
              maxLength={7}
              required
              value={code}
              onChange={(e) => setCode(e.target.value)}
            />
            <button type="submit" className="primary" disabled={busy}>
              Turn on
            </button>
            <button type="button" onClick={onCancel}>
              Cancel
            </button>
          </div>
        </li>
      </ol>
    </form>
  );
}

function PasswordStep({
  action,
  busy,
  onPassword,
  onCancel,
}: {
  action: 'disable' | 'codes';
  busy: boolean;
  onPassword: (password: string) => void;
  onCancel: () => void;
}) {
  const [password, setPassword] = useState('');
  return (
    <form
      className="confirm-inline"
      onSubmit={(e) => {
        e.preventDefault();
        onPassword(password);
      }}
      onKeyDown={(e) => e.key === 'Escape' && onCancel()}
      aria-label={action === 'disable' ? 'Turn off two-factor sign-in' : 'New recovery codes'}
    >
      <p>
        {action === 'disable'
          ? 'Turn two-factor sign-in off? Signing in then takes only your password.'
          : 'New recovery codes replace the ones you have: the old ones stop working.'}
      </p>
      <div className="inline-form">
        <label htmlFor="confirm-password">Your password</label>
        <input
          id="confirm-password"
          type="password"
          autoComplete="current-password"
          required
          // biome-ignore lint/a11y/noAutofocus: the step replaces the button just pressed and asks for this one thing
          autoFocus
          value={password}
          onChange={(e) => setPassword(e.target.value)}
        />
        <button type="submit" className={action === 'disable' ? 'danger' : 'primary'} disabled={busy}>
          {action === 'disable' ? 'Turn off' : 'Get new codes'}
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function RecoveryCodesPanel({ codes, onDone }: { codes: string[]; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  const ref = useRef<HTMLOListElement>(null);
  const { session } = useSession();
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(`${codes.join('\n')}\n`);
      setCopied(true);
    } catch {
      // no clipboard access (plain http): select the list for Ctrl+C
      const range = document.createRange();
      if (ref.current) range.selectNodeContents(ref.current);
      document.getSelection()?.removeAllRanges();
      document.getSelection()?.addRange(range);
    }
  };
  return (
    <section className="card secret" aria-label="Recovery codes" data-testid="recovery-codes">
      <h3>Your recovery codes</h3>
      <p>
        <strong>Save them now: you won’t see them again.</strong> Each one signs you in once in place of a code from your app, if you lose
        it.
      </p>
      <ol className="codes mono" ref={ref}>
        {codes.map((c) => (
          <li key={c}>{c}</li>
        ))}
      </ol>
      <div className="actions">
        <button type="button" className="primary" onClick={() => void copy()}>
          {copied ? 'Copied' : 'Copy codes'}
        </button>
        <button type="button" onClick={onDone}>
          I saved them
        </button>
        {!session.needs_two_factor_setup && <Link to="/webhooks/endpoints">Go to your endpoints</Link>}
      </div>
    </section>
  );
}

/** The server's minimum (400 `password_too_short` below it); checked here first to save a round trip. */
export const PASSWORD_MIN = 12;

/** The page's own check before sending a new password (the server checks it too). */
export const tooShort = (password: string, what = 'a password') =>
  [...password].length < PASSWORD_MIN ? new Error(`Choose ${what} of at least ${PASSWORD_MIN} characters.`) : null;

/** A new password's field, with its hint: the invitation, reset and account forms. */
export function NewPasswordField({
  id,
  label,
  value,
  onChange,
}: {
  id: string;
  label: string;
  value: string;
  onChange: (value: string) => void;
}) {
  return (
    <>
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        type="password"
        autoComplete="new-password"
        required
        aria-describedby={`${id}-hint`}
        value={value}
        onChange={(e) => onChange(e.target.value)}
      />
      <p id={`${id}-hint`} className="hint">
        At least {PASSWORD_MIN} characters. A few unrelated words make a good one.
      </p>
    </>
  );
}

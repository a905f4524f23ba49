import { useCallback, useEffect, useRef, useState, type FormEvent } from 'react';
import { api, type CreatedInvitation, type Invitation, type Role, type TeamUser } from '../api.ts';
import { useSession } from '../session.tsx';
import { Confirm, Crumbs, ErrorBox, Loading, Notice, ScrollTable, Time } from '../ui.tsx';

export const ROLE_OPTIONS: Array<{ value: Role; label: string; hint: string }> = [
  { value: 'viewer', label: 'Viewer', hint: 'endpoints and the delivery log, read-only' },
  { value: 'developer', label: 'Developer', hint: 'also endpoints, secrets, test events and replays' },
  { value: 'admin', label: 'Admin', hint: 'also the team, settings and the audit log' },
];

/**
 * The team (admins): who can sign in to this Platform's portal and with which role; invitations
 * by email, whose link is shown once; open invitations, which can be revoked.
 */
export function Team() {
  const { session } = useSession();
  const [users, setUsers] = useState<TeamUser[] | null>(null);
  const [invitations, setInvitations] = useState<Invitation[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [removing, setRemoving] = useState<TeamUser | null>(null);
  const [busy, setBusy] = useState(false);

  const load = useCallback(() => {
    api.users().then((l) => setUsers(l.data), setError);
    api.invitations().then((l) => setInvitations(l.data), setError);
  }, []);
  useEffect(load, [load]);

  const act = async (what: () => Promise<unknown>, done: string) => {
    setBusy(true);
    setError(null);
    setNotice(null);
    try {
      await what();
      setNotice(done);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
      load();
    }
  };

  return (
    <section>
      <Crumbs items={[{ label: 'Webhooks', to: '/webhooks' }, { label: 'Team' }]} />
      <h1>Team</h1>
      <p className="muted">Who can sign in to {session.platform.name}’s Webhooks section, and what each can do.</p>
      <ErrorBox error={error} />
      {notice && <Notice kind="success">{notice}</Notice>}

      {removing && (
        <Confirm
          title={`Remove ${removing.email}?`}
          confirm="Remove user"
          keep="Cancel"
          busy={busy}
          onClose={() => setRemoving(null)}
          onConfirm={() =>
            void act(async () => {
              await api.removeUser(removing.id);
              setRemoving(null);
            }, `${removing.email} was removed and signed out.`)
          }
        >
          They are signed out at once and can’t sign in again unless invited anew. What they did stays in the audit log.
        </Confirm>
      )}

      <h2>Users</h2>
      {!users ? (
        <Loading />
      ) : (
        <ScrollTable>
          <table className="team">
            <thead>
              <tr>
                <th>User</th>
                <th>Role</th>
                <th className="hide-sm">Two-factor</th>
                <th className="hide-sm">Added</th>
                <th>
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {users.map((u) => {
                const self = u.id === session.user.id;
                return (
                  <tr key={u.id} data-user-id={u.id} data-email={u.email}>
                    <td>
                      <div className="strong">{u.name ?? u.email}</div>
                      {u.name && <div className="muted small">{u.email}</div>}
                      {self && <span className="tag">You</span>}
                    </td>
                    <td>
                      <select
                        aria-label={`Role of ${u.email}`}
                        value={u.role}
                        disabled={busy || self}
                        title={self ? 'Another admin can change your role.' : undefined}
                        onChange={(e) => {
                          const role = e.target.value as Role;
                          void act(() => api.changeRole(u.id, role), `${u.email} is now ${role}.`);
                        }}
                      >
                        {ROLE_OPTIONS.map((r) => (
                          <option key={r.value} value={r.value}>
                            {r.label}
                          </option>
                        ))}
                      </select>
                    </td>
                    <td className="hide-sm">{u.two_factor_enabled ? 'On' : <span className="muted">Off</span>}</td>
                    <td className="hide-sm nowrap">
                      <Time iso={u.created_at} />
                    </td>
                    <td>
                      {!self && (
                        <button
                          type="button"
                          className="danger"
                          disabled={busy}
                          onClick={() => setRemoving(u)}
                          aria-label={`Remove ${u.email}`}
                        >
                          Remove…
                        </button>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </ScrollTable>
      )}

      <InviteForm onInvited={load} />

      <h2>Open invitations</h2>
      {!invitations ? (
        <Loading />
      ) : invitations.length === 0 ? (
        <p className="empty">No open invitations.</p>
      ) : (
        <ScrollTable>
          <table className="invitations">
            <thead>
              <tr>
                <th>Email</th>
                <th>Role</th>
                <th className="hide-sm">Expires</th>
                <th>
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {invitations.map((i) => (
                <tr key={i.id} data-invitation-id={i.id} data-email={i.email}>
                  <td>{i.email}</td>
                  <td>{i.role}</td>
                  <td className="hide-sm nowrap">
                    <Time iso={i.expires_at} />
                  </td>
                  <td>
                    <button
                      type="button"
                      disabled={busy}
                      aria-label={`Revoke the invitation of ${i.email}`}
                      onClick={() =>
                        void act(() => api.revokeInvitation(i.id), `The invitation of ${i.email} was revoked: its link no longer works.`)
                      }
                    >
                      Revoke
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollTable>
      )}
    </section>
  );
}

/** Invite by email: the link is shown here once (copy it), and the page says whether it was emailed too. */
function InviteForm({ onInvited }: { onInvited: () => void }) {
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('viewer');
  const [created, setCreated] = useState<CreatedInvitation | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setCreated(null);
    try {
      setCreated(await api.invite(email.trim(), role));
      setEmail('');
      onInvited();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="card form invite-form" onSubmit={(e) => void submit(e)} aria-label="Invite a user">
      <h2>Invite someone</h2>
      <ErrorBox error={error} />
      <label htmlFor="team-invite-email">Email</label>
      <input id="team-invite-email" type="email" required maxLength={254} value={email} onChange={(e) => setEmail(e.target.value)} />
      <label htmlFor="team-invite-role">Role</label>
      <select id="team-invite-role" value={role} onChange={(e) => setRole(e.target.value as Role)} aria-describedby="invite-role-hint">
        {ROLE_OPTIONS.map((r) => (
          <option key={r.value} value={r.value}>
            {r.label}
          </option>
        ))}
      </select>
      <p id="invite-role-hint" className="hint">
        {ROLE_OPTIONS.find((r) => r.value === role)?.label}: {ROLE_OPTIONS.find((r) => r.value === role)?.hint}.
      </p>
      <div className="actions">
        <button type="submit" className="primary" disabled={busy}>
          {busy ? 'Inviting…' : 'Invite'}
        </button>
      </div>
      {created && <InvitationLink invitation={created} />}
    </form>
  );
}

function InvitationLink({ invitation }: { invitation: CreatedInvitation }) {
  const [copied, setCopied] = useState(false);
  const ref = useRef<HTMLInputElement>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(invitation.url);
      setCopied(true);
    } catch {
      ref.current?.select(); // no clipboard access (plain http): select it for Ctrl+C
    }
  };
  return (
    <section className="card secret" aria-label="Invitation link" data-testid="invitation-link">
      <p>
        <strong>Invitation for {invitation.email} created.</strong>{' '}
        <span data-testid="invitation-emailed" data-emailed={invitation.emailed}>
          {invitation.emailed
            ? 'We emailed them the link.'
            : 'It was not emailed (no mail server is set up, or sending failed): send them this link yourself.'}
        </span>
      </p>
      <p className="small">
        Copy it now: you won’t see it again. It works once, until <Time iso={invitation.expires_at} />.
      </p>
      <div className="secret-row">
        <input ref={ref} readOnly value={invitation.url} aria-label="Invitation link" className="mono" onFocus={(e) => e.target.select()} />
        <button type="button" className="primary" onClick={() => void copy()}>
          {copied ? 'Copied' : 'Copy link'}
        </button>
      </div>
    </section>
  );
}

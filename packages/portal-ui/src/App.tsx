import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import {
  api,
  setCsrfToken,
  setOnSessionChanged,
  setOnSessionEnded,
  setSessionToken,
  type Environment,
  type LinkSession,
  type Role,
  type Session,
  type SessionEnded,
} from './api.ts';
import { knownFrameAncestors, postToFrameAncestors, rememberFrameAncestors, useFrameResize } from './embed.ts';
import { takeFragmentToken } from './fragment.ts';
import { httpUrl } from './urls.ts';
import { forgetLocation, rememberLocation, takeRememberedLocation } from './return-to.ts';
import { Link, currentPath, navigate, usePath } from './router.tsx';
import { SessionContext, isFramed, roleAtLeast, type SessionInfo } from './session.tsx';
import { useTheme } from './theme.ts';
import { SignIn } from './pages/SignIn.tsx';
import { EndpointList } from './pages/EndpointList.tsx';
import { EndpointCreate } from './pages/EndpointCreate.tsx';
import { EndpointDetail } from './pages/EndpointDetail.tsx';
import { DeliveryPage } from './pages/DeliveryPage.tsx';
import { EventPage } from './pages/EventPage.tsx';
import { WebhooksOverview } from './pages/WebhooksOverview.tsx';
import { Settings } from './pages/Settings.tsx';
import { Team } from './pages/Team.tsx';
import { AuditLog } from './pages/AuditLog.tsx';
import { EventTypes } from './pages/EventTypes.tsx';
import { AccountPage } from './pages/Account.tsx';
import { InvitationPage } from './pages/Invitation.tsx';
import { ResetPasswordPage } from './pages/ResetPassword.tsx';
import { Brand, Crumbs, ErrorBox, Loading, Notice } from './ui.tsx';

/** Pages opened from a single-use link, without a session. */
const PUBLIC_PATHS = new Set(['/invitation', '/reset-password']);

/**
 * A link of the payment service is opened once: the same token asked for twice (React's
 * development double effects) shares one request.
 */
const opening = new Map<string, Promise<LinkSession>>();
function openLinkOnce(token: string): Promise<LinkSession> {
  let found = opening.get(token);
  if (!found) {
    found = api.openLink(token);
    opening.set(token, found);
  }
  return found;
}

export function App() {
  const path = usePath();
  const framed = useMemo(isFramed, []);
  const [session, setSession] = useState<Session | null | undefined>(() => (PUBLIC_PATHS.has(currentPath()) ? null : undefined));
  /** Why the last session ended (idle, expired), shown on the sign-in form. */
  const [ended, setEnded] = useState<SessionEnded | null>(null);
  /** An embedded session ended: the page says to open Webhooks again from the dashboard. */
  const [embeddedEnded, setEmbeddedEnded] = useState<{ returnUrl: string | null } | null>(null);
  const [launchError, setLaunchError] = useState<unknown>(null);
  const current = useRef(session);
  current.current = session;
  /** The last session said password sign-in is off here: the sign-in form says so rather than failing. */
  const signInOff = useRef(false);

  const accept = useCallback(
    (s: Session | null) => {
      if (s) {
        setCsrfToken(s.csrf_token);
        signInOff.current = !s.password_sign_in;
        if (s.kind === 'embedded' || framed) rememberFrameAncestors(s.frame_ancestors);
      }
      setSession(s);
    },
    [framed],
  );

  const refresh = useCallback(() => {
    api.session().then(accept, () => {});
  }, [accept]);

  useEffect(() => {
    setOnSessionEnded((why) => {
      const was = current.current;
      if (why.bearer || was?.kind === 'embedded' || framed) {
        setEmbeddedEnded({ returnUrl: framed ? null : httpUrl(was?.return_url ?? null) });
        postToFrameAncestors({ type: 'payhooks:session_ended' }, was?.frame_ancestors ?? knownFrameAncestors());
      } else {
        rememberLocation();
        // A first visit while signed out is not news; a session that ended under the page is.
        setEnded(why.code === 'not_signed_in' && was === undefined ? null : why);
      }
      setSession(null);
    });
    // The role changed, or the team now requires two-factor sign-in: read the session again.
    setOnSessionChanged(() => refresh());

    if (PUBLIC_PATHS.has(currentPath())) return;
    const token = currentPath() === '/launch' ? takeFragmentToken() : null;
    if (token) {
      setSessionToken(null); // a new link replaces whatever session this tab had
      openLinkOnce(token).then(
        ({ session_token, ...view }) => {
          setSessionToken(session_token);
          forgetLocation();
          accept(view);
          navigate('/webhooks/endpoints', { replace: true });
        },
        (err: unknown) => {
          setLaunchError(err);
          setSession(null);
        },
      );
      return;
    }
    api.session().then(accept, () => accept(null));
  }, [accept, refresh, framed]);

  const signedIn = useCallback(
    (s: Session) => {
      accept(s);
      setEnded(null);
      setEmbeddedEnded(null);
      const back = takeRememberedLocation();
      if (back) navigate(back, { replace: true });
      else if (PUBLIC_PATHS.has(currentPath())) navigate('/webhooks/endpoints', { replace: true });
    },
    [accept],
  );

  useTheme(session?.theme ?? null);
  const ancestors = useMemo(() => session?.frame_ancestors ?? knownFrameAncestors(), [session]);
  useFrameResize(ancestors);

  if (path === '/invitation') return <InvitationPage onSignedIn={signedIn} />;
  if (path === '/reset-password') return <ResetPasswordPage />;
  if (launchError)
    return (
      <main className="center embedded-page">
        <div className="card signin" data-testid="link-failed">
          <h1>This link can’t be opened</h1>
          <ErrorBox error={launchError} />
        </div>
      </main>
    );
  if (embeddedEnded || (session === null && framed)) return <EmbeddedEnded returnUrl={embeddedEnded?.returnUrl ?? null} />;
  if (session === undefined)
    return (
      <main className="center">
        <Loading />
      </main>
    );
  if (session === null) return <SignIn reason={ended?.message ?? null} off={signInOff.current} onSignedIn={signedIn} />;
  return (
    <Shell
      session={session}
      embedded={session.kind === 'embedded' || framed}
      framed={framed}
      path={path}
      accept={accept}
      refresh={refresh}
      onSignedOut={() => {
        forgetLocation();
        setEnded(null);
        accept(null);
        navigate('/', { replace: true });
      }}
    />
  );
}

function EmbeddedEnded({ returnUrl }: { returnUrl: string | null }) {
  return (
    <main className="center embedded-page">
      <div className="card signin" data-testid="session-ended">
        <h1>Session ended</h1>
        <p role="status">Your session has ended. Open Webhooks again from your dashboard.</p>
        {returnUrl && (
          <p>
            <a href={returnUrl}>Back to dashboard</a>
          </p>
        )}
      </div>
    </main>
  );
}

interface NavItem {
  to: string;
  label: string;
  current: boolean;
  sub?: boolean;
}

/** What the session may open: the side nav of a standalone page, the tabs of an embedded one. */
function navItems(session: Session, path: string, embedded: boolean): NavItem[] {
  const admin = roleAtLeast(session.role, 'admin');
  const account: NavItem = { to: '/account', label: 'Account', current: path === '/account' };
  if (session.needs_two_factor_setup) return [account];
  const items: NavItem[] = [];
  if (embedded) {
    items.push({
      to: '/webhooks/endpoints',
      label: 'Endpoints',
      current: path.startsWith('/webhooks') && path !== '/webhooks/event-types',
    });
  } else {
    items.push({ to: '/webhooks', label: 'Webhooks', current: path === '/webhooks' });
    items.push({ to: '/webhooks/endpoints', label: 'Endpoints', current: path.startsWith('/webhooks/endpoints'), sub: true });
  }
  items.push({ to: '/webhooks/event-types', label: 'Event types', current: path === '/webhooks/event-types', sub: !embedded });
  if (admin) items.push({ to: '/audit', label: 'Audit log', current: path === '/audit' });
  if (admin && session.password_sign_in && !embedded) items.push({ to: '/team', label: 'Team', current: path === '/team' });
  if (admin) items.push({ to: '/settings', label: 'Settings', current: path === '/settings' });
  if (session.kind === 'password') items.push(account);
  return items;
}

function Shell({
  session,
  embedded,
  framed,
  path,
  accept,
  refresh,
  onSignedOut,
}: {
  session: Session;
  embedded: boolean;
  framed: boolean;
  path: string;
  accept: (s: Session | null) => void;
  refresh: () => void;
  onSignedOut: () => void;
}) {
  const info = useMemo<SessionInfo>(
    () => ({
      session,
      embedded,
      can: (needed: Role) => roleAtLeast(session.role, needed),
      onThemeChange: (theme) => accept({ ...session, theme }),
      refresh,
    }),
    [session, embedded, accept, refresh],
  );
  const items = navItems(session, path, embedded);
  const envName = session.environment === 'live' ? 'Live' : 'Sandbox';

  const switchTo = async (environment: Environment) => {
    if (environment === session.environment) return;
    accept(await api.switchEnvironment(environment));
    // Ids belong to one environment: go back to the list of the new one.
    navigate('/webhooks/endpoints');
  };
  const signOut = async () => {
    await api.signOut().catch(() => {});
    onSignedOut();
  };

  if (embedded) {
    // Top-level (not in the dashboard's frame): a way back to the dashboard that sent the user here.
    const back = framed ? null : httpUrl(session.return_url);
    return (
      <SessionContext.Provider value={info}>
        <div className={`shell embedded env-${session.environment}`}>
          <header className="embed-head">
            <Brand session={session} />
            <span className={`badge env-${session.environment}`} data-environment={session.environment} title="Environment">
              {envName}
            </span>
            <span className="spacer" />
            {back && (
              <a href={back} className="back-link">
                <span aria-hidden="true">← </span>Back to dashboard
              </a>
            )}
          </header>
          {items.length > 1 && (
            <nav className="tabs" aria-label="Sections">
              {items.map((item) => (
                <Link key={item.to} to={item.to} aria-current={item.current ? 'page' : undefined}>
                  {item.label}
                </Link>
              ))}
            </nav>
          )}
          <main className="content">
            <Route path={path} session={session} />
          </main>
        </div>
      </SessionContext.Provider>
    );
  }

  return (
    <SessionContext.Provider value={info}>
      <div className={`shell env-${session.environment}`}>
        <header className="topbar">
          <Link to="/webhooks" className="brand">
            payhooks
          </Link>
          <span className="platform" title={session.platform.id}>
            <Brand session={session} />
          </span>
          {session.environment_locked ? (
            <span className={`badge env-${session.environment}`} data-environment={session.environment}>
              {envName}
            </span>
          ) : (
            // biome-ignore lint/a11y/useSemanticElements: a bar of toggle buttons, not a form; a fieldset would bring form semantics and styling
            <div className="env-switch" role="group" aria-label="Environment">
              {(['sandbox', 'live'] as const).map((env) => (
                <button
                  key={env}
                  type="button"
                  aria-pressed={session.environment === env}
                  className={session.environment === env ? 'active' : ''}
                  onClick={() => void switchTo(env)}
                >
                  {env === 'sandbox' ? 'Sandbox' : 'Live'}
                </button>
              ))}
            </div>
          )}
          <span className="spacer" />
          <span className="user">{session.user.email ?? session.user.name ?? session.user.id}</span>
          <span className="badge role" data-role={session.role}>
            {ROLE_NAMES[session.role]}
          </span>
          <button type="button" className="link-button" onClick={() => void signOut()}>
            Sign out
          </button>
        </header>
        {session.environment === 'sandbox' && <div className="env-banner">Sandbox: test data only. Switch to Live for real payments.</div>}
        <div className="layout">
          <nav className="sidenav" aria-label="Main">
            {items.map((item) => (
              <Link key={item.to} to={item.to} className={item.sub ? 'sub' : undefined} aria-current={item.current ? 'page' : undefined}>
                {item.label}
              </Link>
            ))}
          </nav>
          <main className="content">
            <Route path={path} session={session} />
          </main>
        </div>
      </div>
    </SessionContext.Provider>
  );
}

export const ROLE_NAMES: Record<Role, string> = { viewer: 'Viewer', developer: 'Developer', admin: 'Admin' };

function Redirect({ to }: { to: string }) {
  useEffect(() => navigate(to, { replace: true }), [to]);
  return null;
}

/** A page the session's role (or kind) does not reach: said plainly, rather than a form that can only fail. */
function NotAvailable({ title, children }: { title: string; children: string }) {
  return (
    <section>
      <Crumbs items={[{ label: 'Webhooks', to: '/webhooks' }, { label: title }]} />
      <h1>{title}</h1>
      <Notice kind="info">{children}</Notice>
      <p>
        <Link to="/webhooks/endpoints">Go to your endpoints</Link>
      </p>
    </section>
  );
}

const needs = (role: Role, session: Session) =>
  `This needs the ${role} role; you are signed in as ${session.role}. Ask an admin of your team to change your role.`;

function Route({ path, session }: { path: string; session: Session }) {
  const key = session.environment; // remount pages when the environment changes
  const at = (role: Role) => roleAtLeast(session.role, role);
  if (session.needs_two_factor_setup && path !== '/account') return <Redirect to="/account" />;
  if (path === '/launch') return <Redirect to="/webhooks/endpoints" />;
  if (path === '/' || path === '/webhooks/') return <Redirect to="/webhooks" />;
  if (path === '/webhooks') return <WebhooksOverview key={key} />;
  if (path === '/webhooks/endpoints') return <EndpointList key={key} />;
  if (path === '/webhooks/event-types') return <EventTypes key={key} />;
  if (path === '/settings') return at('admin') ? <Settings /> : <NotAvailable title="Settings">{needs('admin', session)}</NotAvailable>;
  if (path === '/audit') return at('admin') ? <AuditLog /> : <NotAvailable title="Audit log">{needs('admin', session)}</NotAvailable>;
  if (path === '/team') {
    if (!session.password_sign_in)
      return <NotAvailable title="Team">Your team’s accounts are managed in your payment service’s dashboard.</NotAvailable>;
    return at('admin') ? <Team /> : <NotAvailable title="Team">{needs('admin', session)}</NotAvailable>;
  }
  if (path === '/account')
    return session.kind === 'password' ? (
      <AccountPage />
    ) : (
      <NotAvailable title="Account">You signed in through your payment service’s dashboard: manage your account there.</NotAvailable>
    );
  if (path === '/webhooks/endpoints/new')
    return at('developer') ? (
      <EndpointCreate key={key} environment={session.environment} />
    ) : (
      <NotAvailable title="Add an endpoint">{needs('developer', session)}</NotAvailable>
    );
  const endpoint = /^\/webhooks\/endpoints\/([^/]+)$/.exec(path)?.[1];
  if (endpoint !== undefined)
    return <EndpointDetail key={`${key}${endpoint}`} id={decodeURIComponent(endpoint)} environment={session.environment} />;
  const delivery = /^\/webhooks\/deliveries\/([^/]+)$/.exec(path)?.[1];
  if (delivery !== undefined) return <DeliveryPage key={`${key}${delivery}`} id={decodeURIComponent(delivery)} />;
  const event = /^\/webhooks\/events\/([^/]+)$/.exec(path)?.[1];
  if (event !== undefined) return <EventPage key={`${key}${event}`} id={decodeURIComponent(event)} />;
  return (
    <section>
      <h1>Page not found</h1>
      <p>
        <Link to="/webhooks/endpoints">Go to your endpoints</Link>
      </p>
    </section>
  );
}

import { useCallback, useEffect, useState } from 'react';
import { api, setOnSignedOut, setCsrfToken, type Environment, type Session } from './api.ts';
import { Link, navigate, usePath } from './router.tsx';
import { SignIn } from './pages/SignIn.tsx';
import { EndpointList } from './pages/EndpointList.tsx';
import { EndpointCreate } from './pages/EndpointCreate.tsx';
import { EndpointDetail } from './pages/EndpointDetail.tsx';
import { DeliveryPage } from './pages/DeliveryPage.tsx';
import { EventPage } from './pages/EventPage.tsx';
import { WebhooksOverview } from './pages/WebhooksOverview.tsx';
import { Settings } from './pages/Settings.tsx';
import { Loading } from './ui.tsx';

export function App() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const path = usePath();

  const accept = useCallback((s: Session | null) => {
    if (s) setCsrfToken(s.csrf_token);
    setSession(s);
  }, []);

  useEffect(() => {
    setOnSignedOut(() => setSession(null));
    api.session().then(accept, () => accept(null));
  }, [accept]);

  if (session === undefined)
    return (
      <main className="center">
        <Loading />
      </main>
    );
  if (session === null) return <SignIn onSignedIn={accept} />;

  const switchTo = async (environment: Environment) => {
    if (environment === session.environment) return;
    accept(await api.switchEnvironment(environment));
    // Ids belong to one environment: go back to the list of the new one.
    navigate('/webhooks/endpoints');
  };
  const signOut = async () => {
    await api.signOut().catch(() => {});
    accept(null);
    navigate('/', { replace: true });
  };

  return (
    <div className={`shell env-${session.environment}`}>
      <header className="topbar">
        <Link to="/webhooks" className="brand">
          payhooks
        </Link>
        <span className="platform" title={session.platform.id}>
          {session.platform.name}
        </span>
        {/* biome-ignore lint/a11y/useSemanticElements: a bar of toggle buttons, not a form; a fieldset would bring form semantics and styling */}
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
        <span className="spacer" />
        <span className="user">{session.user.email}</span>
        <button type="button" className="link-button" onClick={() => void signOut()}>
          Sign out
        </button>
      </header>
      {session.environment === 'sandbox' && <div className="env-banner">Sandbox: test data only. Switch to Live for real payments.</div>}
      <div className="layout">
        <nav className="sidenav" aria-label="Main">
          <Link to="/webhooks" aria-current={path === '/webhooks' ? 'page' : undefined}>
            Webhooks
          </Link>
          <Link to="/webhooks/endpoints" className="sub" aria-current={path.startsWith('/webhooks/endpoints') ? 'page' : undefined}>
            Endpoints
          </Link>
          <Link to="/settings" aria-current={path === '/settings' ? 'page' : undefined}>
            Settings
          </Link>
        </nav>
        <main className="content">
          <Route path={path} session={session} />
        </main>
      </div>
    </div>
  );
}

function Redirect({ to }: { to: string }) {
  useEffect(() => navigate(to, { replace: true }), [to]);
  return null;
}

function Route({ path, session }: { path: string; session: Session }) {
  const key = session.environment; // remount pages when the environment changes
  if (path === '/' || path === '/webhooks/') return <Redirect to="/webhooks" />;
  if (path === '/webhooks') return <WebhooksOverview key={key} />;
  if (path === '/webhooks/endpoints') return <EndpointList key={key} />;
  if (path === '/settings') return <Settings />;
  if (path === '/webhooks/endpoints/new') return <EndpointCreate key={key} environment={session.environment} />;
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

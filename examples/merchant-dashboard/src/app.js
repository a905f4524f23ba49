// A payment service's own Merchant Portal, in miniature: its own sign-in and users, and a
// Webhooks tab that is payhooks' portal in a frame. The backend asks payhooks for a single-use
// link per page view (POST /internal/v1/portal_sessions, with the internal token), naming the
// signed-in user and the payhooks role their dashboard role maps to; payhooks never sees a
// dashboard password.
import { randomBytes } from 'node:crypto';
import express from 'express';
import { payhooksClient } from './payhooks.js';
import { DEMO_USERS, userStore } from './users.js';
import { homePage, loginPage, webhooksPage } from './views.js';

const PUBLIC_DIR = new URL('../public/', import.meta.url).pathname;
const COOKIE = 'dash_session';

/**
 * @param {{
 *   payhooksUrl: string,
 *   internalToken: string,
 *   merchantId: string,
 *   publicUrl: string,
 *   users?: typeof DEMO_USERS,
 * }} options
 */
export function createDashboard({ payhooksUrl, internalToken, merchantId, publicUrl, users = DEMO_USERS }) {
  const payhooks = payhooksClient({ payhooksUrl, internalToken });
  const payhooksOrigin = new URL(payhooksUrl).origin;
  const accounts = userStore(users);
  /** The dashboard's own sessions (in memory for the example). */
  const sessions = new Map();
  const app = express();
  app.disable('x-powered-by');

  app.use((_req, res, next) => {
    // The frame may show payhooks' origin only; scripts and styles are our own files.
    res.set(
      'content-security-policy',
      `default-src 'self'; frame-src ${payhooksOrigin}; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'`,
    );
    next();
  });
  app.use('/static', express.static(PUBLIC_DIR));
  app.use(express.urlencoded({ extended: false }));

  const cookieOf = (req) => /(?:^|;\s*)dash_session=([A-Za-z0-9_-]+)/.exec(req.headers.cookie ?? '')?.[1];
  const userOf = (req) => accounts.byId(sessions.get(cookieOf(req)) ?? '');
  const requireUser = (req, res, next) => {
    req.user = userOf(req);
    if (!req.user) return res.redirect(303, '/login');
    next();
  };

  app.get('/login', (_req, res) => res.type('html').send(loginPage()));
  app.post('/login', (req, res) => {
    const user = accounts.verify(req.body.email, req.body.password);
    if (!user) return res.status(401).type('html').send(loginPage('Incorrect email or password.'));
    const id = randomBytes(24).toString('base64url');
    sessions.set(id, user.id);
    res.cookie(COOKIE, id, { httpOnly: true, sameSite: 'lax', path: '/' });
    res.redirect(303, '/');
  });
  app.post('/logout', (req, res) => {
    sessions.delete(cookieOf(req));
    res.clearCookie(COOKIE, { path: '/' });
    res.redirect(303, '/login');
  });

  app.get('/', requireUser, (req, res) => res.type('html').send(homePage(req.user)));

  const environmentOf = (req) => (req.query.mode === 'live' ? 'live' : 'sandbox');
  const linkFor = (req) =>
    payhooks.portalLink({
      merchantId,
      environment: environmentOf(req),
      user: req.user,
      returnUrl: `${publicUrl.replace(/\/+$/, '')}/webhooks`,
    });

  app.get('/webhooks', requireUser, async (req, res, next) => {
    try {
      const link = await linkFor(req);
      // The link is single-use: never cache a page that carries one.
      res
        .set('cache-control', 'no-store')
        .type('html')
        .send(webhooksPage(req.user, link.url, payhooksOrigin, environmentOf(req)));
    } catch (error) {
      next(error);
    }
  });

  // A fresh link when payhooks says its session ended (dashboard.js). POST: never prefetched or cached.
  app.post('/webhooks/link', requireUser, async (req, res, next) => {
    try {
      res.set('cache-control', 'no-store').json({ url: (await linkFor(req)).url });
    } catch (error) {
      next(error);
    }
  });

  return app;
}

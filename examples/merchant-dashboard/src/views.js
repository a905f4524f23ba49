import escapeHtml from 'escape-html';

/** Tagged template: every interpolated value is escaped, except values already made by `html`. */
class Safe {
  constructor(text) {
    this.text = text;
  }
  toString() {
    return this.text;
  }
}
export const html = (strings, ...values) =>
  new Safe(strings.reduce((out, s, i) => out + s + (i < values.length ? render(values[i]) : ''), ''));
const render = (v) =>
  v instanceof Safe ? v.text : Array.isArray(v) ? v.map(render).join('') : v === null || v === undefined ? '' : escapeHtml(String(v));

function layout(title, body, user) {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Acme Payments</title>
<link rel="stylesheet" href="/static/dashboard.css">
</head>
<body>
<header class="bar">
  <span class="logo">Acme Payments</span>
  ${
    user
      ? html`<nav aria-label="Dashboard"><a href="/">Payments</a><a href="/webhooks" id="webhooks-tab">Webhooks</a></nav>
  <span class="who">${user.name} (${user.role})</span>
  <form method="post" action="/logout"><button type="submit">Sign out</button></form>`
      : ''
  }
</header>
<main>${body}</main>
</body>
</html>`.text;
}

export const loginPage = (error) =>
  layout(
    'Sign in',
    html`<form class="card" method="post" action="/login">
  <h1>Sign in to Acme Payments</h1>
  ${error ? html`<p class="error" role="alert">${error}</p>` : ''}
  <label for="email">Email</label><input id="email" name="email" type="email" required autocomplete="username">
  <label for="password">Password</label><input id="password" name="password" type="password" required autocomplete="current-password">
  <button type="submit">Sign in</button>
</form>`,
  );

export const homePage = (user) =>
  layout('Payments', html`<h1>Payments</h1><p>Signed in as ${user.email}. Webhooks are under the Webhooks tab.</p>`, user);

/**
 * The Webhooks tab: payhooks' portal in a frame, opened with a single-use link made for this
 * page view. dashboard.js fits the frame to the height the portal reports.
 */
export const webhooksPage = (user, link, payhooksOrigin, environment) =>
  layout(
    'Webhooks',
    html`<div class="tab-head"><h1>Webhooks</h1>
  <a class="mode" href="/webhooks?mode=${environment === 'live' ? 'test' : 'live'}">${environment === 'live' ? 'Viewing live data · switch to test mode' : 'Test mode · switch to live'}</a></div>
<iframe id="payhooks" title="Webhooks" src="${link}" data-payhooks-origin="${payhooksOrigin}" data-environment="${environment}"></iframe>
<script src="/static/dashboard.js"></script>`,
    user,
  );
